"""Execute one notebook: jupytext → papermill in a staging folder → publish only a finished run.

`run_notebook` checks the notebook's syntax, the parameters against its source
(`parameters.resolve_parameters`) and the folders it will write (`publish.check_room`) before a kernel
starts, takes the notebook's lock (`lock.held`: one run per notebook), executes into `<staging>/NAME/`,
and publishes the executed notebook and its results folder (`publish.publish`) only when every cell ran
and `run.finish()` wrote this run's provenance. A failure at any point — a cell that raises, Ctrl-C, a
killed kernel or process, a publish that finds the disk full — leaves the previously published notebook
and results byte-identical; the failed attempt stays in staging.
"""
from __future__ import annotations

import ast
import contextlib
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from .. import contract
from . import cache, lock, page
from . import publish as pub
from .errors import BookError, NotebookFailed
from .parameters import MODEL_KEYS, NOTEBOOKS, notebook_source, resolve_parameters, safe_parameters

KERNEL = "python3"


class _ProfileKeys(logging.Filter):
    """Drops papermill's "Passed unknown parameter" warning: a notebook's parameters are its PROFILES keys, which
    `resolve_parameters` has checked, not the names of its parameters cell (which holds only the universal knobs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Passed unknown parameter")


logging.getLogger("papermill").addFilter(_ProfileKeys())


def ensure_kernel(name: str = KERNEL) -> None:
    """Make sure a Jupyter kernel `name` exists; install this interpreter's ipykernel under sys.prefix if not."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        from ipykernel.kernelspec import install

        install(prefix=sys.prefix, kernel_name=name)


@contextlib.contextmanager
def _kernel_environment(run_id: str, results: Path, checkpoints: Path | None):
    """Environment of the kernels started inside, so that the pages show the notebooks' own output.

    - the progress bars' 'IProgress not found' warning is silenced: without ipywidgets, the engine's bars
      (`samplers.driver.progress_bar`) in a kernel fall back to text, which is what the book should show anyway
      (widget outputs would need JavaScript from the network to render);
    - Hugging Face's own bars ('Loading weights', downloads) are off unless HF_HUB_DISABLE_PROGRESS_BARS
      is set: they say nothing about the result;
    - the run id (written to provenance.json), the published results folder (where a notebook reads
      another notebook's tables) and the checkpoint folder (`Run.checkpoint`; none without staging) are passed on.
    """
    saved = {k: os.environ.get(k) for k in ("PYTHONWARNINGS", "HF_HUB_DISABLE_PROGRESS_BARS", contract.RUN_ID,
                                            contract.RESULTS, contract.CHECKPOINTS)}
    os.environ[contract.RUN_ID], os.environ[contract.RESULTS] = run_id, str(results)
    if checkpoints is None:
        os.environ.pop(contract.CHECKPOINTS, None)
    else:
        os.environ[contract.CHECKPOINTS] = str(checkpoints)
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [saved["PYTHONWARNINGS"], "ignore:IProgress not found"]))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


KERNEL_LOG = "kernel.log"  # in the attempt folder: the kernel's own stderr


def _logged_kernel_manager():
    """A Jupyter kernel manager whose kernel writes its own stderr (its start-up warnings; the tracebacks its message
    handlers log when a Ctrl-C closes its channels under a running cell) to `KERNEL_LOG` in the folder it runs in (the
    attempt), not to the terminal: a stopped run ends in the command's one sentence, and the log stays with the
    attempt. A cell's own output and errors reach the notebook as before."""
    from jupyter_client.manager import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
            with open(Path(kw.get("cwd") or os.getcwd()) / KERNEL_LOG, "ab") as log:
                await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": log})  # the kernel holds a copy

    return LoggedKernelManager


def _to_ipynb(src: Path, dest: Path):
    import jupytext
    import nbformat

    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nbformat.write(nb, dest)
    return nb


def _describe_failure(name: str, nb_path: Path, err: Exception) -> str:
    """'NAME failed in its first cell after the parameters (cell 4): ValueError: ...' from the executed notebook."""
    ename = getattr(err, "ename", type(err).__name__)
    evalue = getattr(err, "evalue", str(err))
    where = ""
    try:
        import nbformat

        nb = nbformat.read(nb_path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = [c for c in code if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
        if failed:
            cell = failed[0]
            tags = lambda c: c.get("metadata", {}).get("tags", [])  # noqa: E731
            after = [c for c in code if "parameters" not in tags(c) and "injected-parameters" not in tags(c)]
            k = after.index(cell) + 1 if cell in after else None
            position = "first cell after the parameters" if k == 1 else (f"code cell {k} after the parameters" if k else "parameters cell")
            where = f" in its {position} (notebook cell {nb.cells.index(cell) + 1})"
    except Exception:  # the message is still useful without the cell
        pass
    return (f"{name} failed{where}: {ename}: {evalue}\n  the failed attempt, with the traceback: {nb_path}\n"
            "  the published notebook and results are unchanged")


def run_notebook(
    name: str,
    out_notebook: Path,
    output_dir: Path,
    parameters: dict | None = None,
    *,
    notebooks_dir: Path = NOTEBOOKS,
    staging: Path | None = None,
    progress: bool = True,
    log_output: bool = False,
    wait: bool = False,
) -> Path:
    """Jupytext `notebooks_dir/NAME.py` → papermill → `out_notebook` and `output_dir`, published only when complete.

    The source's syntax and the parameters are checked first (names, profile, types and signs, model
    folders), then the folders the run writes (`publish.check_room`): a BookError names the problem before
    any kernel starts. With `staging`, the run holds the notebook's lock (`lock.held`: a BookError naming
    the process that holds it, or with `wait` a wait) and executes in `<staging>/NAME/`; without, in a new
    folder in the system's temporary directory. `output_dir` is given to the kernel relative to that folder,
    so the page shows `output_dir = "NAME"`. Raises `NotebookFailed` (cell and error in the message,
    `.notebook` = the failed attempt in staging) when a cell raises or the kernel dies, and a BookError
    naming the fix when the finished run cannot be published; the published pair is then untouched.
    """
    src = notebook_source(name, notebooks_dir)
    name = src.stem
    refuse_links(out_notebook, output_dir, None if staging is None else Path(staging) / name)
    out_notebook, output_dir = Path(out_notebook).resolve(), Path(output_dir).resolve()
    params = prepare_parameters(src, parameters or {})
    stamp = {"inputs": cache.inputs(src, params, out_notebook.parent)}
    if staging is None:  # a fresh folder per call: concurrent runs of one notebook never share an attempt
        pub.check_room(out_notebook, output_dir, Path(tempfile.gettempdir()))
        return _execute(src, params, stamp, out_notebook, output_dir, Path(tempfile.mkdtemp(prefix=f"glauber-mlm-{name}-")),
                        checkpoints=None, progress=progress, log_output=log_output)
    staging = Path(staging).resolve()
    with lock.held(lock.lock_dir(staging) / f"{name}.lock", f"notebook {name}", wait):
        pub.check_room(out_notebook, output_dir, staging)
        attempt = staging / name
        if attempt.exists():
            shutil.rmtree(attempt)
        attempt.mkdir(parents=True)
        # a killed run resumes from here: one folder per notebook and inputs, beside staging, removed once published
        checkpoints = staging.parent / "checkpoints" / name / cache.key(stamp["inputs"])[:16]
        announce_resume(name, checkpoints)
        return _execute(src, params, stamp, out_notebook, output_dir, attempt,
                        checkpoints=checkpoints, progress=progress, log_output=log_output)


def refuse_links(*paths: Path | None) -> None:
    """Refuse (BookError, before any kernel starts) a published notebook, results folder or staging folder that is a
    symbolic link: a publish replaces them by renaming, and the kernel would write the link's target under another
    name, so the run could never be published."""
    for path in filter(None, paths):
        if Path(path).is_symlink():
            raise BookError(f"{path} is a symbolic link (to {os.readlink(path)}), which a run replaces by renaming and "
                            "so could never publish into: remove the link (the book writes a real folder there), or "
                            "give --root DIR on the disk you wanted; nothing was executed.")


def _execute(src: Path, params: dict, stamp: dict, out_notebook: Path, output_dir: Path, attempt: Path, *,
             checkpoints: Path | None, progress: bool, log_output: bool) -> Path:
    """`run_notebook` once its checks passed: execute in the empty folder `attempt`, then publish."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    name = src.stem
    staged_nb, staged_dir = attempt / f"{name}.ipynb", attempt / output_dir.name
    params = safe_parameters({**params, "output_dir": output_dir.name})  # exactly what papermill writes: plain data
    run_id = pub.new_run_id()
    ensure_kernel()
    ipynb = attempt / f"{name}.source.ipynb"
    _to_ipynb(src, ipynb)
    try:
        with _kernel_environment(run_id, output_dir.parent, checkpoints):
            pm.execute_notebook(
                str(ipynb), str(staged_nb), parameters=params, kernel_name=KERNEL,
                progress_bar=progress, log_output=log_output, cwd=str(attempt),
                kernel_manager_class=_logged_kernel_manager(),
            )
    except PapermillExecutionError as err:
        tidy_streams(staged_nb)
        raise NotebookFailed(_describe_failure(name, staged_nb, err), staged_nb) from None
    except Exception as err:  # kernel died, timeout, ...
        raise NotebookFailed(f"{name} could not be executed: {type(err).__name__}: {err}\n"
                             f"  the failed attempt is in {attempt}; the published results are unchanged", staged_nb) from None
    ipynb.unlink()
    resumed = tidy_streams(staged_nb)
    _finish_page(staged_nb, staged_dir, src, {**stamp, "run_id": run_id})
    record = cache.provenance(src, stamp["inputs"]) | ({"resumed": resumed} if resumed else {})
    pub.seal(staged_nb, staged_dir, record)  # the page's files, as published
    found = pub.problems(staged_nb)
    if found:
        raise NotebookFailed(f"{name} finished without a complete run ({'; '.join(found)}); nothing was published.\n"
                             f"  the attempt is in {attempt}", staged_nb)
    try:
        pub.publish(staged_nb, staged_dir, out_notebook, output_dir)
    except OSError as err:  # a full disk, a read-only folder: the run is kept in staging, its checkpoints too
        raise BookError(pub.publish_failure(name, out_notebook.parent, attempt, err)) from None
    shutil.rmtree(attempt)
    if checkpoints is not None:
        remove_checkpoints(checkpoints)
    return out_notebook


def saved_checkpoints(checkpoints: Path) -> list[Path]:
    """The checkpoint files (`LABEL.pt`) a killed or interrupted run of these inputs left in `checkpoints`."""
    return sorted(checkpoints.glob("*.pt")) if checkpoints.is_dir() else []


def announce_resume(name: str, checkpoints: Path) -> None:
    """Say, before the kernel starts, that this run goes on from the checkpoints an earlier run of the same inputs
    left (each chain then says from which step); nothing when there are none."""
    if saved_checkpoints(checkpoints):
        print(f"resuming {name} from its checkpoints in {checkpoints}", flush=True)


def remove_checkpoints(checkpoints: Path) -> None:
    """Remove the published run's checkpoint folder `<checkpoints>/NAME/<inputs key>` only: the resume state of
    the notebook's other parameter sets (a killed `run NAME -p pairs 9`) stays; NAME's folder goes once empty."""
    shutil.rmtree(checkpoints, ignore_errors=True)
    with contextlib.suppress(OSError):  # another parameter set's folder is still there
        checkpoints.parent.rmdir()


def check_syntax(src: Path) -> None:
    """Refuse a notebook source Python cannot parse, naming the file and line, before anything else reads it (a
    parse without the file name reports `File "<unknown>"`, the kernel a cell's line)."""
    try:
        ast.parse(src.read_text(), filename=str(src))
    except SyntaxError as err:
        raise BookError(f"{src}, line {err.lineno}: {err.msg}: {(err.text or '').strip()}\n"
                        "  fix the notebook's source; nothing was executed.") from None


def prepare_parameters(src: Path, parameters: dict) -> dict:
    """`parameters` as the kernel gets them: the source parsed (`check_syntax`), local model folders made absolute,
    then checked (`resolve_parameters`)."""
    check_syntax(src)
    params = {k: _absolute_paths(v) if k in MODEL_KEYS else v for k, v in parameters.items()}
    return resolve_parameters(src, params)


def _finish_page(notebook: Path, results: Path, src: Path, stamp: dict) -> None:
    """Stamp the run id (it ties the page to its provenance.json) and the cache inputs; fold the machinery, add downloads."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata["glauber_mlm"] = stamp
    page.fold_machinery(nb)
    page.add_downloads(nb, results, src)
    page.add_colab_setup(nb, page.repository_url())
    nbformat.write(nb, notebook)


def _absolute_paths(value):
    """A model given as a folder relative to where the command runs still names it in the kernel (which runs elsewhere)."""
    if isinstance(value, list):
        return [_absolute_paths(v) for v in value]
    if isinstance(value, str) and value and Path(value).expanduser().exists():
        return str(Path(value).expanduser().resolve())
    return value


def _collapse_carriage_returns(text: str) -> str:
    """What a terminal shows: on each line, only the text after its last carriage return (a progress bar redraws)."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(next((seg for seg in reversed(line.split("\r")) if seg), "") for line in lines)


_PROGRESS_BAR = re.compile(r"^.*\d+%\|.*\|.*$")  # a progress bar: "glauber: 100%|█████| 2000/2000 [00:01<00:00, ...]"
# `samplers.driver`'s "resuming glauber from its checkpoint at step s of S (PATH)": how this build went, not a result
_RESUMED = re.compile(r"^(resuming .+ from its checkpoint at step \d+ of \d+) \(.*\)$")


def resume_notices(text: str) -> list[str]:
    """The resume notices of a terminal's text, without their local checkpoint paths."""
    return [m.group(1) for line in _collapse_carriage_returns(text).split("\n") if (m := _RESUMED.match(line))]


def _without_progress_bars(text: str) -> str:
    """The lines of a terminal's text that are neither progress bars nor resume notices (blank lines they leave
    behind dropped too)."""
    kept = [line for line in _collapse_carriage_returns(text).split("\n")
            if line.strip() and not _PROGRESS_BAR.match(line) and not _RESUMED.match(line)]
    return "\n".join(kept) + ("\n" if kept else "")


def tidy_streams(path: Path) -> list[str]:
    """Merge consecutive stdout/stderr outputs of each cell and drop progress bars and resume notices from them;
    returns the resume notices (`resume_notices`), which the page's provenance.json keeps.

    A page shows results, not how long a loop took on the build machine (the execution page gives times) nor that
    a chain went on from a checkpoint (its provenance says so; a resumed chain is the chain a fresh run draws:
    tests/test_checkpoint.py); whatever else a cell wrote to stderr, a warning say, stays visible.
    """
    import nbformat

    path = Path(path)
    if not path.exists():
        return []
    nb = nbformat.read(path, as_version=4)
    notices = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            prev = outputs[-1] if outputs else None
            if out.get("output_type") == "stream" and prev is not None and prev.get("output_type") == "stream" and prev.get("name") == out.get("name"):
                prev["text"] += out["text"]
            else:
                outputs.append(out)
        for out in outputs:
            if out.get("output_type") == "stream":
                notices += resume_notices(out["text"])
                out["text"] = _without_progress_bars(out["text"])
        cell.outputs = [o for o in outputs if o.get("output_type") != "stream" or o["text"]]
    nbformat.write(nb, path)
    return notices
