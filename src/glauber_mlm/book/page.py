"""What the reader of an executed page sees besides the science: machinery folded away, and the downloads.

Applied to a finished run before it is published (`run_notebook`):
- the parameters cell and papermill's injected cell are folded whole (`hide-cell`), the set-up cell (the
  first after the parameters) and every plotting cell show their output with the code folded (`hide-input`),
  and the closing `run.finish()` cell is removed (the execution page lists every run's provenance);
- a last section links the page's tables (CSV), figures (PNG), provenance.json, the executed notebook and
  its Jupytext source, so a reader can take the numbers home.
"""
from __future__ import annotations

import shutil
from pathlib import Path

PLOTTING = ("plt.subplots", "plt.figure", "save_figure", "sns.")


def _tags(cell) -> list[str]:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


def _tag(cell, tag: str) -> None:
    tags = _tags(cell)
    if tag not in tags:
        tags.append(tag)


def fold_machinery(nb) -> None:
    """Tag the cells a reader need not read (see the module doc); the science cells stay open."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = [k for k, c in enumerate(code) if {"parameters", "injected-parameters"} & set(_tags(c))]
    for k in params:
        _tag(code[k], "hide-cell")
    if params and params[-1] + 1 < len(code):
        _tag(code[params[-1] + 1], "hide-input")
    for cell in code:
        source = cell.source
        if source.strip() == "run.finish()":
            _tag(cell, "remove-cell")
        elif any(p in source for p in PLOTTING):
            _tag(cell, "hide-input")


def add_downloads(nb, results: Path, source: Path) -> None:
    """Copy the Jupytext `source` into `results` and append a markdown cell linking every file there."""
    import nbformat

    results = Path(results)
    shutil.copy2(source, results / source.name)
    files = sorted(p.name for p in results.iterdir() if p.is_file())
    kind = {".csv": "table", ".png": "figure", ".json": "provenance", ".py": "Jupytext source"}
    links = [f"- [{name}]({results.name}/{name}) ({kind.get(Path(name).suffix, 'file')})" for name in files]
    links.append(f"- [{results.name}.ipynb]({results.name}.ipynb) (this executed notebook)")
    text = "## Downloads\n\nEverything this page computed, as files:\n\n" + "\n".join(links)
    nb.cells.append(nbformat.v4.new_markdown_cell(text))
