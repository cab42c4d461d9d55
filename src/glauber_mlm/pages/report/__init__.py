"""Each result page's figures, display tables and prose, one module per page, imported only by its page (so a page's
cache key covers only its own), named for the page's topic: `exact_models` (00), `rectangle` (01),
`high_temperature` (02), `traps` (03), `basin` (04), `influence_margin` (05), `mixing_diagnostics` (06),
`run_length` (07), `exact_answers` (08). Nothing here decides a check: the rules, the `Check` list and
`run.conclude` stay in the notebooks, where the rules record hashes them.
"""
