"""Publish a finished run, and only a finished one: staging, an atomic swap, and the completeness check.

A notebook executes into a staging folder (`<staging>/NAME/NAME.ipynb` and `<staging>/NAME/NAME/`).
Only a run that finished — every cell ran and `run.finish()` wrote a provenance.json carrying this
run's id — is published, in these steps:

1. copy the results folder to `.NAME.incoming` beside the published one;
2. copy the notebook to `.NAME.ipynb.incoming`; both copies are fsynced;
3. rename the published results folder aside to `.NAME.previous` (if there is one);
4. rename `.NAME.incoming` to `NAME`;
5. rename `.NAME.ipynb.incoming` to `NAME.ipynb`;
6. delete `.NAME.previous`.

Before step 1 the run is sealed (`seal`): its provenance.json records the sha256 of every file of the page — the
executed notebook, each file of its results folder, and provenance.json's own other entries — so that a page edited,
damaged or added to after it was published is no longer a complete run (`problems` names each file).

A kill after any step leaves the previous pair or the new one complete on disk; `recover` (run before
the next publish, and when a publish fails) finishes or undoes the steps so that exactly one complete
pair remains and nothing hidden is left, and `check_published` refuses a torn pair, so a half-written
page is never built as if it were good. `check_room` refuses, before a run, a folder a publish could
not write to.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import uuid
from pathlib import Path

from ..contract import PROVENANCE, provenance_digest, sha256_of, broken_seal, page_files, read_provenance, write_provenance
from .errors import BookError

# free space a run needs beyond a second copy of its published page: a margin for the staged attempt (tables and
# figures) and the checkpoints written while it runs; a disk that fills up anyway fails the publish, which is undone
MIN_FREE_BYTES = 256 * 2**20


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


def _aside(path: Path, what: str) -> Path:
    return path.with_name(f".{path.name}.{what}")


def _fsync_tree(path: Path) -> None:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for f in files:
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _same_run(notebook: Path, results: Path) -> bool:
    """Whether `notebook` and `results` are one complete run's pair (both readable, one run id)."""
    try:
        stamped = notebook_run_id(notebook)
        prov = read_provenance(results)
    except (OSError, ValueError):
        return False
    return stamped is not None and stamped == prov.get("run_id")


def recover(out_notebook: Path, output_dir: Path) -> str | None:
    """Finish or undo a publish that was killed between two of its steps (see the module doc); what it did.

    Killed after step 4, the new pair is complete (its copies were fsynced before step 3): step 5 is done
    now. Then `.previous` is deleted only when the published notebook and results folder are one run's pair;
    otherwise (killed after step 3) it is renamed back. Half-copied `.incoming` files are deleted last.
    Returns "finished: the new page is published", "undone: the previous page is back", "cleaned: ..." (only
    hidden copies were left), or None when there was nothing to do.
    """
    previous = _aside(output_dir, "previous")
    incoming_dir, incoming_nb = _aside(output_dir, "incoming"), _aside(out_notebook, "incoming")
    done = None
    if not incoming_dir.exists() and incoming_nb.exists() and _same_run(incoming_nb, output_dir):
        os.replace(incoming_nb, out_notebook)
        done = "finished: the new page is published"
    if previous.exists():
        if output_dir.exists() and _same_run(out_notebook, output_dir):
            shutil.rmtree(previous)
            done = done or "finished: the new page is published"
        else:
            _remove(output_dir)
            os.replace(previous, output_dir)
            done = "undone: the previous page is back (rerun the command to publish the new one)"
    if incoming_dir.exists() or incoming_nb.exists():
        done = done or "cleaned: its half-copied files are removed and the published page is unchanged"
    _remove(incoming_dir)
    _remove(incoming_nb)
    return done


def recover_pages(folder: Path, locks: Path) -> list[str]:
    """`recover` every page of the published `folder` that an interrupted publish left hidden copies of, and say
    what was done ('NAME: an interrupted publish was finished: ...'). A page whose notebook lock (in `locks`) another
    process holds is left alone: that run is publishing it now."""
    from . import lock

    hidden = (re.fullmatch(r"\.(.+?)(\.ipynb)?\.(incoming|previous)", p.name) for p in Path(folder).glob(".*"))
    said = []
    for name in sorted({m.group(1) for m in hidden if m}):
        try:
            with lock.held(Path(locks) / f"{name}.lock", f"notebook {name}"):
                done = recover(Path(folder) / f"{name}.ipynb", Path(folder) / name)
        except BookError:  # held: its own run finishes the publish
            continue
        if done:
            said.append(f"{name}: an interrupted publish was {done}")
    return said


def publish(staged_notebook: Path, staged_dir: Path, out_notebook: Path, output_dir: Path) -> None:
    """Replace the published notebook and its results folder by the staged ones (the steps of the module doc).

    An OSError (a full disk, a read-only folder) is raised after `recover` put the previous pair back and
    removed the hidden copies, so a failed publish leaves the published page as it was.
    """
    recover(out_notebook, output_dir)
    incoming_dir, incoming_nb = _aside(output_dir, "incoming"), _aside(out_notebook, "incoming")
    previous = _aside(output_dir, "previous")
    try:
        output_dir.parent.mkdir(parents=True, exist_ok=True)
        out_notebook.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged_dir, incoming_dir)
        shutil.copy2(staged_notebook, incoming_nb)
        _fsync_tree(incoming_dir)
        _fsync_tree(incoming_nb)
        if output_dir.exists():
            os.replace(output_dir, previous)
        os.replace(incoming_dir, output_dir)
        os.replace(incoming_nb, out_notebook)
    except OSError:
        try:
            recover(out_notebook, output_dir)
        except OSError:  # the first error says why; what is left is undone before the next publish
            pass
        raise
    if previous.exists():  # published: a .previous this cannot delete is deleted by the next recover
        shutil.rmtree(previous, ignore_errors=True)


def _fix(code: int | None, folder: Path) -> str:
    """What to do about an OSError with errno `code` raised while writing into `folder`."""
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"free some space on the disk that holds {folder} (df -h {folder})"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"make {folder} writable (chmod -R u+w {folder}), or give a --root DIR you can write to"
    return f"check that {folder} can be written to"


def publish_failure(name: str, folder: Path, attempt: Path, err: OSError) -> str:
    """The message of a run that finished but could not be published into `folder`."""
    return (f"{name} finished but could not be published into {folder}: {err.strerror or err}"
            f"{f' ({err.filename})' if err.filename else ''}.\n"
            f"  the published notebook and results are unchanged; the finished run is in {attempt}\n"
            f"  fix: {_fix(err.errno, folder)}, then rerun the same command (its checkpoints are kept, so it resumes).")


def check_room(out_notebook: Path, output_dir: Path, work: Path) -> None:
    """Refuse (BookError), before a run, folders a publish could not write: the published notebook's folder
    and `work` (where the attempt and its checkpoints go) must be writable, with room on their disks for a
    second copy of the published pair and `MIN_FREE_BYTES`. A folder not created yet is checked through its
    nearest existing parent."""
    need = _size(out_notebook) + _size(output_dir) + MIN_FREE_BYTES
    for folder in (out_notebook.parent, work):
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        if not os.access(existing, os.W_OK | os.X_OK):
            raise BookError(f"{existing} is not writable, so this run could not be saved: {_fix(errno.EACCES, existing)}.")
        free = shutil.disk_usage(existing).free
        if free < need:
            raise BookError(f"only {free / 2**20:.0f} MiB are free on the disk that holds {existing}, and this run needs "
                            f"{need / 2**20:.0f} MiB there: {_fix(errno.ENOSPC, existing)}.")


def _metadata(notebook: Path) -> dict:
    """The executed notebook's metadata; ValueError naming the file when it is not a notebook (a JSON object whose
    metadata and its `glauber_mlm` and `papermill` entries are objects)."""
    nb = json.loads(Path(notebook).read_text())
    meta = nb.get("metadata", {}) if isinstance(nb, dict) else None
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k, {}), dict) for k in ("glauber_mlm", "papermill")):
        raise ValueError(f"{notebook} is not an executed notebook")
    return meta


def stamp(notebook: Path) -> dict:
    """What `run_notebook` stamped into the executed notebook (run id, cache inputs); {} where nothing is."""
    return _metadata(notebook).get("glauber_mlm", {})


def notebook_run_id(notebook: Path) -> str | None:
    """The run id `run_notebook` stamped into the executed notebook's metadata (None if absent)."""
    return stamp(notebook).get("run_id")


def seal(notebook: Path, results: Path, record: dict | None = None) -> None:
    """Add `record` (the runner's entries: `cache.provenance`) and the seal to `results/provenance.json`: the sha256
    of every file of the page (`page_files`) and of provenance.json's own other entries."""
    prov = {**read_provenance(results), **(record or {})}
    files = {name: sha256_of(path) for name, path in page_files(Path(notebook), Path(results)).items()}
    write_provenance(results, {**prov, "seal": {"files": files, "provenance": provenance_digest(prov)}})


def problems(notebook: Path) -> list[str]:
    """Why the executed `notebook` (with its results folder beside it) is not a complete, consistent, untouched run
    (a malformed provenance.json, another run's results, a broken seal: `broken_seal`); [] if it is."""
    notebook = Path(notebook)
    results = notebook.with_suffix("")
    try:
        meta = _metadata(notebook)
    except (OSError, ValueError) as err:
        return [f"the notebook cannot be read ({err})"]
    found = []
    if meta.get("papermill", {}).get("exception"):
        found.append("a cell raised while it executed")
    if not (results / PROVENANCE).is_file():
        return found + [f"{results.name}/provenance.json is missing (the run never reached run.finish())"]
    try:
        prov = read_provenance(results)
    except (OSError, ValueError) as err:
        return found + [str(err)]
    stamped = meta.get("glauber_mlm", {}).get("run_id")
    if stamped != prov["run_id"]:
        found.append(f"the notebook (run {stamped}) and its results folder (run {prov['run_id']}) come from different runs")
    return found + broken_seal(notebook, results, prov)


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
