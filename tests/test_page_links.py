"""The result pages' build-time links, box colours and figure numbers (`glauber_mlm.book.page_links`), on small
doctrees whose answers are known by construction."""
from types import SimpleNamespace

from docutils import nodes
from sphinx import addnodes

from glauber_mlm.book import page_links
from glauber_mlm.book.parameters import REPO


def _page(*paragraphs: str) -> nodes.document:
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document

    doc = new_document("page", get_default_settings())
    for text in paragraphs:
        doc += nodes.paragraph(text, text)
    return doc


def _refs(doc: nodes.Node) -> list[tuple[str, str, str]]:
    return [(r["reftype"], r["reftarget"], r.astext()) for r in doc.findall(addnodes.pending_xref)]


def test_the_glossary_terms_are_read_from_the_book_longest_first():
    terms = page_links.glossary_terms((REPO / page_links.GLOSSARY).read_text())
    assert {"Glauber dynamics", "coupling time", "censored", "Kaplan–Meier"} <= set(terms)
    assert [len(t) for t in terms] == sorted((len(t) for t in terms), reverse=True)
    assert page_links.glossary_terms("no glossary here") == []


def test_a_term_is_linked_once_where_the_page_first_uses_it_and_never_inside_code_or_a_word():
    doc = _page("Coupling times shrink.", "The coupling time of a pair.", "Again the coupling time.")
    code = nodes.literal("coupling time", "coupling time")
    doc[0].insert(0, code)
    assert page_links.link_glossary_terms(doc, ["coupling time", "time"]) == 2
    # "Coupling times" is not the term "coupling time" (a word goes on); the code literal is left alone
    assert _refs(doc) == [("term", "coupling time", "coupling time"), ("term", "time", "time")]
    assert doc[1].astext() == "The coupling time of a pair." and code.astext() == "coupling time"
    # "time" inside the linked "coupling time" is not a first use: its first use is the third paragraph's
    assert [r.astext() for r in doc[2].findall(addnodes.pending_xref)] == ["time"]


def test_every_notebook_mention_links_to_its_page_but_not_to_itself_or_a_page_not_built():
    pages = {"02": "book/notebooks/02_high", "05": "book/notebooks/05_influence"}
    doc = _page("See notebook 02 and notebook 05, then notebook 02's table; notebook 09 is not built.",
                "This is notebook 05.")
    assert page_links.link_notebooks(doc, pages, own="05") == 2
    assert _refs(doc) == [("doc", "/book/notebooks/02_high", "notebook 02"),
                          ("doc", "/book/notebooks/02_high", "notebook 02")]
    assert doc[0].astext() == "See notebook 02 and notebook 05, then notebook 02's table; notebook 09 is not built."


def test_the_result_box_takes_the_colour_of_its_verdict():
    for verdict, kind in (("reproduced", "tip"), ("passes", "tip"), ("not reproduced", "danger"),
                          ("fails", "danger"), ("inconclusive at this scale", "warning"), ("smoke run", "note")):
        doc = _page("before")
        box = nodes.admonition(classes=["tip"], ids=["result-05"])
        other = nodes.admonition(classes=["tip"], ids=["other"])
        doc += [other, box]
        assert page_links.colour_result_box(doc, verdict)
        assert box["classes"] == [kind] and other["classes"] == ["tip"]
    assert not page_links.colour_result_box(_page("no box"), "reproduced")


def test_figures_are_numbered_per_page_in_the_order_sphinx_found_them():
    env = SimpleNamespace(toc_fignumbers={
        "book/notebooks/02_high": {"figure": {"b": (7,), "a": (6,), "c": (9,)}},
        "book/notebooks/05_influence": {"figure": {"x": (12,)}},
        "book/performance": {"figure": {"p": (1,)}},
    })
    assert page_links.number_figures_by_page(None, env) == ["book/notebooks/02_high", "book/notebooks/05_influence"]
    assert env.toc_fignumbers["book/notebooks/02_high"]["figure"] == {"a": ("02", 1), "b": ("02", 2), "c": ("02", 3)}
    assert env.toc_fignumbers["book/notebooks/05_influence"]["figure"] == {"x": ("05", 1)}
    assert env.toc_fignumbers["book/performance"]["figure"] == {"p": (1,)}  # prose pages keep the book's numbering


def test_an_open_checks_deciding_design_gets_its_cost_in_the_box():
    doc = _page()
    box = nodes.admonition(ids=["result-06"])
    items = nodes.bullet_list()
    for check in ("R̂ and coupling agree at 1.01", "acceptance rises"):
        item = nodes.list_item()
        item += nodes.paragraph("", f"“{check}”: decisive at 302 draws per chain")
        items += item
    box += items
    doc += box
    assert page_links.price_deciding_designs(doc, {"R̂ and coupling agree at 1.01": "about 16 min"}) == 1
    assert items[0].astext().endswith("302 draws per chain; about 16 min")
    assert items[1].astext().endswith("302 draws per chain")


def test_a_link_to_a_notebook_this_build_does_not_hold_degrades_to_its_text(tmp_path):
    """A build with a subset of the pages (a trial's scratch root) passes -W: a link to one of the repository's
    notebooks that it does not hold is its text and "(not in this build)"; a link to a page no notebook source has
    still fails the build."""
    import pytest
    from sphinx.errors import SphinxWarning
    from test_first_screen import sphinx_build

    from glauber_mlm.book.page_links import ABSENT

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["myst_parser", "glauber_mlm.book.page_links"]\nhtml_theme = "basic"\n')
    (src / "index.md").write_text("# Pages\n\nSee [the exact answers](08_exact_answers.ipynb) and [this page](index.md).\n")
    html = (sphinx_build(src, tmp_path / "html") / "index.html").read_text()
    assert f"the exact answers{ABSENT}" in html and "08_exact_answers" not in html
    (src / "index.md").write_text("# Pages\n\nSee [a page nobody wrote](99_nothing.ipynb).\n")
    with pytest.raises(SphinxWarning, match="99_nothing"):
        sphinx_build(src, tmp_path / "html2")
