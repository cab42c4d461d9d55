"""The intro's first screen (every claim of the paper with its verdict, its number and what would decide it) and
plotly.js loaded only by the pages that draw a Plotly figure (issue 38, items 1 and 4)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
from docutils import nodes
import pytest

from test_seal import sealed

CLAIM_01 = "MLM conditionals are incompatible: ρ is far above float noise on most rectangles (paper Fig 5)."
PLANTED = {
    "01_rectangles": dict(verdict="reproduced", question="paper", claim=CLAIM_01, deciding=dict(
        check="the certified fraction exceeds one half: its 95% lower bound above 0.5", value="99.5%",
        outcome="pass", core=True, reason="pass: false-pass bound ≤ 0.10", power=1.0, size=0.0,
        false_pass_upper=0.095, false_fail_upper=0.095, to_decide="")),
    "02_growth": dict(verdict="inconclusive at this scale", question="paper",
                      claim="With small influence chains meet in O(n log n) steps; at low temperature slowly.",
                      deciding=dict(check="coupling times grow more slowly than n¹·⁵: the curvature's bound below",
                                    value="0.797", outcome="inconclusive", core=True, power=0.33, size=0.05,
                                    reason="rule says fail, but the false-fail rate's one-sided 95 % upper bound is "
                                           "0.78 (27 of 40 truth replicates did not pass); the design must change",
                                    false_pass_upper=0.07, false_fail_upper=0.78,
                                    to_decide="decisive at 192 pairs per length (power 0.9 (180 of 200), size 0.0 (0 "
                                              "of 200); false-pass ≤ 0.01, false-fail ≤ 0.14 (one-sided 95 %))")),
    "03_traps": dict(verdict="reproduced", question="paper", claim="Chains are metastable at low temperature."),
    "04_basin": dict(verdict="not reproduced", question="paper", claim="Political content is a basin.",
                     deciding=dict(check="chains from elsewhere are drawn in", value="+0.01 [-0.09, +0.12]",
                                   outcome="fail", core=True, reason="fail: false-fail bound ≤ 0.20", power=1.0,
                                   size=0.015, false_pass_upper=0.05, false_fail_upper=0.07, to_decide="")),
    "06_mixed": dict(verdict="passes", question="book", claim="(The book's own question.) R̂ and coupling agree; more.",
                     deciding=dict(check="R̂ and coupling agree at 1.01", value="τ = 1: 1.17", outcome="pass",
                                   core=True, reason="pass: false-pass bound ≤ 0.10", power=0.9, size=0.0,
                                   false_pass_upper=0.06, false_fail_upper=0.19, to_decide="")),
}


def plant(tmp_path: Path, broken: str = "03_traps") -> Path:
    """Each page of PLANTED as a finished run leaves it (sealed), its notebook's source in `<tmp_path>/notebooks`;
    the page `broken` has its result.json edited after the seal. Returns the notebooks folder."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name, result in PLANTED.items():
        page = tmp_path / "book" / "notebooks" / name
        page.mkdir(parents=True)
        (page / "result.json").write_text(json.dumps(dict(build="`cpu` profile · model the embedded minilm-mlm",
                                                          **result)))
        sealed(page)
        (notebooks / f"{name}.py").write_text(f'run.conclude(checks, question="{result["question"]}")\n')
    (tmp_path / "book" / "notebooks" / broken / "result.json").write_text(json.dumps({"verdict": "reproduced"}))
    return notebooks


def first_screen(tmp_path: Path) -> list[str]:
    from glauber_mlm.book.first_screen import FIRST_SCREEN, write_first_screen

    notebooks = plant(tmp_path)
    write_first_screen(tmp_path, notebooks)
    return (tmp_path / FIRST_SCREEN).read_text().splitlines()


def test_the_first_screen_gives_every_paper_claim_its_mark_word_number_and_what_would_decide_it(tmp_path):
    lines = first_screen(tmp_path)
    assert lines[2] == "| verdict, `cpu` profile | the paper's claim | the number it rests on |"
    rows = [line for line in lines if line.startswith("| <span ")]
    assert [r.split('<a href="')[1].split('"')[0] for r in rows] == [
        f"notebooks/{n}.html#result-{n[:2]}" for n in ("01_rectangles", "02_growth", "03_traps", "04_basin", "06_mixed")]
    assert rows[0] == ('| <span class="verdict-mark positive">✓&nbsp;reproduced</span> on minilm-mlm at `cpu` scale | '
                       '<a href="notebooks/01_rectangles.html#result-01">01 · rectangles</a><br>MLM conditionals are '
                       'incompatible | the certified fraction exceeds one half: **99.5%** — passes (false-pass risk ≤ '
                       '10 %) |')
    assert rows[1].startswith('| <span class="verdict-mark open">?&nbsp;inconclusive</span> on minilm-mlm at `cpu` '
                              'scale | ')
    assert rows[1].endswith('</a><br>With small influence chains meet in O(n log n) steps | coupling times grow more '
                            'slowly than n¹·⁵: **0.797** — the rule says fail, but its false-fail risk may reach 78 % '
                            '(limit 20 %)<br>*To decide:* 192 pairs per length |')
    assert rows[3].startswith('| <span class="verdict-mark negative">✗&nbsp;not reproduced</span> on minilm-mlm at ')
    assert rows[3].endswith('chains from elsewhere are drawn in: **+0.01 [-0.09, +0.12]** — fails (false-fail risk '
                            '≤ 7 %) |')


def test_a_page_whose_seal_is_broken_is_not_shown_and_the_books_own_checks_stand_apart(tmp_path):
    lines = first_screen(tmp_path)
    traps = next(line for line in lines if "03_traps" in line)
    assert traps == ('| <span class="verdict-mark other">·&nbsp;not shown</span> | <a href="notebooks/03_traps.html'
                     '#result-03">03 · traps</a> | 03_traps/result.json was edited after it was published |')
    apart = lines.index("The book's own checks, which test its tools and questions rather than the paper:")
    assert lines.index(traps) < apart < lines.index(next(line for line in lines if "06_mixed" in line))
    assert lines[apart + 2] == "| verdict, `cpu` profile | the book's own check | the number it rests on |"
    mixed = next(line for line in lines if "06_mixed" in line)
    assert mixed.startswith('| <span class="verdict-mark positive">✓&nbsp;passes</span> on minilm-mlm at `cpu` scale | '
                            '<a href="notebooks/06_mixed.html#result-06">06 · mixed</a><br>R̂ and coupling agree | ')
    assert lines[-1].startswith("*The rule in force:* a check passes decisively when")


def test_a_not_shown_book_page_stands_with_the_books_own_checks(tmp_path):
    from glauber_mlm.book.first_screen import FIRST_SCREEN, write_first_screen

    notebooks = plant(tmp_path, broken="06_mixed")
    write_first_screen(tmp_path, notebooks)
    lines = (tmp_path / FIRST_SCREEN).read_text().splitlines()
    assert "06_mixed/result.json was edited" in [line for line in lines if line.startswith("| <span")][-1]


def sphinx_build(src: Path, out: Path) -> Path:
    """`sphinx-build -W -b html src out` in this process (its nodes and directives registered only for this build).

    Sphinx's default `source_suffix` is one dict shared by every build in a process, and an extension that registers
    a parser (myst_nb: ".md" → "myst-nb") writes into it; a fresh dict per build keeps one build's parsers out of the
    next."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    with docutils_namespace():
        Sphinx(str(src), str(src), str(out), str(out.parent / "doctrees"), "html", warningiserror=True,
               status=None, confoverrides={"source_suffix": {".rst": "restructuredtext"}}).build()
    return out


def test_a_sphinx_build_writes_the_first_screen_before_it_reads_the_intro(tmp_path, monkeypatch):
    """The extension writes book/_generated/first_screen.md when the build starts, from the pages there now, and the
    intro includes it (-W: no warning)."""
    import glauber_mlm.book.first_screen as module

    monkeypatch.setattr(module, "NOTEBOOKS", plant(tmp_path))
    (tmp_path / "conf.py").write_text('extensions = ["myst_nb", "glauber_mlm.book.first_screen"]\n'
                                      'nb_execution_mode = "off"\nhtml_theme = "basic"\nroot_doc = "book/intro"\n'
                                      'exclude_patterns = ["book/_generated", "book/notebooks", "notebooks"]\n')
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\n```{include} _generated/first_screen.md\n```\n")
    html = (sphinx_build(tmp_path, tmp_path / "html") / "book" / "intro.html").read_text()
    assert html.count('class="verdict-mark') == 5 and '<span class="verdict-mark negative">✗\xa0not reproduced' in html


def notebook(html: str | None) -> nbformat.NotebookNode:
    """A one-cell executed notebook; its output is `html` (text/html) or, with None, a printed line."""
    output = (nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "<figure>"})
              if html is not None else nbformat.v4.new_output("stream", name="stdout", text="no figure\n"))
    cell = nbformat.v4.new_code_cell("show()", outputs=[output], execution_count=1)
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page"), cell],
                                    metadata={"language_info": {"name": "python"}})


def test_plotly_js_and_a_figures_data_load_only_when_the_reader_can_see_it(tmp_path):
    """A Sphinx build with -W of two executed notebooks, as Jupyter Book renders them (myst-nb): the page with a Plotly
    figure loads no plotly.js in its head and carries no drawing script; an inert one names the figure's own file
    (which holds the drawing code) and plotly.js, both in the build, for _static/page_folds.js to load when the figure
    is seen; the plain page has neither."""
    import plotly.graph_objects as go

    from glauber_mlm.book.plotly_pages import DEFERRED, DRAWS

    figure = go.Figure(go.Scatter(x=[0, 1], y=[1, 0])).to_html(include_plotlyjs=False, full_html=False)
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["myst_nb", "glauber_mlm.book.plotly_pages"]\n'
                                 'nb_execution_mode = "off"\nhtml_theme = "basic"\n')
    (src / "index.md").write_text("# Pages\n\n```{toctree}\nfigure\nplain\n```\n")
    nbformat.write(notebook(figure), src / "figure.ipynb")
    nbformat.write(notebook(None), src / "plain.ipynb")
    out = sphinx_build(src, tmp_path / "html")
    page = (out / "figure.html").read_text()
    assert "plotly.min.js" not in page.split("</head>")[0] and DRAWS not in page
    deferred = re.findall(rf'<script type="{DEFERRED}" data-src="([^"]+)" data-plotly="([^"]+)"></script>', page)
    assert len(deferred) == 1
    code, plotly_js = (out / deferred[0][0]).read_text(), out / deferred[0][1]
    assert DRAWS in code and plotly_js == out / "_static" / "plotly.min.js" and plotly_js.stat().st_size > 1_000_000
    plain = (out / "plain.html").read_text()
    assert DEFERRED not in plain and "plotly.min.js" not in plain and "plotly.min.js" not in (out / "index.html").read_text()


def test_what_would_decide_an_open_check_is_its_design_without_the_calibrations_numbers():
    from glauber_mlm.book.first_screen import to_decide

    assert to_decide(dict(outcome="inconclusive", to_decide="not decisive up to 8 chains (power 0.49 (98 of 200), "
                          "size 0.00 (0 of 200); false-pass ≤ 0.01, false-fail ≤ 0.57 (one-sided 95 %))")) == (
        "<br>*To decide:* more than 8 chains")
    assert to_decide(dict(outcome="inconclusive", to_decide="longer chains: at τ = 0.1 they remember their start")) == (
        "<br>*To decide:* longer chains")
    assert to_decide(dict(outcome="pass", to_decide="")) == ""
    assert to_decide(dict(outcome="inconclusive", to_decide="a grid with a slow τ at 4800 steps (the coupling regimes "
                          "here: τ = 1 between, τ = 1.5 fast)")) == "<br>*To decide:* a grid with a slow τ at 4800 steps"
    assert to_decide(dict(outcome="inconclusive", to_decide="decisive at 302 draws per chain (power 0.99 (198 of 200))",
                          cost="about 16 min here")) == "<br>*To decide:* 302 draws per chain (about 16 min here)"


def test_a_deciding_design_is_priced_by_the_pages_own_plan_from_its_measured_time(tmp_path):
    """06's plan scales with its steps: twice the steps is twice the build's time; a design that changes only
    exact-model work (08's growth runs) has no forward FLOPs to scale by and is not priced."""
    from glauber_mlm.book import deciding_cost

    page = tmp_path / "06_has_my_chain_mixed"
    page.mkdir()
    parameters = {"model": None, "device": None, "seed": 0, "passages": "embedded", "length": 8,
                  "temperatures": [1.0, 1.5, 3.0], "chains": 8, "steps": 1200, "pll_every": 8, "pairs": 8,
                  "mh_chains": 4, "mh_pairs": 4, "mh_lengths": [4, 8, 16]}
    (page / "provenance.json").write_text(json.dumps({"wall_time_s": 300.0, "parameters": parameters}))
    now, _ = deciding_cost.counted_work(page.name, parameters)
    longer, _ = deciding_cost.counted_work(page.name, {**parameters, "steps": 2400})
    cost = deciding_cost.deciding_cost(page.name, page, {"steps": 2400})
    assert cost["ratio"] == pytest.approx(longer / now) and cost["seconds"] == pytest.approx(300.0 * longer / now)
    assert 1.5 < cost["ratio"] <= 2.0  # the R̂ chains double; what does not grow with the steps does not
    assert deciding_cost.describe(cost).startswith("about ") and "on the machine that built this page" in (
        deciding_cost.describe(cost))
    assert deciding_cost.deciding_cost(page.name, tmp_path / "no-page", {"steps": 2400}) is None
    exact = tmp_path / "08_exact_answers"
    exact.mkdir()
    p08 = dict(model=None, device=None, seed=0, passages="embedded", documents=4, length=16, candidates=2,
               sizes=[2, 3, 4, 6, 8, 10], temperatures=[0.25, 0.5, 1.0, 2.0, 4.0], eps=0.25, coupling_size=6,
               pairs=400, budget=2000, replicates=200, lag=16, lag_temperature=1.0, growth_temperatures=[2.0, 4.0],
               growth_pairs=48, growth_runs=200)
    (exact / "provenance.json").write_text(json.dumps({"wall_time_s": 100.0, "parameters": p08}))
    assert deciding_cost.deciding_cost(exact.name, exact, {"growth_runs": 400}) is None


def test_a_long_claim_is_cut_at_a_word_with_an_ellipsis():
    from glauber_mlm.book.first_screen import HEADLINE, headline

    claim = ("On the embedded model's own Glauber chain, restricted to its top two candidates at n free sites of real "
             "passages and enumerated, the mixing time is exact.")
    shown = headline(claim)
    assert shown.endswith(" …") and len(shown) <= HEADLINE + 2 and claim.startswith(shown[:-2])
    assert headline("(The book's own question.) R̂ and coupling agree; more.") == "R̂ and coupling agree"


def test_the_check_is_named_by_its_statement_without_its_rule():
    from glauber_mlm.book.first_screen import statement

    assert statement("R̂ and coupling agree at threshold 1.01: R̂ ≥ 1.01 at every slow τ") == (
        "R̂ and coupling agree at threshold 1.01")
    assert statement("random scan: the sampler's TV to π lies within its null (p ≥ 0.05)") == (
        "random scan: the sampler's TV to π lies within its null (p ≥ 0.05)")
    assert statement("the theorem's prediction: every cell is fast: all of them") == (
        "the theorem's prediction: every cell is fast")


def test_the_first_screen_says_what_its_verdicts_are_about_and_labels_its_number(tmp_path):
    """Issue 42 item 6 and issue 44 item 4: the model (read from its metrics.json), the scale against the paper
    profile's (from provenance.json and the notebook's PROFILES), the models not run; each number as "value — what
    it is — threshold" from checks.csv; the rules' provenance from rules.json; 07's L-lag rule as 08 reads it."""
    from glauber_mlm.book.first_screen import EMBEDDED, FIRST_SCREEN, write_first_screen

    notebooks = plant(tmp_path)
    (notebooks / "02_growth.py").write_text(
        'PROFILES = {"cpu": dict(model=None, budget=500, pairs=8, lengths=[4, 8]), '
        '"paper": dict(model="bert-base-uncased", budget=10000, pairs=20, lengths=[8, 64])}\n'
        'run.conclude(checks, question="paper")\n')
    from glauber_mlm import contract
    from glauber_mlm.book import publish

    page = tmp_path / "book" / "notebooks" / "02_growth"
    deciding = PLANTED["02_growth"]["deciding"]
    pd.DataFrame([dict(check=deciding["check"], statistic="upper bound (pairs resampled) of the exponent: the slope",
                       threshold="passes when below 1.5", value="0.797", outcome="inconclusive", rule_says="fail",
                       core=True)]).to_csv(page / "checks.csv", index=False)
    contract.write_provenance(page, {**{key: "-" for key in contract.REQUIRED}, "profile": "cpu", "scale": 1.0,
                                     "parameters": dict(model=None, budget=3000, pairs=48, lengths=[4, 8, 128]),
                                     "versions": {}, "wall_time_s": 1.0, "run_id": "r1"})
    publish.seal(page.with_suffix(".ipynb"), page, {"inputs": {}})
    (notebooks / "rules.json").write_text(json.dumps({"02_growth": [
        dict(date="2026-12-01", change="first", builds_committed=True),
        dict(date="2026-12-03", change="new rule", builds_committed=True, outcome_before="fails: at τ = 5"),
        dict(date="2026-12-04", change="display only: words", builds_committed=True, display_only=True)]}))
    write_first_screen(tmp_path, notebooks)
    lines = (tmp_path / FIRST_SCREEN).read_text().splitlines()
    metrics = json.loads((EMBEDDED / "minilm-mlm" / "metrics.json").read_text())
    assert lines[0].startswith(f"**What these verdicts are about:** minilm-mlm ({metrics['layers']} layers, "
                               f"{metrics['parameters'] / 1e6:.1f} M parameters, trained "
                               f"{metrics['train_minutes']:.0f} minutes")
    assert f"{100 * metrics['top1']:.0f} % top-1 on held-out masked words), at the `cpu` profile." in lines[0]
    assert ("The paper's claims ran 3,000 steps per chain or coupling budget, 48 chains or coupled pairs per cell and "
            "4–128 tokens per sequence, where the `paper` profile runs 10,000, 20 and 8–64.") in lines[0]
    assert lines[0].endswith("Not run: the `paper` profile's model, bert-base-uncased.")
    growth = next(line for line in lines if "02_growth.html" in line)
    assert ("coupling times grow more slowly than n¹·⁵<br>**0.797** — upper bound of the exponent — passes when below "
            "1.5: the rule says fail, but its false-fail risk may reach 78 % (limit 20 %)<br>*Rules revised after 1 "
            "outcome (2026-12-03); the outcome before: fails.*<br>*To decide:* 192 pairs per length |") in growth


def test_07s_row_links_the_reading_of_its_rule_on_the_models_own_chain():
    import pandas as pd

    from glauber_mlm.book.first_screen import elsewhere

    rows = {"08_exact_answers": pd.DataFrame([dict(check="the L-lag bound's upper end lies at or above d(t): on every "
                                                         "passage", value="-0.011", rule_says="fail",
                                                   outcome="inconclusive", core=False)])}
    assert elsewhere("07_how_long_must_i_run", rows) == (
        "<br>*On the model's own chain:* <a href=\"notebooks/08_exact_answers.html#result-08\">08</a> reads the L-lag "
        "bound's upper end lies at or above d(t): **-0.011** — the rule says fail (inconclusive; a side check)")
    assert elsewhere("07_how_long_must_i_run", {}) == "" and elsewhere("03_traps", rows) == ""


def test_an_upper_bound_above_its_limit_never_reads_as_the_limit():
    from glauber_mlm.book.first_screen import judgement

    above = judgement(dict(outcome="inconclusive", reason="rule says pass, but …", false_pass_upper=0.1014,
                           false_fail_upper=0.05))
    assert above == "the rule says pass, but its false-pass risk may reach 11 % (limit 10 %)"
    assert judgement(dict(outcome="pass", false_pass_upper=0.095, false_fail_upper=0.2)) == (
        "passes (false-pass risk ≤ 10 %)")
    assert judgement(dict(outcome="pass", false_pass_upper=0.07, false_fail_upper=0.2)) == (
        "passes (false-pass risk ≤ 7 %)")


def test_the_words_of_the_first_screen_and_the_boxes_have_glossary_entries_that_the_build_links():
    """Issue 44 item 4: every word the first screen and the result boxes use for their checks is a glossary term (or
    one of its other spellings), so that `page_links` links it on the intro and on every result page."""
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document
    from sphinx import addnodes

    from glauber_mlm.book import page_links

    terms = page_links.glossary_terms((Path(__file__).resolve().parents[1] / page_links.GLOSSARY).read_text())
    words = ["rectangle statistic", "τ*", "L-lag", "DKW", "matched null", "core checks", "side check",
             "false-pass risk", "false-fail risk", "false pass", "false fail"]
    assert set(words) <= set(terms), set(words) - set(terms)
    doc = new_document("intro", get_default_settings())
    for text in ("every cell above τ* is fast", "the one core check passes; side checks beside",
                 "the L-lag bound plus the DKW margin", "false pass / false fail (one-sided 95 % bound)"):
        doc += nodes.paragraph(text, text)
    page_links.link_glossary_terms(doc, terms)
    linked = [r.astext() for r in doc.findall(addnodes.pending_xref)]
    assert {"τ*", "L-lag", "DKW margin", "core check", "false pass", "false fail", "side checks"} <= set(linked), linked
