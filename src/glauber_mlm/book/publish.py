"""Publish a finished run, and only a finished one: staging, an atomic swap, and the completeness check.

A notebook executes into a staging folder (`<staging>/NAME/NAME.ipynb` and `<staging>/NAME/NAME/`).
Only a run that finished — every cell ran and `run.finish()` wrote a provenance.json carrying this
run's id — is published: both are copied beside the published pair under hidden names, then swapped in
with `os.replace` (the old folder is renamed aside first and deleted last). A kill at any instant leaves
the previous pair, or the new pair, or (inside the few renames) a pair whose ids disagree; the next run
restores the previous folder if it was left aside, and `check_published` refuses a torn pair, so a
half-written page is never built as if it were good.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from .errors import BookError

RUN_ID = "GLAUBER_MLM_RUN_ID"        # the kernel's run id; `Run.provenance` writes it to provenance.json
RESULTS = "GLAUBER_MLM_RESULTS"      # the published results folder, where `Run.upstream_table` reads other notebooks
CHECKPOINTS = "GLAUBER_MLM_CHECKPOINTS"  # where a run's long calls save their progress (`Run.checkpoint`)
REQUIRED = ("notebook", "profile", "parameters", "device", "commit", "versions", "run_id")


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


def _aside(path: Path, what: str) -> Path:
    return path.with_name(f".{path.name}.{what}")


def _fsync_tree(path: Path) -> None:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for f in files:
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())


def recover(out_notebook: Path, output_dir: Path) -> None:
    """Undo what a publish killed mid-way left: restore the previous results folder, drop half-copied files."""
    previous = _aside(output_dir, "previous")
    if previous.exists():
        if output_dir.exists():
            shutil.rmtree(previous)
        else:
            os.replace(previous, output_dir)
    for leftover in (_aside(output_dir, "incoming"), _aside(out_notebook, "incoming")):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()


def publish(staged_notebook: Path, staged_dir: Path, out_notebook: Path, output_dir: Path) -> None:
    """Replace the published notebook and its results folder by the staged ones (see the module doc)."""
    recover(out_notebook, output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    out_notebook.parent.mkdir(parents=True, exist_ok=True)
    incoming_dir, incoming_nb = _aside(output_dir, "incoming"), _aside(out_notebook, "incoming")
    shutil.copytree(staged_dir, incoming_dir)
    shutil.copy2(staged_notebook, incoming_nb)
    _fsync_tree(incoming_dir)
    _fsync_tree(incoming_nb)
    previous = _aside(output_dir, "previous")
    if output_dir.exists():
        os.replace(output_dir, previous)
    os.replace(incoming_dir, output_dir)
    os.replace(incoming_nb, out_notebook)
    if previous.exists():
        shutil.rmtree(previous)


def notebook_run_id(notebook: Path) -> str | None:
    """The run id `run_notebook` stamped into the executed notebook's metadata (None if absent)."""
    meta = json.loads(Path(notebook).read_text()).get("metadata", {})
    return meta.get("glauber_mlm", {}).get("run_id")


def problems(notebook: Path) -> list[str]:
    """Why the executed `notebook` (with its results folder beside it) is not a complete, consistent run; [] if it is."""
    notebook = Path(notebook)
    prov_path = notebook.with_suffix("") / "provenance.json"
    try:
        nb = json.loads(notebook.read_text())
    except (OSError, ValueError) as err:
        return [f"the notebook cannot be read ({err})"]
    found = []
    if nb.get("metadata", {}).get("papermill", {}).get("exception"):
        found.append("a cell raised while it executed")
    if not prov_path.is_file():
        return found + [f"{prov_path.parent.name}/provenance.json is missing (the run never reached run.finish())"]
    try:
        prov = json.loads(prov_path.read_text())
    except ValueError:
        return found + [f"{prov_path.parent.name}/provenance.json is not valid JSON"]
    missing = [k for k in REQUIRED if k not in prov]
    if missing:
        found.append(f"provenance.json lacks {', '.join(missing)}")
    stamped = nb.get("metadata", {}).get("glauber_mlm", {}).get("run_id")
    if "run_id" in prov and stamped != prov["run_id"]:
        found.append(f"the notebook (run {stamped}) and its results folder (run {prov['run_id']}) come from different runs")
    return found


def check_published(notebooks: list[Path]) -> None:
    """Refuse to build a book holding an incomplete or torn executed notebook, naming each and the fix."""
    bad = {nb: problems(nb) for nb in notebooks}
    bad = {nb: p for nb, p in bad.items() if p}
    if bad:
        lines = [f"  {nb.stem}: {'; '.join(p)}" for nb, p in bad.items()]
        raise BookError("these executed notebooks are not complete runs, so the book is not built from them:\n"
                        + "\n".join(lines)
                        + "\n  fix: re-execute them (glauber-mlm book --only NAME ...), or restore the committed ones "
                          "(git checkout -- book/notebooks/).")
