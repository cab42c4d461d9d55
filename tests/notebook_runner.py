"""Execute the notebooks from the tests: `execute(name, out_dir, **params)` and `smoke_book(root)`.

`execute("02_high_temperature_mixing", tmp_path)` converts `notebooks/02_high_temperature_mixing.py`
with jupytext, runs it with papermill (kernel `python3`, profile `smoke` unless `profile=` is given)
and returns the notebook's output dir `tmp_path / "02_high_temperature_mixing"` (tables, figures,
provenance.json); the executed notebook is `tmp_path / "02_high_temperature_mixing.ipynb"`.
A cell that raises makes it raise `glauber_mlm.book.NotebookFailed`, whose message names the cell
and the error.

Each (notebook, parameters) pair executes once per test session: a second `execute` with the same
arguments, or the smoke book built by `tests/test_book.py`, copies the first run's outputs instead
of executing the notebook again.

`first_cell_error(name, out_dir, **params)` runs only the notebook's set-up (its parameters cell, the
parameters, then its first code cell after them) in this process, without a kernel, and returns the
exception that first cell raised (None when it ran through): the quick check of a notebook's refusals.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from glauber_mlm import book

NOTEBOOKS = book.NOTEBOOKS
_RUNS: dict[tuple, tuple[Path, Path]] = {}


def _key(name: str, notebooks_dir: Path, params: dict) -> tuple:
    return name, str(Path(notebooks_dir).resolve()), json.dumps(params, sort_keys=True, default=str)


def execute(name: str, out_dir, *, notebooks_dir=NOTEBOOKS, **params) -> Path:
    """Run notebook `name` (smoke profile by default) into `out_dir`; return its output dir `out_dir/name`."""
    params.setdefault("profile", "smoke")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target_nb, target = out_dir / f"{name}.ipynb", out_dir / name
    key = _key(name, notebooks_dir, params)
    cached = _RUNS.get(key)
    if cached and cached[0].exists() and cached[1].exists():
        if cached[1].resolve() != target.resolve():
            shutil.copy2(cached[0], target_nb)
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(cached[1], target)
        return target
    book.run_notebook(name, target_nb, target, params, notebooks_dir=notebooks_dir, progress=False)
    _RUNS[key] = (target_nb, target)
    return target


def first_cell_error(name: str, out_dir, *, notebooks_dir=NOTEBOOKS, **params) -> BaseException | None:
    """The exception notebook `name`'s first code cell after the parameters raises with `params`, or None.

    No kernel: the cell tagged "parameters" of `notebooks_dir/NAME.py` (read with jupytext) is executed
    in a fresh namespace, the parameters are set there as a run would give them (profile `smoke` unless
    given, resolved by `prepare_parameters`; `output_dir` = `out_dir/NAME`), then the first code cell after
    the parameters cell is executed and what it raises is returned. A parameter refused before any
    kernel would start (`BookError` from `prepare_parameters`) propagates, as from `execute`.
    """
    import jupytext
    import matplotlib

    from glauber_mlm.book.execute import prepare_parameters

    matplotlib.use("Agg")
    params.setdefault("profile", "smoke")
    src = book.notebook_source(name, notebooks_dir)
    values = prepare_parameters(src, params)
    code = [c for c in jupytext.read(src).cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.get("metadata", {}).get("tags", []))
    assert at + 1 < len(code), f"{name} has no code cell after its parameters cell"
    namespace: dict = {"__name__": "__main__"}
    exec(compile(code[at].source, f"{name} (parameters cell)", "exec"), namespace)
    namespace.update(values)
    namespace["output_dir"] = str(Path(out_dir) / src.stem)
    try:
        exec(compile(code[at + 1].source, f"{name} (first cell after the parameters)", "exec"), namespace)
    except Exception as err:  # noqa: BLE001 - the cell's own error is the result
        return err
    return None


@dataclass
class SmokeBook:
    root: Path
    html: Path                                    # _build/html/index.html
    executed: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)   # notebook -> error message


def smoke_book(root, notebooks_dir=NOTEBOOKS, extra: tuple[tuple[str, Path], ...] = ()) -> SmokeBook:
    """Execute every notebook in the smoke profile into `root` (a temporary folder) and build the book with -W.

    `extra` adds (name, notebooks_dir) pairs to execute as well. A notebook that fails is recorded in
    `failures` (its page shows the traceback); a failing build raises `glauber_mlm.book.BookError`.
    """
    root = book.prepare_root(root)
    out = root / "book" / "notebooks"
    result = SmokeBook(root=root, html=root / "_build" / "html" / "index.html")
    jobs = [(name, Path(notebooks_dir)) for name in book.known_notebooks(notebooks_dir)] + [(n, Path(d)) for n, d in extra]
    for name, nb_dir in jobs:
        try:
            execute(name, out, notebooks_dir=nb_dir)
            result.executed.append(name)
        except book.BookError as err:
            result.failures[name] = str(err)
    book.write_execution_page(root, set(result.executed))
    result.html = book.build_book(root, quiet=True)
    return result


def read_table(out_dir: Path, name: str):
    """A table a notebook saved (`name.csv` in its output dir), failing clearly when it was not saved."""
    import pandas as pd

    path = Path(out_dir) / f"{name}.csv"
    assert path.is_file(), f"{name}.csv was not saved"
    return pd.read_csv(path)
