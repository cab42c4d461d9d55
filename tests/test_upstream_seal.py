"""Issue 43, item 4: upstream tables are read through the seal, a reader's cache key follows its upstream's tables,
and git, not a hash inside the page, says whether a published page is the committed one.

- `Run.upstream_table` refuses, naming the fix, a table of a page whose seal no longer holds (05 reading an edited
  `phase_diagram.csv` of 02);
- `cache.upstream_digest` (a part of 05's key) changes when one of 02's tables does;
- `committed.differs_from_git` names the published pages that differ from git's HEAD (even when re-sealed by hand),
  `book` says so for each page it reuses, the dashboard marks them, and without git nothing is said.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from glauber_mlm import contract
from glauber_mlm.book import cache, publish
from glauber_mlm.book.committed import differs_from_git
from glauber_mlm.pages.run import Run

UP, READER = "02_high_temperature_mixing", "05_influence_and_margin"


def _page(folder: Path, name: str = UP) -> Path:
    """A sealed published page of `name` in `folder` (cpu profile, fp32, the embedded model) with 02's tables."""
    results = folder / name
    results.mkdir(parents=True)
    notebook = folder / f"{name}.ipynb"
    notebook.write_text(json.dumps({"metadata": {"glauber_mlm": {"run_id": "r1"}}, "cells": []}))
    for table in contract.READS[READER][UP]:
        (results / f"{table}.csv").write_text("model,median_time\nminilm,12\n")
    (results / "result.json").write_text(json.dumps({"verdict": "reproduced"}))
    contract.write_provenance(results, {"notebook": name, "profile": "cpu", "scale": 1.0, "parameters": {"model": None},
                                        "forward_dtype": "float32", "device": "cpu", "machine": "-", "commit": "-",
                                        "versions": {}, "run_id": "r1", "wall_time_s": 1.0})
    publish.seal(notebook, results)
    assert publish.problems(notebook) == []
    return notebook


def _reader(folder: Path) -> Run:
    return Run(READER, "cpu", {"cpu": dict(model=None, seed=0)}, folder / READER, dtype="float32")


def test_an_upstream_table_is_read_only_while_its_seal_holds(tmp_path):
    _page(tmp_path)
    run = _reader(tmp_path)
    table, source = run.upstream_table(UP, "phase_diagram")
    assert table["median_time"].tolist() == [12] and source.endswith("run r1")
    (tmp_path / UP / "phase_diagram.csv").write_text("model,median_time\nminilm,99\n")
    with pytest.raises(ValueError) as refused:
        run.upstream_table(UP, "phase_diagram")
    message = str(refused.value)
    assert f"{UP}/phase_diagram.csv was edited" in message and f"glauber-mlm book --only {UP}" in message


def test_a_readers_key_changes_when_an_upstream_table_does(tmp_path):
    _page(tmp_path)
    before = cache.upstream_digest(READER, tmp_path)
    (tmp_path / UP / "scaling_fit.csv").write_text("model,median_time\nminilm,13\n")
    assert cache.upstream_digest(READER, tmp_path) != before


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def test_a_page_re_sealed_by_hand_is_named_as_differing_from_git(tmp_path, capsys):
    from glauber_mlm.book.site import write_verdicts

    root = tmp_path / "book-repo"
    pages = root / "book" / "notebooks"
    notebook = _page(pages)
    _page(pages, "03_other")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "pages")
    assert differs_from_git(root, [UP, "03_other"]) == {}
    # the adversary: a verdict changed and the page sealed again, so that its seal holds
    (pages / UP / "result.json").write_text(json.dumps({"verdict": "fails"}))
    publish.seal(notebook, pages / UP)
    assert publish.problems(notebook) == []
    found = differs_from_git(root, [UP, "03_other"])
    assert list(found) == [UP] and f"book/notebooks/{UP}/result.json" in found[UP]

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name in (UP, "03_other"):
        (nbs / f"{name}.py").write_text("# %%\n")
    write_verdicts(root, nbs)
    verdicts = (root / "book" / "_generated" / "verdicts.md").read_text()
    row = next(line for line in verdicts.splitlines() if f"notebooks/{UP}.html" in line)
    assert "differs from the version committed in git" in row
    assert "differs" not in next(line for line in verdicts.splitlines() if "notebooks/03_other.html" in line)

    from glauber_mlm.book.first_screen import write_first_screen

    first = write_first_screen(root, nbs).read_text()
    assert next(line for line in first.splitlines() if f"notebooks/{UP}.html" in line).count(
        "differs from the version committed in git") == 1
    assert "differs" not in next(line for line in first.splitlines() if "notebooks/03_other.html" in line)

    shutil.rmtree(root / ".git")  # no git here: nothing is said, nothing fails
    assert differs_from_git(root, [UP]) == {}


def test_book_says_which_reused_page_differs_from_git(tmp_path, monkeypatch, capsys):
    import papermill

    from glauber_mlm.book import command
    from glauber_mlm.cli import main as cli_main
    from test_faults import NAME, fake_execute
    from test_book import EXAMPLE

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    monkeypatch.setattr(command, "build_book", lambda r, **_: Path(r) / "index.html")
    root, nbs = tmp_path / "root", tmp_path / "nbs"
    nbs.mkdir()
    (nbs / f"{NAME}.py").write_text(EXAMPLE)
    book = ["book", "--profile", "smoke", "--notebooks", str(nbs), "--root", str(root)]
    assert cli_main(book) == 0
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "pages")
    capsys.readouterr()
    assert cli_main(book) == 0
    assert "differs from the version committed in git" not in capsys.readouterr().out
    results = root / "book" / "notebooks" / NAME
    (results / "table.csv").write_text("run\nforged\n")
    publish.seal(results.with_suffix(".ipynb"), results)
    assert cli_main(book) == 0
    out = capsys.readouterr().out
    assert f"{NAME}: the published page differs from the version committed in git" in out
    assert f"book/notebooks/{NAME}/table.csv" in out
