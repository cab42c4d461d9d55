"""What the reader of an executed page sees besides the science: machinery folded away, and the downloads.

Applied to a finished run before it is published (`run_notebook`):
- the parameters cell, papermill's injected cell and the set-up cell (the first after the parameters: imports,
  the profile, the provenance it prints) and the cell tagged `plan` (its planned work) are folded whole
  (`hide-cell`); every plotting cell and the cell that
  computes the result box (`run.conclude`) show their output with the code folded (`hide-input`),
  the closing `run.finish()` cell is removed (the execution page lists every run's provenance), and the cell
  before it, `run.rules_history()`, shows only the section it writes ("How these rules came to be");
- a last section links the page's tables (CSV), figures (PNG), provenance.json, the executed notebook and
  its Jupytext source, so a reader can take the numbers home. The source is not copied into the page's folder
  (`book/notebooks/` holds only what execution produced): `write_sources` derives it at every build from the
  executed notebook itself, so it is the code that ran, with the parameters papermill injected;
- a first cell, removed from the HTML page, installs the package when the notebook is opened on Colab.
"""
from __future__ import annotations

from pathlib import Path

from .parameters import REPO

SOURCES = Path("book") / "_generated" / "sources"  # gitignored; written by every build
SOURCE_TAGS = ("parameters", "injected-parameters", "plan")  # the tags a rerun needs

PLOTTING = ("plt.subplots", "plt.figure", "save_figure", "sns.", "interactive_map(", "interactive_heatmap(")


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
        _tag(code[params[-1] + 1], "hide-cell")
    for cell in code:  # the plan cell (the run's planned work, which `glauber-mlm plan` reads) is set-up too
        if "plan" in _tags(cell):
            _tag(cell, "hide-cell")
    for cell in code:
        source = cell.source
        if source.strip() == "run.finish()":
            _tag(cell, "remove-cell")
        elif source.lstrip().startswith("run.rules_history()"):
            _tag(cell, "remove-input")  # the section it writes is prose, not code that tests the claim
        elif any(p in source for p in PLOTTING) or "run.conclude(" in source:
            _tag(cell, "hide-input")


COLAB_SETUP = """\
# On Google Colab (the rocket button of the book's page): fetch the repository, with its embedded model and data,
# and install the package; then edit `profile` below ("smoke" for a quick look, "paper" on a GPU runtime) and run all.
import os, subprocess, sys
if "google.colab" in sys.modules and not os.path.isdir("/content/glauber-mlm"):
    subprocess.run(["git", "clone", "--depth", "1", "{url}", "/content/glauber-mlm"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/glauber-mlm"], check=True)
    sys.path.insert(0, "/content/glauber-mlm/src")
"""


def repository_url() -> str:
    """The repository the book points to (`repository.url` of `_config.yml`)."""
    import yaml

    return yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]


def add_colab_setup(nb, repository_url: str) -> None:
    """Put a first cell that installs the package on Colab (removed from the HTML page, shown in Colab).

    It is added after the run, so it never executes here and has no output."""
    import nbformat

    cell = nbformat.v4.new_code_cell(COLAB_SETUP.format(url=repository_url))
    _tag(cell, "remove-cell")
    nb.cells.insert(0, cell)


def add_downloads(nb, results: Path, source: Path) -> None:
    """Append a markdown cell linking every file in `results`, the executed notebook and its Jupytext source (which
    `write_sources` writes at build time to `SOURCES`, beside the book's other generated files)."""
    import nbformat

    results = Path(results)
    files = sorted(p.name for p in results.iterdir() if p.is_file())
    kind = {".csv": "table", ".png": "figure",
            "provenance.json": "provenance", "result.json": "the result box: claim, key numbers, checks, verdict"}
    links = [f"- [{name}]({results.name}/{name}) ({kind.get(name, kind.get(Path(name).suffix, 'file'))})"
             for name in files]
    links.append(f"- [{results.name}.ipynb]({results.name}.ipynb) (this executed notebook)")
    links.append(f"- [{source.name}](../_generated/sources/{source.name}) (its Jupytext source: the code that ran, "
                 "with the parameters it ran with)")
    text = "## Downloads\n\nEverything this page computed, as files:\n\n" + "\n".join(links)
    nb.cells.append(nbformat.v4.new_markdown_cell(text))


def jupytext_source(executed: Path) -> str:
    """The Jupytext (percent) source of the executed notebook `executed`: its cells without outputs, less the cells
    added after the run (the Colab set-up and the downloads), so it reruns as it ran."""
    import jupytext
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    added = (COLAB_SETUP.partition("\n")[0], "## Downloads\n")
    nb.cells = [c for c in nb.cells if not c.source.startswith(added)]
    for cell in nb.cells:  # the run's bookkeeping (papermill timings, folding tags) is not code
        cell.metadata = {"tags": [t for t in cell.metadata.get("tags", []) if t in SOURCE_TAGS]}
        if not cell.metadata["tags"]:
            cell.metadata = {}
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata = {"kernelspec": nb.metadata.get("kernelspec", {})}
    return jupytext.writes(nb, fmt="py:percent")


def write_sources(root: Path) -> list[Path]:
    """Write the Jupytext source of every executed notebook in `root/book/notebooks` to `root/SOURCES` (the files its
    Downloads section links); returns the files written."""
    out = Path(root) / SOURCES
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for executed in sorted((Path(root) / "book" / "notebooks").glob("*.ipynb")):
        path = out / f"{executed.stem}.py"
        text = jupytext_source(executed)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written
