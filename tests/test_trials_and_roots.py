"""Issue 43, items 1 and 2: nothing is written outside the project's `_build/` or a `--root` the user names, nothing
of the user's is overwritten, and every trial (a run whose inputs differ from the published page's) goes to the
scratch root unless `--publish`.

Papermill is replaced by `test_faults.fake_execute` (what a finished run leaves, no kernel) except in the one test
that runs a real kernel at `--scale`.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from glauber_mlm.book import command, prepare_root
from glauber_mlm.cli import main as cli_main
from test_book import DECLARED_ONCE
from test_faults import fake_execute

NAME = "98_declared_once"
# the template with BUDGETS, so that --scale applies, and a model key, so that --model does
SCALABLE = (DECLARED_ONCE.replace('dict(models=["ising"]', 'dict(model=None, models=["ising"]')
            .replace("PROFILES = {", "BUDGETS = dict(steps=4)\nPROFILES = {")
            .replace("overrides=globals())", "budgets=BUDGETS, overrides=globals())"))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def mybook(tmp_path, monkeypatch) -> Path:
    """A book (the command's default root once we are in it) with one notebook and its published page."""
    book_dir = tmp_path / "mybook"
    (book_dir / "notebooks").mkdir(parents=True)
    (book_dir / "_config.yml").write_text("title: a book\n")
    (book_dir / "notebooks" / f"{NAME}.py").write_text(SCALABLE)
    published = book_dir / "book" / "notebooks"
    (published / NAME).mkdir(parents=True)
    (published / f"{NAME}.ipynb").write_text("the committed cpu page")
    (published / NAME / "result.json").write_text('{"verdict": "reproduced"}')
    monkeypatch.chdir(book_dir)
    return book_dir


def _run(book_dir: Path, *flags: str) -> int:
    return cli_main(["run", NAME, "--notebooks", str(book_dir / "notebooks"), *flags])


# ---------------------------------------------------------------- 2. every trial is a trial


@pytest.mark.parametrize("flags", [["--scale", "0.5"], ["-p", "steps", "7"], ["--dtype", "float32"],
                                   ["--profile", "smoke"], ["--model", "my-model"]],
                         ids=["scale", "parameter", "dtype", "profile", "model"])
def test_a_run_whose_inputs_differ_from_the_published_page_goes_to_the_scratch_root(mybook, flags, monkeypatch, capsys):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    published = mybook / "book" / "notebooks"
    before = _snapshot(published)
    assert _run(mybook, *flags) == 0
    out = capsys.readouterr().out
    assert "trying, not publishing" in out and "--publish replaces them" in out
    assert _snapshot(published) == before
    runs = mybook / "_build" / "runs"
    assert [p.name for p in runs.iterdir()] and list(runs.glob(f"*/book/notebooks/{NAME}/provenance.json"))
    assert _run(mybook, *flags, "--publish") == 0  # --publish replaces the published page
    assert "trying" not in capsys.readouterr().out
    assert (published / f"{NAME}.ipynb").read_text() != "the committed cpu page"


def test_a_dry_run_with_a_real_kernel_leaves_the_published_page(mybook, capsys):
    published = mybook / "book" / "notebooks"
    before = _snapshot(published)
    assert _run(mybook, "--profile", "cpu", "--scale", "0.01") == 0
    assert _snapshot(published) == before
    assert list((mybook / "_build" / "runs").glob(f"*/book/notebooks/{NAME}/magnetisation.csv"))


# ---------------------------------------------------------------- 1. nothing written outside, nothing overwritten


def test_a_root_holding_the_users_own_files_is_refused_before_any_copy(tmp_path, capsys):
    root = tmp_path / "mine"
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("title: my own book\n")
    (root / "book" / "intro.md").write_text("# my own intro\n")
    before = _snapshot(root)
    assert cli_main(["run", NAME, "--notebooks", str(tmp_path), "--root", str(root)]) == 1  # unknown notebook
    assert _snapshot(root) == before and sorted(p.name for p in root.iterdir()) == ["_config.yml", "book"]
    capsys.readouterr()
    (tmp_path / f"{NAME}.py").write_text(SCALABLE)
    assert cli_main(["run", NAME, "--notebooks", str(tmp_path), "--root", str(root), "--profile", "smoke"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "_config.yml" in err and "book/intro.md" in err and "--root" in err
    assert _snapshot(root) == before and sorted(p.name for p in root.iterdir()) == ["_config.yml", "book"]


def test_a_root_the_book_prepared_is_refreshed_but_a_file_edited_there_is_kept(tmp_path):
    root = prepare_root(tmp_path / "r")
    assert prepare_root(root) == root  # its own files: refreshed
    (root / "book" / "intro.md").write_text("# edited by hand\n")
    with pytest.raises(command.BookError, match="book/intro.md"):
        prepare_root(root)
    assert (root / "book" / "intro.md").read_text() == "# edited by hand\n"


def test_an_unknown_notebook_with_a_root_leaves_the_root_untouched(tmp_path):
    root = tmp_path / "new-root"
    (tmp_path / "nbs").mkdir()
    assert cli_main(["run", "no_such_notebook", "--notebooks", str(tmp_path / "nbs"), "--root", str(root)]) == 1
    assert not root.exists()


@pytest.mark.parametrize("command_line", [["book", "--no-execute"], ["run", NAME]], ids=["book", "run"])
@pytest.mark.parametrize("profile", ["ABS", "../../elsewhere", "a/b", "", "smoke\n"])
def test_a_profile_that_is_not_a_name_is_refused_before_it_becomes_a_path(mybook, tmp_path, command_line, profile,
                                                                           capsys):
    profile = str(tmp_path / "outside") if profile == "ABS" else profile
    before = {p for p in tmp_path.rglob("*")}
    assert cli_main([*command_line, "--notebooks", str(mybook / "notebooks"), "--profile", profile]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "profile" in err
    assert {p for p in tmp_path.rglob("*")} == before  # nothing created, inside the book or beside it


def test_a_run_with_another_root_and_an_unknown_profile_creates_nothing(mybook, tmp_path, capsys):
    other = tmp_path / "OTHER"
    assert _run(mybook, "--profile", "gpu", "--root", str(other)) == 1
    assert "unknown profile 'gpu'" in capsys.readouterr().err and not other.exists()
    assert _run(mybook, "--profile", str(other)) == 1 and not other.exists()
    assert not (mybook / "_build").exists()


@pytest.mark.parametrize("model", ["../../../x", "/abs/my model!", "roberta-base", "org/name"])
def test_a_scratch_folder_is_named_by_a_slug_of_the_profile_and_model(tmp_path, model):
    folder = command.scratch_root(tmp_path, "smoke", model)
    assert folder.parent == tmp_path / "_build" / "runs"
    assert all(c.isalnum() or c in "._-" for c in folder.name) and not folder.name.startswith(".")
    assert os.path.realpath(folder).startswith(os.path.realpath(tmp_path / "_build" / "runs") + os.sep)
