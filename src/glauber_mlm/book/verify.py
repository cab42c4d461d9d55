"""`glauber-mlm verify`: re-execute the published notebooks in a scratch folder and compare every table.

Each published notebook is re-executed with the profile and parameters its provenance.json records (in
order, so that a notebook reading another's table reads the fresh one), then each of its CSV tables is
compared with the published one: text columns must be equal, numbers equal within `rtol`/`atol`
(default 0: the runs are seeded, so the same kind of machine gives the same bytes; bf16 and fp32 builds
differ, and verify says so when the forward dtypes differ). The published book is never written.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..contract import PROVENANCE, read_provenance
from .errors import BookError
from .execute import run_notebook
from .parameters import known_notebooks


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
    a, b = pd.read_csv(published), pd.read_csv(fresh)
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


def verify(root: Path, notebooks_dir: Path, names: list[str] | None = None, scratch: Path | None = None,
           rtol: float = 0.0, atol: float = 0.0) -> list[str]:
    """Re-execute `names` (default: every published notebook) into `scratch` and compare tables; return the differences."""
    published = Path(root) / "book" / "notebooks"
    names = names or [n for n in known_notebooks(notebooks_dir) if (published / n / PROVENANCE).is_file()]
    if not names:
        raise BookError(f"nothing to verify: no published notebook with a provenance.json in {published}.")
    scratch = Path(scratch or tempfile.mkdtemp(prefix="glauber-mlm-verify-"))
    differences = []
    for name in names:
        prov_path = published / name / PROVENANCE
        if not prov_path.is_file():
            raise BookError(f"{name} has no published provenance.json in {published}: execute it first.")
        prov = read_provenance(published / name)
        out_nb = scratch / f"{name}.ipynb"
        print(f"{name}: re-executing (profile {prov['profile']}) into {scratch}", flush=True)
        run_notebook(name, out_nb, out_nb.with_suffix(""), recorded_parameters(prov), notebooks_dir=notebooks_dir,
                     staging=scratch / "_staging", progress=False)
        fresh_prov = read_provenance(scratch / name)
        if fresh_prov.get("forward_dtype") != prov.get("forward_dtype"):
            print(f"  note: the published run's chains ran in {prov.get('forward_dtype')}, these in "
                  f"{fresh_prov.get('forward_dtype')}: expect differences beyond rounding", flush=True)
        for table in sorted((published / name).glob("*.csv")):
            diff = compare_tables(table, scratch / name / table.name, rtol, atol)
            print(f"  {table.name}: {'reproduced' if diff is None else 'DIFFERS: ' + diff}", flush=True)
            if diff is not None:
                differences.append(f"{name}/{table.name}: {diff}")
    return differences
