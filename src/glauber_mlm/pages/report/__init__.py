"""Each result page's figures, display tables and prose, one module per page, imported only by its page (so a page's
cache key covers only its own), named for the page's topic: `exact_models` (00), `rectangle` (01),
`high_temperature` (02), `traps` (03), `basin` (04), `influence_margin` (05), `mixing_diagnostics` (06),
`run_length` (07), `exact_answers` (08). Nothing here decides a check: the rules, the `Check` list and
`run.conclude` stay in the notebooks, where the rules record hashes them. `glue_text` glues a page's values for
its prose, so that the prose names values, not variables.
"""


def glue_text(**values) -> None:
    """Glue each value for the prose: the page's design (sizes, lags, temperatures) for its {glue:text} roles, and
    its findings (Markdown) for its {glue:md} roles and blocks."""
    from myst_nb import glue

    for key, value in values.items():
        glue(key, value, display=False)
