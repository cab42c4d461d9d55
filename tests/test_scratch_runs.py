"""Issue 34, item 5: trying is not publishing.

`glauber-mlm run/book` with a profile other than the book's own (`cpu`) or with `--model` writes to the scratch root
`_build/runs/PROFILE-MODEL/` and says where; the published pages in book/notebooks/ are untouched unless `--publish`
is given; `--root DIR` writes to DIR. A smoke page says "smoke test, not a result" in place of a verdict, and a page
run on a model the book does not know says so, with a word that claims nothing of the paper's result.
"""
from __future__ import annotations

import json
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
    page = scratch / "_build" / "html" / "book" / "notebooks" / "99_example.html"
    assert f"to see it: glauber-mlm book --no-execute --root {scratch}, then open {page}" in out
    assert (scratch / "book" / "notebooks" / "99_example" / "magnetisation.csv").is_file()
    assert published.read_text() == "the committed cpu page" and not (published.parent / "99_example").exists()
    assert _tracked_changes() == before

    assert cli_main(["run", "99_example", "--notebooks", str(nbs), "--profile", "smoke", "--publish"]) == 0
    assert "trying" not in capsys.readouterr().out
    assert published.read_text() != "the committed cpu page" and (published.parent / "99_example").is_dir()


# ---------------------------------------------------------------- what a try's page says in place of a verdict


def _conclude(tmp_path, profile: str, **given) -> dict:
    """result.json of a page of `profile` (its model None, as the cpu book's) with one passing, one failing check."""
    from test_verdict import check

    from glauber_mlm.pages.run import Run

    profiles = {p: dict(model=None, seed=0) for p in ("smoke", "cpu")} | {"paper": dict(model="roberta-base", seed=0)}
    run = Run("99_test", profile, profiles, tmp_path / "out", **given)
    run.conclude("a claim", {"x": "1"}, [check(True, name="x > 0"), check(False, name="x < 2")])
    return json.loads((tmp_path / "out" / "result.json").read_text())


def test_a_smoke_page_says_smoke_test_not_a_result_in_place_of_a_verdict(tmp_path):
    from test_verdict import check

    from glauber_mlm.pages.verdict import box_markdown, judge

    result = _conclude(tmp_path, "smoke")
    assert result["verdict"] == "smoke test, not a result" and result["checks_verdict"] == "not reproduced"
    checks = [check(True), check(False)]
    box = box_markdown("claim", "build", {}, checks, judge(checks), smoke=True)
    assert box.startswith("**Verdict: smoke test, not a result** (the smoke profile only tests the code path; its "
                          "checks: not reproduced")  # the checks' word is shown as theirs, not as the page's verdict


@pytest.mark.parametrize("model", ["my-model", "/somewhere/random-weights"])
def test_a_page_run_on_a_model_the_book_does_not_know_claims_nothing_of_the_paper(tmp_path, model):
    from test_verdict import check

    from glauber_mlm.pages.verdict import box_markdown, judge

    result = _conclude(tmp_path, "cpu", model=model)
    assert result["verdict"] == f"checks on {model}: 1 pass, 1 fail" and result["unknown_models"] == [model]
    checks = [check(True), check(True)]  # even where every check passes, no "reproduced"
    box = box_markdown("claim", "build", {}, checks, judge(checks), unknown=(model,))
    headline = box.split("\n")[0]
    assert headline.startswith(f"**Verdict: checks on {model}: 2 pass, 0 fail.**") and "Verdict: reproduced" not in box
    assert (f"Run on {model}, a model this book does not know: the checks ran, but no verdict claims the paper's "
            "result for it.") in headline


@pytest.mark.parametrize("profile, model", [("cpu", None), ("cpu", "minilm6-mlm"), ("paper", None),
                                            ("cpu", "roberta-base")])
def test_the_book_knows_its_embedded_models_and_those_its_profiles_name(tmp_path, profile, model):
    result = _conclude(tmp_path, profile, model=model)
    assert result["verdict"] == "not reproduced" and result["unknown_models"] == []
