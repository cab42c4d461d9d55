"""A Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): what a result page shows around its
science, set at build time from the page and its result.json, so that none of it costs a re-execution.

- **The result box by verdict** (`colour_result_box`): the box a page names `result-NN` takes the admonition class of
  its verdict's tone (`first_screen.tone`): green `tip` only for reproduced / passes, red `danger` for not reproduced /
  fails, amber `warning` for inconclusive, grey-blue `note` for a smoke or dry run.
- **Glossary terms linked where a page first uses them** (`link_glossary_terms`): the terms of book/glossary.md's
  `{glossary}` block (`glossary_terms`, an entry's other spellings included: "τ*", "L-lag", "core checks"), matched
  case-insensitively as whole words in the page's running text, its result box included; on the intro too, so that
  the first screen's words link to the entries that explain them.
- **Every "notebook NN" a link** (`link_notebooks`) to that notebook's page, when the build holds it.
- **Figures numbered per page** (`number_figures_by_page`): "Figure 02.3" is notebook 02's third figure, so that the
  book's numbers never collide with the paper's ("paper Fig. 5") and a reader can tell which page a number is on.
- **Links to a page this build does not hold** (`AbsentPages`): a book built with a subset of the pages (a scratch
  root with the pages a trial ran) keeps a link to one of the repository's other notebooks as its text, "(not in this
  build)", instead of failing `-W` on a missing target; a link to a page no notebook source has still fails.
- **The cost of what would decide an open check** (`price_deciding_designs`): in the box's "What would decide it",
  each check whose page names its deciding design as parameters (checks.csv's `decide_with`) gains that design's
  cost on the machine that built the page (`deciding_cost`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from .first_screen import tone

NOTEBOOK_DOCS = "book/notebooks/"
INTRO = "book/intro"
GLOSSARY = Path("book") / "glossary.md"
BOX_CLASS = {"positive": "tip", "negative": "danger", "open": "warning", "other": "note"}
NOTEBOOK_MENTION = re.compile(r"\bnotebook (\d\d)\b")
# text that is never rewritten into a link: it already is one, or it is code, mathematics or a heading
SKIP = (nodes.reference, nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.title,
        nodes.raw, nodes.term, addnodes.pending_xref, nodes.caption, nodes.rubric)


def page_number(docname: str) -> str | None:
    """The two-digit number of a result page's document ('book/notebooks/02_high…' → '02'); None for other pages."""
    name = docname.removeprefix(NOTEBOOK_DOCS)
    return name[:2] if docname.startswith(NOTEBOOK_DOCS) and name[:2].isdigit() else None


def glossary_terms(source: str) -> list[str]:
    """The terms a MyST `{glossary}` block defines: its lines that start without indentation, longest first (so that
    "coupling time" is matched before "coupling")."""
    block = re.search(r"```\{glossary\}\n(.*?)\n```", source, re.S)
    if not block:
        return []
    terms = [line.strip() for line in block.group(1).splitlines() if line.strip() and not line[0].isspace()]
    return sorted(terms, key=len, reverse=True)


def _text_nodes(doctree: nodes.Node):
    """The doctree's running text: Text nodes outside `SKIP` (and outside the notebook's code cells)."""
    def skipped(node: nodes.Node) -> bool:
        while node is not None:
            if isinstance(node, SKIP) or "cell_input" in getattr(node, "get", lambda *_: [])("classes", []):
                return True
            node = node.parent
        return False
    return [t for t in doctree.findall(nodes.Text) if not skipped(t.parent)]


def _link(text: nodes.Text, spans: list[tuple[int, int]], make) -> None:
    """Replace each span (start, end) of `text` by the node `make(matched text)`, in place, keeping the text between."""
    value, pieces, at = str(text), [], 0
    for start, end in spans:
        pieces += [nodes.Text(value[at:start]), make(value[start:end])]
        at = end
    pieces.append(nodes.Text(value[at:]))
    text.parent.replace(text, [p for p in pieces if not isinstance(p, nodes.Text) or str(p)])


def _xref(domain: str, kind: str, target: str, shown: str) -> addnodes.pending_xref:
    ref = addnodes.pending_xref("", refdomain=domain, reftype=kind, reftarget=target, refexplicit=True,
                                refwarn=True)
    ref += nodes.inline(shown, shown, classes=["xref", domain, f"{domain}-{kind}"])
    return ref


def link_glossary_terms(doctree: nodes.Node, terms: list[str]) -> int:
    """Link each of `terms` where the page first uses it (a `term` reference to its glossary entry); returns how many
    were linked."""
    linked = 0
    for term in terms:
        pattern = re.compile(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.I)
        for text in _text_nodes(doctree):
            hit = pattern.search(str(text))
            if hit:
                _link(text, [hit.span()], lambda shown, t=term: _xref("std", "term", t.lower(), shown))
                linked += 1
                break
    return linked


def link_notebooks(doctree: nodes.Node, pages: dict[str, str], own: str | None) -> int:
    """Make every "notebook NN" in the running text a link to notebook NN's page (`pages`: number → document name),
    except the page's own (`own`) and a notebook the build does not hold; returns how many were linked."""
    linked = 0
    for text in _text_nodes(doctree):
        hits = [m for m in NOTEBOOK_MENTION.finditer(str(text)) if m.group(1) in pages and m.group(1) != own]
        if hits:
            _link(text, [m.span() for m in hits],
                  lambda shown: _xref("std", "doc", "/" + pages[shown[-2:]], shown))
            linked += len(hits)
    return linked


def colour_result_box(doctree: nodes.Node, verdict: str) -> bool:
    """Give the page's result box (the admonition whose id starts 'result-') the class of `verdict`'s tone in place of
    the class it was written with; returns whether a box was found."""
    for box in doctree.findall(nodes.admonition):
        if any(i.startswith("result-") for i in box["ids"]):
            box["classes"] = [c for c in box["classes"] if c not in BOX_CLASS.values()] + [BOX_CLASS[tone(verdict)]]
            return True
    return False


def price_deciding_designs(doctree: nodes.Node, costs: dict[str, str]) -> int:
    """Append to each item of the result box's "What would decide it" list whose check (“…”) is a key of `costs`
    its cost; returns the items priced."""
    priced = 0
    for box in doctree.findall(nodes.admonition):
        if not any(i.startswith("result-") for i in box["ids"]):
            continue
        for item in box.findall(nodes.list_item):
            text = item.astext()
            check = next((c for c in costs if text.startswith(f"“{c}”")), None)
            paragraph = next(item.findall(nodes.paragraph), None)
            if check and paragraph is not None:
                paragraph += nodes.Text(f"; {costs[check]}")
                priced += 1
    return priced


def _costs(name: str, page: Path) -> dict[str, str]:
    """{check: its deciding design's cost} for the page's open checks that name their design (checks.csv)."""
    import csv

    from .deciding_cost import deciding_cost, describe

    table = page / "checks.csv"
    if not table.is_file():
        return {}
    costs = {}
    with table.open(newline="") as f:
        for row in csv.DictReader(f):
            if row.get("outcome") == "inconclusive" and row.get("decide_with"):
                cost = describe(deciding_cost(name, page, json.loads(row["decide_with"])))
                if cost:
                    costs[row["check"]] = cost
    return costs


def _doctree_read(app, doctree: nodes.document) -> None:
    docname = app.env.docname
    own = page_number(docname)
    if own is None and docname != INTRO:
        return
    glossary = Path(app.srcdir) / GLOSSARY
    if glossary.is_file():
        link_glossary_terms(doctree, glossary_terms(glossary.read_text()))
    if own is None:
        return
    result = Path(app.srcdir) / docname / "result.json"
    if result.is_file():
        colour_result_box(doctree, json.loads(result.read_text())["verdict"])
        price_deciding_designs(doctree, _costs(Path(docname).name, result.parent))
    pages = {page_number(d): d for d in app.env.found_docs if page_number(d)}
    link_notebooks(doctree, pages, own)


def number_figures_by_page(app, env) -> list[str]:
    """`env-get-updated`, after Sphinx numbered the figures across the book: renumber each result page's figures
    (NN, 1), (NN, 2), … in the order Sphinx found them, shown as "NN.k"; returns the pages renumbered (to rewrite)."""
    renumbered = []
    for docname, kinds in env.toc_fignumbers.items():
        number = page_number(docname)
        if number is None:
            continue
        for kind, figures in kinds.items():
            ordered = sorted(figures, key=lambda ident: figures[ident])
            kinds[kind] = {ident: (number, k) for k, ident in enumerate(ordered, start=1)}
        renumbered.append(docname)
    return renumbered


ABSENT = " (not in this build)"


def absent_notebook(target: str, docnames: set[str], sources: set[str]) -> bool:
    """Whether a link target ('08_exact_answers.ipynb#result-08', 'notebooks/08_exact_answers') names one of the
    repository's notebooks (`sources`: their names) that the build does not hold (`docnames`)."""
    stem = Path(target.split("#")[0]).name.removesuffix(".ipynb").removesuffix(".md")
    return stem in sources and not any(doc.endswith("/" + stem) or doc == stem for doc in docnames)


class AbsentPages(SphinxPostTransform):
    """Before MyST resolves its links (priority 9): a link to a notebook of the repository that this build does not
    hold becomes its own text and `ABSENT` (see the module doc)."""

    default_priority = 8

    def run(self, **kwargs) -> None:
        from .parameters import NOTEBOOKS, known_notebooks

        sources = set(known_notebooks(NOTEBOOKS))
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") == "myst" and absent_notebook(node["reftarget"], self.env.found_docs, sources):
                text = nodes.inline("", node.astext() + ABSENT, classes=["absent-page"])
                node.replace_self(text)


def setup(app) -> dict:
    app.add_post_transform(AbsentPages)
    app.connect("doctree-read", _doctree_read)
    app.connect("env-get-updated", number_figures_by_page, priority=900)  # after the toctree collector's numbering
    return {"parallel_read_safe": True, "parallel_write_safe": True}
