"""A Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): a result page folds what a reader needs
only to check the science, not to follow it, so that the page reads as claim, figure, reading. Set at build time,
so that none of it costs a re-execution; every fold is a `<details>` element, one click away, in the page's HTML.

Folded on a result page (book/notebooks/NN_*):

- **long code**: a code cell whose source is longer than `CODE_LINES` lines shows "Show code cell source";
- **long tables and print-outs**: a cell's output that is only tables and printed text, with more than `ROWS`
  rows and lines in all, shows "Show code cell output" (an output that draws a figure is never folded);
- **in the result box**: the table of key numbers (on every page, whatever its length: the open table of checks
  shows the value each check decides on), and the paragraphs that say how a verdict is decided and since when
  ("Rule:", "Rules:");
- **each section's details**: in every numbered section after the result box, what lies between the section's
  opening prose, its static figures and each figure's reading (the paragraph "What Figure NN.k shows." and the one
  after it) is folded, run by run, under a summary that counts it ("Show 2 code cells, 1 table and 3 paragraphs"),
  a cell that draws only an interactive figure among them; a cell the notebook tags `evidence` (the texts a section
  with no figure rests on: 03's longest traps) stays open like a figure;
- **interactive figures**: a Plotly figure (`pages.plots`), which explores what a static figure beside it shows,
  under "Show the interactive figure"; `_static/page_folds.js` redraws it at its width when it is opened;
- **secondary figures**: a figure the page marks `:figclass: folded` (one that backs another, as survival curves
  back the fractions they end in), with its reading, under its number and title: a figure folds with its reading or
  neither does (a marked figure whose reading also reads an open figure stays open);
- **the set-up cells**: a run of code cells that each show only their own fold (parameters, imports, the plan), under
  one summary ("Show 4 code cells");
- **the end matter**: the bodies of the sections "How these rules came to be" and "Downloads", under their headings.

Open on every page: the claim, the result box's verdict and table of checks, what would decide an open check, each
section's opening prose, every figure the page does not mark secondary, and the reading of every figure left open.
"""
from __future__ import annotations

import re

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode
from sphinx.transforms.post_transforms import SphinxPostTransform

from .page_links import page_number

CODE_LINES = 8  # a cell's source longer than this is folded
ROWS = 8  # a table (or print-out) longer than this is folded
END_SECTIONS = {"how-these-rules-came-to-be": "the history of this page's rules", "downloads": "the files"}
BOX_RULE_PARAGRAPHS = ("Rule:", "Rules:")


def _source_lines(cell: nodes.container) -> int:
    source = cell.children[0]
    return sum(block.astext().count("\n") + 1 for block in source.findall(nodes.literal_block))


def _output_rows(output: nodes.Element) -> int | None:
    """Rows and lines an output shows when it is only tables and printed text; None when it shows anything else."""
    rows = 0
    for node in output.findall(lambda n: isinstance(n, (nodes.raw, nodes.literal_block, nodes.image, nodes.table))):
        if isinstance(node, nodes.image):
            return None
        if isinstance(node, nodes.raw):
            html = node.astext()
            if "<table" not in html:
                return None
            rows += html.count("<tr")
        elif isinstance(node, nodes.table):
            rows += len(list(node.findall(nodes.row)))
        elif not any(isinstance(a, nodes.table) for a in _ancestors(node)):
            rows += node.astext().count("\n") + 1
    return rows


def _ancestors(node: nodes.Node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def fold_cell(cell: nodes.container) -> str | None:
    """Set the myst-nb hide mode of a code cell whose source or (table / text) output is long; returns the mode set."""
    if cell.get("hide_mode") == "all" or not cell.children:
        return None
    has_input = cell.children[0].get("nb_element") == "cell_code_source"
    has_output = cell.children[-1].get("nb_element") == "cell_code_output"
    mode = cell.get("hide_mode") or ""
    fold_input = has_input and ("input" in mode or _source_lines(cell) > CODE_LINES)
    rows = _output_rows(cell.children[-1]) if has_output and has_input else None
    fold_output = "output" in mode or (rows is not None and rows > ROWS)
    new = {(True, True): "input+output", (True, False): "input", (False, True): "output"}.get((fold_input, fold_output))
    if new is None or new == mode:
        return None
    cell["hide_mode"] = new
    cell.setdefault("prompt_show", "Show code cell {type}")
    cell.setdefault("prompt_hide", "Hide code cell {type}")
    return new


def _fold(children: list[nodes.Node], show: str, hide: str) -> HideCodeCellNode:
    """Replace `children` (siblings, in order) by one folded block that holds them."""
    parent = children[0].parent
    fold = HideCodeCellNode(prompt_show=show, prompt_hide=hide)
    fold["classes"].append("page-fold")
    parent.insert(parent.index(children[0]), fold)
    for child in children:
        parent.remove(child)
        fold.append(child)
    return fold


def fold_result_box(box: nodes.admonition) -> int:
    """Fold the box's table of key numbers, whatever its length (one policy on every page: the table of checks
    below it, open, shows the value each check decides on), and its how-it-is-decided paragraphs; returns the folds
    made."""
    folds = 0
    tables = [t for t in box.children if isinstance(t, (nodes.table, nodes.container))
              and next(t.findall(nodes.table), None) is not None]
    if tables:
        rows = len(list(next(tables[0].findall(nodes.tbody)).findall(nodes.row)))
        _fold([tables[0]], f"Show the {rows} key numbers of this build", "Hide the key numbers")
        folds += 1
    rules = [p for p in box.children if isinstance(p, nodes.paragraph) and p.astext().startswith(BOX_RULE_PARAGRAPHS)]
    if rules:
        _fold(rules, "How the verdict is decided, and since when", "Hide the verdict rule")
        folds += 1
    return folds


def fold_interactive_figures(doctree: nodes.Node) -> int:
    """Fold every Plotly figure's HTML on its own; returns the figures folded."""
    plots = list(doctree.findall(_plotly))
    for plot in plots:
        _fold([plot], "Show the interactive figure", "Hide the interactive figure")
    return len(plots)


FOLDED_FIGURE = "folded"  # the class a page gives a secondary figure: `{glue:figure}` … `:figclass: folded`


def fold_marked_figures(doctree: nodes.Node, numbers: dict[str, tuple]) -> int:
    """Fold every figure the page marks as secondary (class `FOLDED_FIGURE`) together with its reading, under its
    number and title ("Show Figure 03.5 (Escape times: Kaplan–Meier survival) and its reading"): a figure folds with
    its reading or neither does. A marked figure whose reading also reads a figure left open (one reading for both)
    stays open, and so does one with no reading of its own. `numbers`: the page's figure numbers by id (Sphinx's
    `toc_fignumbers`); returns the figures folded."""
    folded = 0
    for figure in [f for f in doctree.findall(nodes.figure) if FOLDED_FIGURE in f["classes"]]:
        number = next((numbers[i] for i in figure["ids"] if i in numbers), None)
        if number is None:
            continue
        name = "Figure " + ".".join(map(str, number))
        block = _block_of(figure)
        reading = _own_reading(block, name)
        if reading is None:
            continue
        caption = next(figure.findall(nodes.caption), None)
        title = next(caption.findall(nodes.strong), caption) if caption is not None else None
        shown = f"{name} ({title.astext().strip().rstrip('.')})" if title is not None else name
        _fold([block, *reading], f"Show {shown} and its reading", f"Hide {name} and its reading")
        folded += 1
    return folded


def _block_of(node: nodes.Node) -> nodes.Node:
    """The ancestor of `node` (or itself) that is a direct child of a section: what a section's folds move."""
    while node.parent is not None and not isinstance(node.parent, nodes.section):
        node = node.parent
    return node


FIGURE_NAME = re.compile(r"Figure \d+\.\d+")


def _own_reading(block: nodes.Node, name: str) -> list[nodes.Node] | None:
    """The reading that follows `block` when it reads figure `name` alone — its bold opening ("What Figure 03.6
    shows.") and the paragraph after it, as `fold_section_details` keeps them — else None."""
    parent = block.parent
    if parent is None:
        return None
    after = parent.children[parent.index(block) + 1:]
    if not after or not _is_reading(after[0]):
        return None
    opening = next(c for c in after[0].children if c.astext())
    if set(FIGURE_NAME.findall(opening.astext())) != {name}:
        return None
    return after[:2] if len(after) > 1 and isinstance(after[1], nodes.paragraph) and not _is_reading(after[1]) \
        else after[:1]


def fold_end_sections(doctree: nodes.Node) -> int:
    """Fold the bodies of the page's end matter under their headings; returns the sections folded."""
    folded = 0
    # a section a cell displays (the rules history) is a rubric in the cell's output, its body the rubric's siblings
    for heading in list(doctree.findall(lambda n: isinstance(n, (nodes.section, nodes.rubric)))):
        what = next((w for ident, w in END_SECTIONS.items() if ident in heading["ids"]), None)
        if isinstance(heading, nodes.section):
            body = [c for c in heading.children if not isinstance(c, nodes.title)]
        else:
            body = heading.parent.children[heading.parent.index(heading) + 1:]
        if what and body:
            _fold(list(body), f"Show {what}", f"Hide {what}")
            folded += 1
    return folded


READING = "What "  # a figure's reading opens with a bold "What Figure NN.k shows."


def _draws(node: nodes.Node) -> bool:
    """Whether a node shows a static figure (a figure or an image). A cell that draws only a Plotly figure is a
    section's detail: the figure is folded on its own already, and the static figure beside it carries the reading."""
    return isinstance(node, nodes.Element) and next(node.findall(lambda n: isinstance(n, (nodes.figure, nodes.image))),
                                                    None) is not None


EVIDENCE = "evidence"  # the cell tag that keeps a cell's output open in its section


def _is_evidence(node: nodes.Node) -> bool:
    """Whether a node is a code cell the notebook tags `evidence`."""
    return (isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"
            and EVIDENCE in (node.get("cell_metadata") or {}).get("tags", []))


def _plotly(node: nodes.Node) -> bool:
    return isinstance(node, nodes.raw) and "Plotly.newPlot" in node.astext()


def _prose(node: nodes.Node) -> bool:
    return isinstance(node, (nodes.paragraph, nodes.bullet_list, nodes.enumerated_list, nodes.math_block,
                             nodes.definition_list, nodes.block_quote))


def _is_reading(node: nodes.Node) -> bool:
    # the first child that shows text: MyST opens a paragraph that starts in bold with an empty Text node
    first = next((c for c in node.children if c.astext()), None) if isinstance(node, nodes.paragraph) else None
    return isinstance(first, nodes.strong) and first.astext().startswith(READING)


def _holds_end_matter(node: nodes.Node) -> bool:
    """Whether a node holds a section a cell displays at the page's end (the rules history), folded on its own."""
    return isinstance(node, nodes.Element) and any(
        ident in END_SECTIONS for rubric in node.findall(nodes.rubric) for ident in rubric["ids"])


def _count(run: list[nodes.Node]) -> str:
    """'2 code cells, 1 table, 1 interactive figure and 3 paragraphs': what a folded run holds, in words."""
    cells = sum(1 for n in run if isinstance(n, nodes.container) and n.get("nb_element") == "cell_code")
    tables = sum(1 for n in run for _ in n.findall(nodes.table)) + sum(
        n.astext().count("<table") for m in run for n in m.findall(nodes.raw))
    plots = sum(1 for n in run for _ in n.findall(_plotly))
    text = sum(1 for n in run if _prose(n))
    parts = [f"{k} {word}{'s' if k != 1 else ''}" for k, word in ((cells, "code cell"), (tables, "table"),
                                                                   (plots, "interactive figure"), (text, "paragraph"))
             if k]
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else (parts[0] if parts else "details")


def fold_section_details(section: nodes.section) -> int:
    """Fold, run by run, what lies between a section's opening prose, its figures and their readings; returns the
    folds made. Subsections are folded the same way, each on its own."""
    folds, run, opening, after_reading = 0, [], True, False
    body = [c for c in section.children if not isinstance(c, nodes.title)]

    def close() -> None:
        nonlocal folds, run
        if run:
            _fold(run, f"Show {_count(run)}", "Hide them")
            folds += 1
        run = []

    for child in body:
        if isinstance(child, nodes.section):
            close()
            folds += fold_section_details(child)
            continue
        keep = ((opening and _prose(child)) or _draws(child) or _is_evidence(child) or _is_reading(child)
                or _holds_end_matter(child) or (after_reading and isinstance(child, nodes.paragraph)))
        opening = opening and _prose(child)
        after_reading = _is_reading(child)
        if keep:
            close()
        else:
            run.append(child)
    close()
    return folds


def _wholly_hidden(node: nodes.Node) -> bool:
    """Whether a node is a code cell that shows only its own fold ("Show code cell content": myst-nb's `hide-cell`)."""
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code" and node.get("hide_mode") == "all"


def fold_hidden_runs(section: nodes.section) -> int:
    """Fold each run of two or more wholly hidden code cells among a section's children (the set-up cells that open
    every page: parameters, imports, the plan) into one fold, one summary line in place of one per cell; returns the
    folds made."""
    folds, run = 0, []
    for child in [*section.children, None]:
        if child is not None and _wholly_hidden(child):
            run.append(child)
            continue
        if len(run) > 1:
            _fold(run, f"Show {_count(run)}", "Hide them")
            folds += 1
        run = []
    return folds


class FoldResultPages(SphinxPostTransform):
    """Runs before myst-nb's `HideInputCells` (priority 199), which turns the hide modes set here into folds."""

    default_priority = 198
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if page_number(self.env.docname) is None:
            return
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") == "cell_code":
                fold_cell(cell)
        for box in list(self.document.findall(nodes.admonition)):
            if any(i.startswith("result-") for i in box["ids"]):
                fold_result_box(box)
        fold_end_sections(self.document)
        fold_interactive_figures(self.document)
        fold_marked_figures(self.document, self.env.toc_fignumbers.get(self.env.docname, {}).get("figure", {}))
        page = next(self.document.findall(nodes.section), None)
        if page:
            fold_hidden_runs(page)
        for section in [c for c in page.children if isinstance(c, nodes.section)] if page else []:
            if not any(ident in section["ids"] for ident in END_SECTIONS):
                fold_section_details(section)


def setup(app) -> dict:
    app.add_post_transform(FoldResultPages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
