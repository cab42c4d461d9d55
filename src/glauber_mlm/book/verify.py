"""`glauber-mlm verify`: re-execute the published notebooks in a scratch folder and compare every table.

Each published notebook is re-executed with the profile and parameters its provenance.json records (in
order, so that a notebook reading another's table reads the fresh one), then its results folder is compared with
the published one, file by file:
- each CSV table, checks.csv among them: text columns must be equal, numbers equal within `rtol`/`atol` (default 0:
  the runs are seeded, so the same kind of machine gives the same bytes; bf16 and fp32 builds differ, and verify
  says so when the forward dtypes differ);
- result.json: the verdict and the entries it rests on (`RESULT_KEYS`; its formatted key numbers too when no
  tolerance is given);
- every other file (figures) by its presence: a file published but not written again is missing, one written
  again but not published is extra. provenance.json is the run's own record, and is not compared.
A published page whose files cannot be read is refused before anything runs (a BookError naming the file and the
fix); one whose seal is broken is compared all the same, after a note naming what changed. The published book is
never written.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..contract import PROVENANCE, RESULT, MalformedFile, read_provenance, read_result, reexecute
from .errors import BookError
from .execute import run_notebook
from .parameters import known_notebooks
from .publish import broken_seal

RESULT_KEYS = ("verdict", "checks_verdict", "question", "scale", "checks")  # result.json: what the verdict is


def recorded_parameters(provenance: dict) -> dict:
    """The explicit parameters that reproduce a run: its profile, every resolved value that is not None, and the
    forward dtype when the run was given one (`dtype`; else this machine's default runs, as it did there)."""
    params = {k: v for k, v in provenance.get("parameters", {}).items() if v is not None}
    scale = provenance.get("scale", 1.0)  # the values are already scaled; the scale keeps the page a dry run's
    dtype = provenance.get("dtype")
    return {"profile": provenance["profile"], **({"scale": scale} if scale != 1 else {}),
            **({"dtype": dtype} if dtype is not None else {}), **params}


def compare_tables(published: Path, fresh: Path, rtol: float = 0.0, atol: float = 0.0) -> str | None:
    """None when the two CSV tables agree (text equal, numbers within rtol/atol, NaN = NaN); else what differs."""
    import pandas as pd

    if not fresh.is_file():
        return "not written by the re-execution"
    a, b = read_table(published), read_table(fresh)
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return f"shape or columns differ: {a.shape} {list(a.columns)} vs {b.shape} {list(b.columns)}"
    differing = []
    for col in a.columns:
        x, y = a[col], b[col]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            xv, yv = x.to_numpy(float), y.to_numpy(float)
            close = np.isclose(xv, yv, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                k = int(np.flatnonzero(~close)[0])
                differing.append(f"{col} ({(~close).sum()} rows; row {k}: {xv[k]!r} vs {yv[k]!r})")
        elif not x.astype(str).equals(y.astype(str)):
            k = int(np.flatnonzero(x.astype(str).to_numpy() != y.astype(str).to_numpy())[0])
            differing.append(f"{col} (row {k}: {x.iloc[k]!r} vs {y.iloc[k]!r})")
    return "; ".join(differing) or None


def read_table(path: Path):
    """The CSV table at `path` as a DataFrame; a BookError naming the file and the fix when it cannot be parsed."""
    import pandas as pd

    try:
        return pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as err:  # pandas' ParserError and EmptyDataError are ValueErrors
        raise BookError(f"{path} is not a readable table ({type(err).__name__}: {err}): "
                        f"{reexecute(path.parent)}.") from None


def compare_results(published: Path, fresh: Path, exact: bool = True) -> str | None:
    """None when the two result.json agree on `RESULT_KEYS` (and their key numbers, when `exact`); else what differs."""
    if not fresh.is_file():
        return "not written by the re-execution"
    a, b = read_result(published.parent), read_result(fresh.parent)
    keys = RESULT_KEYS + (("numbers",) if exact else ())
    differing = [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]
    return "; ".join(differing) or None


def compare_file(published: Path, fresh: Path, rtol: float, atol: float) -> str | None:
    """None when the fresh file `fresh` reproduces the published `published` (see the module doc); else what differs."""
    if published.suffix == ".csv":
        return compare_tables(published, fresh, rtol, atol)
    if published.name == RESULT:
        return compare_results(published, fresh, exact=rtol == 0 and atol == 0)
    return None if fresh.is_file() else "not written by the re-execution"


def results_files(folder: Path) -> set[str]:
    """The files of a results folder that verify compares, by their path there (provenance.json aside)."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != PROVENANCE}


def check_readable(folder: Path) -> dict:
    """The published page's provenance, after checking that its provenance.json, result.json and tables can be read:
    a BookError names the first that cannot, and the fix, before anything is re-executed."""
    try:
        prov = read_provenance(folder)
        if (folder / RESULT).is_file():
            read_result(folder)
    except MalformedFile as err:
        raise BookError(str(err)) from None
    for table in sorted(folder.rglob("*.csv")):
        read_table(table)
    return prov


def compare_page(published: Path, fresh: Path, rtol: float, atol: float) -> list[str]:
    """Compare the fresh results folder of one page with the published one, printing a line per file; the
    differences ('rhat.csv: ...', 'x.png: extra: written by the re-execution, not published')."""
    differences = []
    for rel in sorted(results_files(published) | results_files(fresh)):
        if not (published / rel).is_file():
            diff = "extra: written by the re-execution, not published"
        else:
            diff = compare_file(published / rel, fresh / rel, rtol, atol)
        print(f"  {rel}: {'reproduced' if diff is None else 'DIFFERS: ' + diff}", flush=True)
        if diff is not None:
            differences.append(f"{published.name}/{rel}: {diff}")
    return differences


def verify(root: Path, notebooks_dir: Path, names: list[str] | None = None, scratch: Path | None = None,
           rtol: float = 0.0, atol: float = 0.0) -> list[str]:
    """Re-execute `names` (default: every published notebook) into `scratch` and compare their results folders
    (`compare_page`); return the differences. Refused (BookError) before any run: a name without a published
    provenance.json, a published page whose files cannot be read (`check_readable`)."""
    published = Path(root) / "book" / "notebooks"
    names = names or [n for n in known_notebooks(notebooks_dir) if (published / n / PROVENANCE).is_file()]
    if not names:
        raise BookError(f"nothing to verify: no published notebook with a provenance.json in {published}.")
    provenances = {}
    for name in names:
        if not (published / name / PROVENANCE).is_file():
            raise BookError(f"{name} has no published provenance.json in {published}: execute it first.")
        provenances[name] = check_readable(published / name)
    # made only once the run is sure to start: a refused verify leaves no empty folder behind
    scratch = Path(scratch or tempfile.mkdtemp(prefix="glauber-mlm-verify-"))
    differences = []
    for name, prov in provenances.items():
        changed = broken_seal(published / f"{name}.ipynb", published / name, prov)
        if changed:
            print(f"{name}: note: the published page is not as it was published ({'; '.join(changed)})", flush=True)
        out_nb = scratch / f"{name}.ipynb"
        print(f"{name}: re-executing (profile {prov['profile']}) into {scratch}", flush=True)
        run_notebook(name, out_nb, out_nb.with_suffix(""), recorded_parameters(prov), notebooks_dir=notebooks_dir,
                     staging=scratch / "_staging", progress=False)
        fresh_prov = read_provenance(scratch / name)
        if fresh_prov.get("forward_dtype") != prov.get("forward_dtype"):
            print(f"  note: the published run's chains ran in {prov.get('forward_dtype')}, these in "
                  f"{fresh_prov.get('forward_dtype')}: expect differences beyond rounding", flush=True)
        differences += compare_page(published / name, scratch / name, rtol, atol)
    return differences
