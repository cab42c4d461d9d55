"""Faults that must end in one clear sentence and lose nothing: a full disk or a read-only book folder, a kill
between any two steps of a publish, two runs of one notebook at once, Ctrl-C and SIGTERM, a syntax error in a
notebook's source, a damaged data file.

Papermill is replaced by `fake_execute` (no kernel): it writes what a finished run writes, so every test here
takes a second or two; tests/test_publish.py runs the real kernels.
"""
from __future__ import annotations

import asyncio
import errno
import fcntl
import gc
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from glauber_mlm import contract
from glauber_mlm.build import data
from glauber_mlm.book import command, lock, publish
from glauber_mlm.cli import main as cli_main
from test_book import EXAMPLE

NAME, OTHER = "99_example", "98_other"
CALLS: list[str] = []  # the notebooks fake_execute ran, in order


def fake_execute(src: str, out: str, parameters: dict, cwd: str, **_) -> None:
    """What papermill leaves after a finished run: the executed notebook, and the results folder with this run's
    provenance (its id from the environment, as `Run.provenance` writes it) and a table saying which run it is."""
    name = Path(out).stem
    CALLS.append(name)
    results = Path(cwd) / parameters["output_dir"]
    results.mkdir()
    (results / "table.csv").write_text(f"run\n{os.environ[contract.RUN_ID]}\n")
    prov = {**{key: "-" for key in contract.REQUIRED}, "notebook": name, "scale": 1.0, "parameters": {}, "versions": {},
            "wall_time_s": 1.0, "run_id": os.environ[contract.RUN_ID]}
    (results / "provenance.json").write_text(json.dumps(prov))
    shutil.copy2(src, out)


@pytest.fixture
def world(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(notebooks folder, root): two notebooks, papermill faked, nothing published yet."""
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    CALLS.clear()
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in (NAME, OTHER):
        (notebooks / f"{name}.py").write_text(EXAMPLE.replace('Run("99_example"', f'Run("{name}"'))
    return notebooks, tmp_path / "root"


def cli(world: tuple[Path, Path], *args: str) -> int:
    notebooks, root = world
    return cli_main([*args, "--profile", "smoke", "--notebooks", str(notebooks), "--root", str(root)])


def published(root: Path) -> dict[str, bytes]:
    """Every byte under book/notebooks, hidden files included (a failed run must change none)."""
    base = root / "book" / "notebooks"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ---------------------------------------------------------------- 5. a full disk, a read-only folder

def test_a_full_disk_is_refused_before_the_run(world, monkeypatch, capsys):
    assert cli(world, "run", NAME) == 0
    root = world[1]
    before = published(root)
    full = shutil.disk_usage(root)._replace(free=10 * 2**20)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: full)
    assert cli(world, "run", NAME) == 1
    err = capsys.readouterr().err
    assert f"10 MiB are free on the disk that holds {root / 'book' / 'notebooks'}" in err and "free some space" in err, err
    assert CALLS == [NAME] and published(root) == before  # no second kernel started, nothing changed


def test_a_read_only_book_folder_is_refused_before_the_run(world, monkeypatch, capsys):
    assert cli(world, "run", NAME) == 0
    root = world[1]
    folder = root / "book" / "notebooks"
    before = published(root)
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root writes anyway: make the check see the folder as a user would
            real = os.access
            monkeypatch.setattr(os, "access", lambda p, mode: real(p, mode) and Path(p) != folder)
        assert cli(world, "run", NAME) == 1
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    assert f"{folder} is not writable" in err and f"chmod -R u+w {folder}" in err, err
    assert CALLS == [NAME] and published(root) == before


@pytest.mark.parametrize("code, fix", [(errno.ENOSPC, "free some space on the disk that holds"),
                                       (errno.EROFS, "make {folder} writable")])
def test_a_failed_publish_is_one_notebooks_error_and_the_book_still_builds(world, monkeypatch, capsys, code, fix):
    """The disk fills up (or the folder turns read-only) while OTHER's results are copied in: OTHER fails with a
    BookError naming the fix, its previous page stays, NAME is still executed and published, the book is built,
    and no hidden copy is left."""
    assert cli(world, "run", OTHER) == 0
    root = world[1]
    folder = root / "book" / "notebooks"
    before = published(root)
    real_copytree = shutil.copytree

    def copytree(src, dst, **kwargs):
        if Path(src).name == OTHER:  # half a copy, then the disk is full
            Path(dst).mkdir()
            shutil.copy2(Path(src) / "table.csv", dst)
            raise OSError(code, os.strerror(code), str(Path(dst) / "provenance.json"))
        return real_copytree(src, dst, **kwargs)

    built = []
    monkeypatch.setattr(shutil, "copytree", copytree)
    monkeypatch.setattr(command, "build_book", lambda root: built.append(root) or root / "_build" / "html" / "index.html")
    assert cli(world, "book", "--force") == 1
    err = capsys.readouterr().err
    assert f"{OTHER} finished but could not be published into {folder}" in err, err
    assert fix.format(folder=folder) in err and "rerun the same command" in err, err
    assert f"1 notebook(s) failed: {OTHER}" in err
    assert CALLS == [OTHER, OTHER, NAME] and built  # the next notebook ran and the book was built
    after = published(root)
    assert {k: v for k, v in after.items() if k.startswith(OTHER)} == before
    assert (folder / f"{NAME}.ipynb").is_file() and publish.problems(folder / f"{NAME}.ipynb") == []
    assert hidden(folder) == []
    assert (root / "_build" / "staging" / OTHER / OTHER / "table.csv").is_file()  # the finished run is kept


# ---------------------------------------------------------------- 7. a kill between any two steps of a publish

class Killed(BaseException):
    """A kill: no handler of publish's runs (it is not an OSError)."""


def _pair(folder: Path, run: str) -> tuple[Path, Path]:
    """A staged notebook and results folder of run `run` in `folder`, consistent as `publish.problems` wants."""
    folder.mkdir(parents=True)
    results = folder / "nb"
    results.mkdir()
    (results / "table.csv").write_text(f"{run}\n" * 100)
    (results / "figure.png").write_bytes(run.encode() * 1000)
    (results / "provenance.json").write_text(json.dumps({**{k: "-" for k in contract.REQUIRED}, "scale": 1.0,
                                                         "parameters": {}, "versions": {}, "wall_time_s": 1.0, "run_id": run}))
    notebook = folder / "nb.ipynb"
    notebook.write_text(json.dumps({"metadata": {"glauber_mlm": {"run_id": run}}, "cells": [], "padding": run * 500}))
    publish.seal(notebook, results)
    return notebook, results


def _tree(notebook: Path, results: Path) -> dict[str, bytes] | None:
    """The published pair's bytes (None for a missing half); None when neither is there."""
    if not notebook.exists() and not results.exists():
        return None
    files = {p.name: p.read_bytes() for p in results.iterdir()} if results.exists() else {"results": None}
    return {"nb.ipynb": notebook.read_bytes() if notebook.exists() else None, **files}


# publish's writes, in order: copy the results folder, copy the notebook, three renames, delete .previous;
# a first publish has no previous results folder to rename aside and delete
WRITES = {"replacing a page": ["copytree", "copy2", "replace", "replace", "replace", "rmtree"],
          "first publish": ["copytree", "copy2", "replace", "replace"]}


def _partly(step: str, args: tuple) -> None:
    """What a kill in the middle of `step` leaves (a rename is atomic: nothing)."""
    if step == "copytree":
        src, dst = map(Path, args[:2])
        dst.mkdir()
        first = sorted(src.iterdir())[0]
        (dst / first.name).write_bytes(first.read_bytes())
    elif step == "copy2":
        src, dst = map(Path, args[:2])
        dst.write_bytes(src.read_bytes()[: len(src.read_bytes()) // 2])
    elif step == "rmtree":
        next(Path(args[0]).iterdir()).unlink()


def _killed_publish(monkeypatch, staged: tuple[Path, Path], out: tuple[Path, Path], at: int, partly: bool) -> str:
    """Run publish, killed when it starts its write number `at` (after `partly` doing it): what happened."""
    done: list[str] = []
    with monkeypatch.context() as m:
        for step, module in (("copytree", shutil), ("copy2", shutil), ("replace", os), ("rmtree", shutil)):
            def write(*args, _step=step, _real=getattr(module, step), **kwargs):
                if len(done) == at:
                    if partly:
                        _partly(_step, args)
                    raise Killed
                done.append(_step)
                return _real(*args, **kwargs)
            m.setattr(module, step, write)
        try:
            publish.publish(*staged, *out)
        except Killed:
            return f"killed {'during' if partly else 'before'} write #{at}, after {done}"
    return f"not killed: {done}"


def _start(tmp_path: Path, scenario: str) -> tuple[tuple[Path, Path], tuple[Path, Path], dict | None]:
    """(staged pair, published paths, the published pair's bytes or None) for `scenario`."""
    out = (tmp_path / "book" / "nb.ipynb", tmp_path / "book" / "nb")
    if scenario == "replacing a page":
        publish.publish(*_pair(tmp_path / "old", "old-run"), *out)
    return _pair(tmp_path / "new", "new-run"), out, _tree(*out)


@pytest.mark.parametrize("partly", [False, True], ids=["before", "during"])
@pytest.mark.parametrize("scenario, at", [(scenario, at) for scenario, writes in WRITES.items() for at in range(len(writes))],
                         ids=lambda v: v if isinstance(v, str) else f"write {v}")
def test_a_kill_between_any_two_publish_steps_leaves_one_complete_pair(tmp_path, monkeypatch, scenario, at, partly):
    staged, out, old = _start(tmp_path, scenario)
    new = {"nb.ipynb": staged[0].read_bytes(), **{p.name: p.read_bytes() for p in staged[1].iterdir()}}
    what = _killed_publish(monkeypatch, staged, out, at, partly)
    assert what.startswith("killed"), what
    publish.recover(*out)
    survived = _tree(*out)
    assert survived in [old, new], what  # the old pair (None before a first publish) or the new one, never a mix
    assert hidden(out[1].parent) == [], what
    if survived is not None:
        assert publish.problems(out[0]) == [], what
    # and the next publish goes through
    publish.publish(*staged, *out)
    assert _tree(*out) == new and hidden(out[1].parent) == []


@pytest.mark.parametrize("scenario", WRITES)
def test_the_writes_enumerated_are_every_write_of_a_publish(tmp_path, monkeypatch, scenario):
    staged, out, _ = _start(tmp_path, scenario)
    assert _killed_publish(monkeypatch, staged, out, len(WRITES[scenario]), False) == f"not killed: {WRITES[scenario]}"


def test_a_kill_between_the_last_two_renames_keeps_the_new_pair(tmp_path):
    """The state the issue wrote to disk: .previous holds the old results, the new results are in place, the new
    notebook is still .nb.ipynb.incoming. recover() used to delete both the old results and the new notebook."""
    book_dir = tmp_path / "book"
    out_nb, out_dir = book_dir / "nb.ipynb", book_dir / "nb"
    old_nb, old_dir = _pair(book_dir / "x", "old-run")
    new_nb, new_dir = _pair(tmp_path / "new", "new-run")
    os.replace(old_dir, book_dir / ".nb.previous")
    os.replace(old_nb, out_nb)
    os.replace(new_dir, out_dir)
    os.replace(new_nb, book_dir / ".nb.ipynb.incoming")
    (book_dir / "x").rmdir()
    publish.recover(out_nb, out_dir)
    assert publish.notebook_run_id(out_nb) == "new-run" and publish.problems(out_nb) == []
    assert sorted(p.name for p in book_dir.iterdir()) == ["nb", "nb.ipynb"]


# ---------------------------------------------------------------- 6. one run per notebook, one build per book

# another run holding a lock as `lock.held` does (without importing the package, which takes seconds), until a line
# on its stdin (or its end, when the test process goes) lets it go: no test waits on the clock for it
HOLDER = textwrap.dedent("""\
    import fcntl, os, sys
    with open(sys.argv[1], "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(f"process {os.getpid()} (glauber-mlm run ...)\\n")
        fh.flush()
        print("held", flush=True)
        sys.stdin.readline()
""")


def _hold(path: Path) -> subprocess.Popen:
    """Another process holding the lock file `path` (returned once it holds it) until `_release(proc)`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "held\n"
    return proc


def _release(proc: subprocess.Popen) -> None:
    proc.stdin.write("release\n")
    proc.stdin.flush()


def test_a_second_run_of_a_notebook_is_refused_naming_the_process_and_kill_9_leaves_no_stale_lock(world, capsys):
    root = world[1]
    attempt = root / "_build" / "staging" / NAME
    attempt.mkdir(parents=True)
    (attempt / "running.txt").write_text("the first run's attempt")
    holder = _hold(root / "_build" / "locks" / f"{NAME}.lock")
    try:
        assert cli(world, "run", NAME) == 1
        err = capsys.readouterr().err
        assert f"notebook {NAME} is already being executed by process {holder.pid}" in err and "--wait" in err, err
        assert (attempt / "running.txt").exists() and CALLS == []  # the first run's staging folder is untouched
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert cli(world, "run", NAME) == 0 and CALLS == [NAME]  # the lock went with its process


def test_wait_starts_when_the_other_run_is_done(world, monkeypatch, capsys):
    root = world[1]
    holder = _hold(root / "_build" / "locks" / f"{NAME}.lock")
    blocking = []

    def flock(fh, operation):  # the holder lets go only once the run blocks on the lock, whatever the machine's load
        if not operation & fcntl.LOCK_NB:
            blocking.append(operation)
            _release(holder)
        fcntl.flock(fh, operation)

    monkeypatch.setattr(lock, "fcntl", SimpleNamespace(flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB))
    assert cli(world, "run", NAME, "--wait") == 0
    assert blocking == [fcntl.LOCK_EX]  # it found the lock taken and waited for it
    assert f"waiting for process {holder.pid}" in capsys.readouterr().err
    assert holder.wait() == 0 and CALLS == [NAME]


def test_a_second_book_build_is_refused(world, monkeypatch, capsys):
    root = world[1]
    monkeypatch.setattr(command, "build_book", lambda root: pytest.fail("a second build started"))
    holder = _hold(root / "_build" / "locks" / "book.lock")
    try:
        assert cli(world, "book", "--no-execute") == 1
    finally:
        holder.kill()
        holder.wait()
    assert f"the book in {root} is already being executed by process {holder.pid}" in capsys.readouterr().err


def test_the_lock_names_its_holder_only_while_held(tmp_path):
    path = tmp_path / "locks" / "x.lock"
    with lock.held(path, "x"):
        assert path.read_text().startswith(f"process {os.getpid()} (")
    assert path.read_text() == ""


# ---------------------------------------------------------------- 8. Ctrl-C and SIGTERM, syntax errors, a hint

async def _kernel_died():
    raise RuntimeError("Kernel died")


@pytest.mark.parametrize("sig, status, how", [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_ctrl_c_and_sigterm_end_in_one_sentence_with_a_distinct_status(world, monkeypatch, capsys, sig, status, how):
    import papermill

    def execute(src, out, parameters, cwd, **_):  # a kernel that saved a checkpoint, then the signal comes
        checkpoints = Path(os.environ[contract.CHECKPOINTS])
        checkpoints.mkdir(parents=True)
        (checkpoints / "chains.pt").write_bytes(b"steps done so far")
        # as nbclient leaves a real run: the task waiting on the kernel failed ("Kernel died") and nobody retrieves it
        loop = asyncio.new_event_loop()
        dead = loop.create_task(_kernel_died())
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        os.kill(os.getpid(), sig)
        time.sleep(30)
        pytest.fail(f"{sig!r} did not stop the run {dead}")

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    root = world[1]
    logged = []
    handler = logging.Handler()
    handler.emit = logged.append
    logging.getLogger("asyncio").addHandler(handler)
    on_sigterm = signal.getsignal(signal.SIGTERM)
    on_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C; xdist workers ignore it
    try:
        assert cli(world, "run", NAME) == status
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the command's handler is gone with it
    finally:
        signal.signal(signal.SIGINT, on_sigint)
        gc.collect()
        logging.getLogger("asyncio").removeHandler(handler)
    checkpoints = root / "_build" / "checkpoints"
    assert capsys.readouterr().err.splitlines() == [
        f"run stopped by {how}: every page published before is kept and the chains computed so far are saved in "
        f"{checkpoints}, so rerunning the same command resumes from them."]
    assert logged == [] and logging.root.manager.disable == logging.NOTSET  # the dead task said nothing; logging is back
    assert [p.read_bytes() for p in checkpoints.rglob("chains.pt")] == [b"steps done so far"]
    assert signal.getsignal(signal.SIGTERM) == on_sigterm  # the command's handler is gone with it
    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)  # the lock went too: the rerun starts at once
    assert cli(world, "run", NAME) == 0


def test_a_syntax_error_names_the_notebook_file_and_line(world, capsys):
    notebooks, root = world
    src = notebooks / f"{NAME}.py"
    lines = EXAMPLE.splitlines()
    bad = next(k for k, line in enumerate(lines) if line.startswith("table = run.save_table"))
    lines[bad] = "table = run.save_table(pd.DataFrame({'chain': range(3)}, 'magnetisation')"
    src.write_text("\n".join(lines) + "\n")
    assert cli(world, "run", NAME) == 1
    err = capsys.readouterr().err
    assert f"{src}, line {bad + 1}: " in err and "<unknown>" not in err, err
    assert CALLS == []


def test_the_restore_hint_for_a_changed_data_file_works_from_the_repository_root(tmp_path):
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "passages.jsonl").write_text('{"text": "a passage"}\n')
    entry = {"file": "passages.jsonl", "sha256": data.sha256_file(folder / "passages.jsonl")}
    (folder / "MANIFEST.json").write_text(json.dumps({"products": [entry]}))
    (folder / "passages.jsonl").write_text('{"text": "a passagE"}\n')
    with pytest.raises(ValueError, match=r"git checkout -- data/passages\.jsonl, from the repository root"):
        data.verify_product(folder / "passages.jsonl")
