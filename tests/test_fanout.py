"""`glauber-mlm book --workers N`: the notebooks as Dask tasks, with the serial path's tables, failures and order."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from glauber_mlm import book
from glauber_mlm.book import command, fanout
from glauber_mlm.book.errors import BookError
from glauber_mlm.cli import main as cli_main
from test_book import EXAMPLE

UPSTREAM, DOWNSTREAM = "02_high_temperature_mixing", "05_influence_and_margin"


# ---------------------------------------------------------------- scheduling, with fake tasks (no kernel)

CALLS: dict[str, int] = {}


SIDE_BY_SIDE = threading.Barrier(2)


def fake_task(name: str, *upstream) -> tuple[float, float, bool]:
    """(start, end, whether it met the other) of a task: the upstream notebook's and 00_other's each wait until both
    have started (a barrier, not a sleep: on a loaded machine a sleep would not show that the two ran side by side),
    or until a generous wait says they did not."""
    start = time.monotonic()
    met = False
    if name in (UPSTREAM, "00_other"):
        try:
            SIDE_BY_SIDE.wait(timeout=300)
            met = True
        except threading.BrokenBarrierError:
            pass
    return start, time.monotonic(), met


def own_name(name: str, *upstream) -> str:
    return name


def failing_upstream(name: str, *upstream) -> str:
    CALLS[name] = CALLS.get(name, 0) + 1
    if name == UPSTREAM:
        raise BookError(f"{name} failed in its first cell after the parameters: ValueError: no")
    return "ok"


def flaky_task(name: str, *upstream) -> int:
    """Fails on its first call, succeeds on its second."""
    CALLS[name] = CALLS.get(name, 0) + 1
    if CALLS[name] == 1:
        raise RuntimeError("a worker hiccup")
    return CALLS[name]


@pytest.fixture(scope="module")
def client():
    """Two one-thread workers in this process: the fake tasks share CALLS and the clock with the test."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def test_the_dependency_list_is_explicit():
    assert fanout.DEPENDS_ON == {DOWNSTREAM: (UPSTREAM,)}


def test_a_downstream_notebook_starts_after_its_upstream_finished(client):
    SIDE_BY_SIDE.reset()
    # listed downstream first: submission follows the dependencies, not the list
    results = {name: times for name, times, error in fanout.completed(client, [DOWNSTREAM, "00_other", UPSTREAM], fake_task)}
    assert results[DOWNSTREAM][0] >= results[UPSTREAM][1]
    # 00_other ran on the other worker while the upstream notebook ran
    assert results[UPSTREAM][2] and results["00_other"][2]


def test_without_its_upstream_in_the_build_a_notebook_does_not_wait(client):
    results = {name: result for name, result, error in fanout.completed(client, [DOWNSTREAM, "00_other"], own_name)}
    assert results == {DOWNSTREAM: DOWNSTREAM, "00_other": "00_other"}


def test_a_failed_task_is_retried_once_then_reported_and_its_dependents_are_named(client):
    CALLS.clear()
    outcome = {name: (result, error) for name, result, error in
               fanout.completed(client, [UPSTREAM, DOWNSTREAM, "00_other"], failing_upstream)}
    assert CALLS == {UPSTREAM: 2, "00_other": 1}
    assert outcome["00_other"] == ("ok", None)
    assert outcome[UPSTREAM] == (None, f"{UPSTREAM} failed in its first cell after the parameters: ValueError: no")
    assert outcome[DOWNSTREAM][1].startswith(f"{DOWNSTREAM} was not executed: it reads the tables of {UPSTREAM}, which failed")


def test_a_task_that_fails_once_succeeds_on_its_retry(client):
    CALLS.clear()
    assert list(fanout.completed(client, ["00_other"], flaky_task)) == [("00_other", 2, None)]


# ---------------------------------------------------------------- the command's options (no kernel, no cluster)


def _refused(tmp_path, capsys, options: list[str]) -> str:
    """The error of `book` with `options` over one example notebook; nothing may have been executed."""
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "91_a.py").write_text(EXAMPLE.replace('Run("99_example"', 'Run("91_a"'))
    assert cli_main(["book", "--profile", "smoke", "--notebooks", str(nbs), "--root", str(tmp_path / "root"), *options]) == 1
    assert not (tmp_path / "root" / "book" / "notebooks").exists()
    return capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    (["--workers", "0"], "--workers must be >= 1"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "give only one of them"),
    (["--gpus-per-task", "1"], "--gpus-per-task is for Dask tasks"),
    (["--workers", "2", "--profile", "smok"], "unknown profile 'smok'"),
    (["--scheduler", "tcp://127.0.0.1:1"], "no Dask scheduler answers at tcp://127.0.0.1:1"),
])
def test_bad_options_are_refused_before_any_task(tmp_path, capsys, monkeypatch, options, message):
    monkeypatch.setattr(fanout, "CONNECT_TIMEOUT_S", 1)
    assert message in _refused(tmp_path, capsys, options)


def test_a_cluster_without_the_gpus_a_task_asks_for_is_refused(client, tmp_path, capsys):
    err = _refused(tmp_path, capsys, ["--scheduler", client.scheduler.address, "--gpus-per-task", "1"])
    assert "no worker holds that many: start the workers with --resources GPU=1" in err


def test_workers_with_several_threads_are_refused(tmp_path, capsys):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        err = _refused(tmp_path, capsys, ["--scheduler", cluster.scheduler_address])
    assert "start the workers with --nthreads 1" in err


def test_a_local_cluster_shares_the_cores_out_among_its_kernels(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # conftest's one thread would hide the cluster's choice
    cores = len(os.sched_getaffinity(0))
    with fanout.dask_client(1, None, 0) as client:  # Dask's workers alone would say 1
        assert set(client.run(lambda: os.environ["OMP_NUM_THREADS"]).values()) == {str(cores)}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's choice stands
    with fanout.dask_client(1, None, 0) as client:
        assert set(client.run(lambda: os.environ["OMP_NUM_THREADS"]).values()) == {"3"}


# ---------------------------------------------------------------- real notebooks on a 2-process LocalCluster

NAMES = ("91_a", "92_b", "93_c")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_id(notebook: Path) -> str:
    return json.loads(notebook.read_text())["metadata"]["glauber_mlm"]["run_id"]


@pytest.mark.slow  # six kernels and a cluster of two processes
def test_workers_publish_the_serial_tables_and_a_failing_notebook_keeps_its_page(tmp_path, capsys, monkeypatch):
    # the Jupyter Book build is the serial path's, and the prose pages link the real notebooks: not built here
    monkeypatch.setattr(command, "build_book", lambda root: Path(root) / "_build" / "html" / "index.html")
    nbs, serial, parallel = tmp_path / "notebooks", tmp_path / "serial", tmp_path / "parallel"
    nbs.mkdir()
    for name in NAMES:
        (nbs / f"{name}.py").write_text(EXAMPLE.replace('Run("99_example"', f'Run("{name}"'))
        out = serial / "book" / "notebooks" / f"{name}.ipynb"
        book.run_notebook(name, out, out.with_suffix(""), {"profile": "smoke"}, notebooks_dir=nbs, progress=False)
    published = parallel / "book" / "notebooks"
    shutil.copytree(serial / "book" / "notebooks", published)
    before = _files(published)
    broken = EXAMPLE.replace('Run("99_example"', 'Run("93_c"').replace("# %%\nrun.finish()", "# %%\nraise RuntimeError('deliberately broken')\nrun.finish()")
    (nbs / "93_c.py").write_text(broken)

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # conftest's one thread would hide the cluster's choice
    rc = cli_main(["book", "--profile", "smoke", "--workers", "2", "--force", "--notebooks", str(nbs), "--root", str(parallel)])

    out, err = capsys.readouterr()
    assert rc == 1
    assert "93_c failed in its" in err and "RuntimeError: deliberately broken" in err
    assert "1 notebook(s) failed: 93_c" in err
    assert "executing 3 notebook(s) on a local cluster of 2 worker processes" in out
    for name in ("91_a", "92_b"):  # re-executed on the cluster, same tables as the serial run
        assert _run_id(published / f"{name}.ipynb") != _run_id(serial / "book" / "notebooks" / f"{name}.ipynb")
        assert (published / name / "magnetisation.csv").read_bytes() == (serial / "book" / "notebooks" / name / "magnetisation.csv").read_bytes()
        # two kernels side by side share the cores out instead of each spinning on all of them
        machine = json.loads((published / name / "provenance.json").read_text())["machine"]
        assert machine.endswith(f", {max(1, len(os.sched_getaffinity(0)) // 2)} CPU threads"), machine
    failed = {k: v for k, v in _files(published).items() if k.startswith("93_c")}
    assert failed == {k: v for k, v in before.items() if k.startswith("93_c")}
    assert (parallel / "_build" / "staging" / "93_c" / "93_c.ipynb").is_file()
    execution = (parallel / "book" / "_generated" / "execution.md").read_text()
    assert execution.count("| ok | executed |") == 2 and "| ok | reused (commit" in execution
