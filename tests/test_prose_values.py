"""Prose from values (issue 44, item 3): no result page names a parameter in its prose where it means the value.

A notebook's prose (its Markdown cells, figure captions included) may cite the library's functions and tables in
backticks, but a parameter of the notebook (a key `-p` may set: `parameters.accepted_parameters`) or a number it
fixes in an UPPER_CASE constant, shown in backticks as in "`chains` chains" or "at least `TV_FLOOR`", is a name the
reader cannot read: the page must render its value (a myst-nb `{glue:text}` role, which is not counted, or text a
report module writes). Both the sources (notebooks/*.py) and the committed executed pages (book/notebooks/*.ipynb)
are read. A committed page whose prose is not its source's any more (the source was fixed after the page was built)
(a Markdown cell of the source is not in the page) is stale: its findings are expected failures until the page is
executed again. `KNOWN` lists the findings of pages
other work is changing, each with its reason; the lead empties it.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from glauber_mlm.book.parameters import accepted_parameters

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.py"))
# {notebook: {identifier: why it is still there}}: findings this test knows of, on pages other helpers own
KNOWN: dict[str, dict[str, str]] = {}


def numeric_constants(src: Path) -> set[str]:
    """The notebook's top-level UPPER_CASE constants that are a literal number (TV_FLOOR = 0.02)."""
    found = set()
    for node in ast.parse(src.read_text()).body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (int, float)) and not isinstance(node.value.value, bool)):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name) and t.id.isupper()}
    return found


def names_in_prose(markdown: str, names: set[str]) -> list[str]:
    """The `names` shown in backticks in `markdown`, outside a role's target ({glue:text}`steps` renders a value)
    and outside code blocks and math."""
    prose = re.sub(r"```.*?```", "", markdown, flags=re.S)
    prose = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", "", prose, flags=re.S)
    return sorted({m.group(1) for m in re.finditer(r"(?<![}\w])`([A-Za-z_][A-Za-z0-9_]*)`", prose)
                   if m.group(1) in names})


def markdown_cells(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def findings(cells: list[str], names: set[str]) -> list[str]:
    return sorted({name for cell in cells for name in names_in_prose(cell, names)})


def _names(src: Path) -> set[str]:
    return set(accepted_parameters(src)) | numeric_constants(src)


def _expect(name: str, found: list[str]) -> None:
    """Fail on `found`, unless `KNOWN` lists every finding (an expected failure, with its reasons)."""
    known = KNOWN.get(name, {})
    if found and set(found) <= set(known):
        pytest.xfail("; ".join(f"`{f}`: {known[f]}" for f in found))
    assert not found, (f"{name} names {', '.join(f'`{f}`' for f in found)} in its prose: render the value "
                       "({glue:text}`KEY` with the value glued by the page's report module) instead")


def test_the_scan_finds_a_parameter_name_and_not_a_glued_value_a_function_or_code():
    names = {"chains", "law_sites", "TV_FLOOR"}
    text = ("A Potts chain with `law_sites` sites, {glue:text}`chains` chains, `gm.glauber` and at least `TV_FLOOR`;"
            "\n```python\nchains = `chains`\n```\n$`chains`$")
    assert names_in_prose(text, names) == ["TV_FLOOR", "law_sites"]
    assert names_in_prose("{glue:text}`chains` and `chains_table`", names) == []


def test_numeric_constants_are_read_without_running_the_notebook(tmp_path):
    src = tmp_path / "99_x.py"
    src.write_text('TV_FLOOR = 0.02\nRULES = dict(a=1)\nLEVEL = 0.05  # why\nflag = 3\nON = True\n')
    assert numeric_constants(src) == {"TV_FLOOR", "LEVEL"}


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_a_notebook_source_names_no_parameter_in_its_prose(src):
    _expect(src.stem, findings(markdown_cells(jupytext.read(src)), _names(src)))


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_a_committed_page_names_no_parameter_in_its_prose(src):
    page = REPO / "book" / "notebooks" / f"{src.stem}.ipynb"
    if not page.is_file():
        pytest.skip(f"{src.stem} has no committed page")
    built = markdown_cells(nbformat.read(page, as_version=4))
    found = findings(built, _names(src))
    if found and set(markdown_cells(jupytext.read(src))) - set(built):  # prose the page lacks: built before it
        pytest.xfail(f"the committed page predates its source's prose (it names {', '.join(found)}): executing "
                     "the page again clears it")
    _expect(src.stem, found)
