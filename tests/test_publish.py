"""A failed run never destroys a good one: typos, bad parameters, failing cells and SIGKILL leave the published
page and results byte-identical, and a page from an incomplete run fails the build."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glauber_mlm import book, contract
from glauber_mlm.book import publish
from glauber_mlm.cli import main as cli_main
from glauber_mlm.pages.run import Run
from test_book import EXAMPLE

NAME = "99_example"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every published byte under book/notebooks (what a failed run must not change)."""
    base = root / "book" / "notebooks"
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory) -> Path:
    """The template notebook, one whose last cell raises, and one that never ends after saving its table (until the
    test kills it, whatever the machine's load)."""
    d = tmp_path_factory.mktemp("notebooks")
    (d / f"{NAME}.py").write_text(EXAMPLE)
    (d / "98_fails.py").write_text(EXAMPLE.replace('Run("99_example"', 'Run("98_fails"')
                                   .replace("run.finish()", "raise RuntimeError('boom in the last cell')"))
    (d / "97_slow.py").write_text(EXAMPLE.replace('Run("99_example"', 'Run("97_slow"')
                                  .replace("run.finish()", "import threading; threading.Event().wait()\nrun.finish()"))
    return d


@pytest.fixture(scope="module")
def published(tmp_path_factory, notebooks) -> Path:
    """A root where 99_example and 98_fails/97_slow (as the template) were published once, successfully."""
    root = tmp_path_factory.mktemp("root")
    for name in (NAME, "98_fails", "97_slow"):
        good = notebooks / "good" / f"{name}.py"
        good.parent.mkdir(exist_ok=True)
        good.write_text(EXAMPLE.replace('Run("99_example"', f'Run("{name}"'))
        assert cli_main(["run", name, "--notebooks", str(good.parent), "--root", str(root), "--profile", "smoke"]) == 0
    return root


def cli(notebooks: Path, root: Path, *args: str) -> int:
    return cli_main([*args, "--notebooks", str(notebooks), "--root", str(root)])


@pytest.mark.parametrize("args", [
    ["book", "--profile", "papr"],                                 # a typo'd profile
    ["run", NAME, "--profile", "smoke", "-p", "steps", "2.5"],     # a float where an integer is wanted
    ["run", NAME, "--profile", "smoke", "-p", "chains", "0"],      # outside the range every profile keeps
    ["run", NAME, "--profile", "smoke", "-p", "steppes", "4"],     # an undeclared parameter
    ["run", NAME, "--model", "./no-such-folder"],                  # a model folder that does not exist
])
def test_bad_input_is_refused_before_a_kernel_and_changes_nothing(published, notebooks, args, capsys):
    before = snapshot(published)
    attempts = sorted((published / "_build" / "staging").glob("*"))
    assert cli(notebooks, published, *args) == 1
    err = capsys.readouterr().err
    assert "error:" in err and ("profile 'papr'" in err or "parameter" in err or "no model folder" in err), err
    assert snapshot(published) == before
    assert sorted((published / "_build" / "staging").glob("*")) == attempts  # no kernel was started


def test_a_failing_cell_keeps_the_previous_page_and_says_where_the_attempt_is(published, notebooks, capsys):
    before = snapshot(published)
    assert cli(notebooks, published, "run", "98_fails", "--profile", "smoke") == 1
    err = capsys.readouterr().err
    attempt = published / "_build" / "staging" / "98_fails" / "98_fails.ipynb"
    assert "boom in the last cell" in err and str(attempt) in err and "unchanged" in err
    assert attempt.is_file()
    assert snapshot(published) == before


def test_sigkill_mid_run_keeps_the_previous_page_and_the_build_refuses_its_partial_notebook(published, notebooks):
    before = snapshot(published)
    staged_table = published / "_build" / "staging" / "97_slow" / "97_slow" / "magnetisation.csv"
    proc = subprocess.Popen([sys.executable, "-m", "glauber_mlm.cli", "run", "97_slow", "--profile", "smoke",
                             "--notebooks", str(notebooks), "--root", str(published)],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not staged_table.exists():  # the kernel has saved its table and waits in the last cell
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert snapshot(published) == before
    # what an older tool did: the killed run's notebook lands in the book beside the previous results
    other = published.parent / f"{published.name}-killed"
    shutil.copytree(published, other)
    partial = published / "_build" / "staging" / "97_slow" / "97_slow.ipynb"
    if partial.exists():  # papermill writes the notebook as cells finish; a kill mid-write leaves it truncated
        shutil.copy2(partial, other / "book" / "notebooks" / "97_slow.ipynb")
    else:
        (other / "book" / "notebooks" / "97_slow" / "provenance.json").unlink()
    with pytest.raises(book.BookError, match="97_slow: .*(different runs|missing|raised|cannot be read)"):
        book.build_book(other, quiet=True)
    assert cli(notebooks, other, "book", "--no-execute") == 1


def test_an_interrupted_publish_is_undone_by_the_next_run(tmp_path):
    out_nb, out_dir = tmp_path / "nb.ipynb", tmp_path / "nb"
    out_dir.mkdir()
    (out_dir / "table.csv").write_text("old\n")
    # killed between "old folder set aside" and "new folder moved in"
    os.replace(out_dir, tmp_path / ".nb.previous")
    (tmp_path / ".nb.incoming").mkdir()
    (tmp_path / ".nb.ipynb.incoming").write_text("{}")
    publish.recover(out_nb, out_dir)
    assert (out_dir / "table.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb"]


def test_completeness_check_names_each_fault(tmp_path):
    nb, results = tmp_path / "x.ipynb", tmp_path / "x"
    results.mkdir()
    nb.write_text(json.dumps({"metadata": {"glauber_mlm": {"run_id": "a"}}, "cells": []}))
    assert any("missing" in p for p in publish.problems(nb))
    prov = {**{k: "" for k in contract.REQUIRED}, "scale": 1.0, "parameters": {}, "versions": {}, "wall_time_s": 1.0}
    (results / "provenance.json").write_text(json.dumps({**prov, "run_id": "b"}))
    assert any("different runs" in p for p in publish.problems(nb))
    (results / "provenance.json").write_text(json.dumps({**prov, "run_id": "a"}))
    publish.seal(nb, results)
    assert publish.problems(nb) == []
    nb.write_text(json.dumps({"metadata": {"glauber_mlm": {"run_id": "a"}, "papermill": {"exception": True}}}))
    publish.seal(nb, results)
    assert publish.problems(nb) == ["a cell raised while it executed"]


def test_upstream_tables_are_used_only_for_the_same_model_profile_scale_and_dtype(tmp_path, monkeypatch):
    monkeypatch.delenv(contract.RESULTS, raising=False)
    monkeypatch.setattr(contract, "READS", {"05_down": {"02_up": ("phase",), "03_absent": ("phase",)}})
    profiles = {"cpu": dict(model=None), "smoke": dict(model=None)}
    upstream = tmp_path / "02_up"
    upstream.mkdir()
    (upstream / "phase.csv").write_text("temperature,median_time\n1.0,5\n")
    run = Run("05_down", "cpu", profiles, tmp_path / "05_down")
    prov = {**run.provenance(), "notebook": "02_up"}
    (tmp_path / "02_up.ipynb").write_text("{}")

    def published(provenance: dict) -> None:  # as the runner publishes it: sealed (an unsealed table is refused)
        (upstream / "provenance.json").write_text(json.dumps(provenance))
        publish.seal(tmp_path / "02_up.ipynb", upstream)

    published(prov)
    table, source = run.upstream_table("02_up", "phase")
    assert table is not None and list(table.columns) == ["temperature", "median_time"] and "02_up/phase.csv" in source
    for change, word in ((dict(profile="smoke"), "profile"), (dict(scale=0.01), "scale"),
                         (dict(parameters={"model": "roberta-base"}), "model"),
                         (dict(forward_dtype="bfloat16" if run.forward_dtype() == "float32" else "float32"), "forward dtype")):
        published({**prov, **change})
        table, why = run.upstream_table("02_up", "phase")
        assert table is None and word in why, why
    for models, used in (([None, "minilm6-mlm"], True), (["minilm6-mlm"], False)):
        published({**prov, "parameters": {"models": models}})
        table, why = run.upstream_table("02_up", "phase")
        assert (table is not None) == used, why
    table, why = run.upstream_table("03_absent", "phase")
    assert table is None and "no published" in why
