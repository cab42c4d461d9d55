"""Issue 34, item 5: trying is not publishing.

`glauber-mlm run/book` with a profile other than the book's own (`cpu`) or with `--model` writes to the scratch root
`_build/runs/PROFILE-MODEL/` and says where; the published pages in book/notebooks/ are untouched unless `--publish`
is given; `--root DIR` writes to DIR.
"""
from __future__ import annotations

import subprocess
from argparse import Namespace
from pathlib import Path

import pytest

from glauber_mlm.book import REPO, main as cli_main
from glauber_mlm.book.command import BOOK_PROFILE, is_try, model_label, scratch_root, target_root
from test_book import EXAMPLE


def args(profile=None, model=None, root=None, publish=False) -> Namespace:
    return Namespace(profile=profile, model=model, root=root, publish=publish)


@pytest.mark.parametrize("model, label", [(None, "default"), ("roberta-base", "roberta-base"),
                                          ("google/bert_uncased_L-2", "bert_uncased_L-2"),
                                          ("/home/me/models/my-model/", "my-model"), ("odd name!", "odd_name")])
def test_a_model_is_named_by_the_last_part_of_its_name(model, label):
    assert model_label(model) == label


def test_only_another_profile_or_a_model_is_a_try(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a book: the default root is the repository
    assert BOOK_PROFILE == "cpu" and not is_try(args()) and not is_try(args("cpu"))
    assert is_try(args("smoke")) and is_try(args("paper")) and is_try(args("cpu", "my-model"))
    assert target_root(args()) == REPO and target_root(args("cpu")) == REPO
    assert target_root(args("smoke")) == REPO / "_build" / "runs" / "smoke-default"
    assert target_root(args(model="x/my-model")) == scratch_root(REPO, "cpu", "my-model")
    assert target_root(args("paper", "roberta-base")) == REPO / "_build" / "runs" / "paper-roberta-base"
    assert target_root(args("smoke", publish=True)) == REPO  # --publish replaces the published pages
    assert target_root(args("smoke", root=tmp_path / "r")) == tmp_path / "r"  # --root writes where it says


def _tracked_changes() -> str:
    """`git status` of the published pages of the repository (empty: untouched)."""
    return subprocess.run(["git", "status", "--porcelain", "--", "book/notebooks"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def test_a_smoke_run_goes_to_the_scratch_root_and_leaves_the_published_page(tmp_path, monkeypatch, capsys):
    """A book in tmp_path (the command's default root there) with a published page: a smoke run of it does not touch
    that page, nor any tracked page of the repository; with --publish it replaces it."""
    book_dir, nbs = tmp_path / "mybook", tmp_path / "mybook" / "notebooks"
    nbs.mkdir(parents=True)
    (book_dir / "_config.yml").write_text("title: a book\n")
    (nbs / "99_example.py").write_text(EXAMPLE)
    published = book_dir / "book" / "notebooks" / "99_example.ipynb"
    published.parent.mkdir(parents=True)
    published.write_text("the committed cpu page")
    monkeypatch.chdir(book_dir)
    before = _tracked_changes()

    assert cli_main(["run", "99_example", "--notebooks", str(nbs), "--profile", "smoke"]) == 0
    scratch = (book_dir / "_build" / "runs" / "smoke-default").resolve()
    out = capsys.readouterr().out
    assert f"trying, not publishing (profile smoke): writing to {scratch}" in out and "--publish" in out
    assert (scratch / "book" / "notebooks" / "99_example" / "magnetisation.csv").is_file()
    assert published.read_text() == "the committed cpu page" and not (published.parent / "99_example").exists()
    assert _tracked_changes() == before

    assert cli_main(["run", "99_example", "--notebooks", str(nbs), "--profile", "smoke", "--publish"]) == 0
    assert "trying" not in capsys.readouterr().out
    assert published.read_text() != "the committed cpu page" and (published.parent / "99_example").is_dir()

