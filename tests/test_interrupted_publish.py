"""Issue 43, item 5: `book` and `verify` finish (or undo) a publish that was interrupted between its renames before
they read the pages, and say so, instead of calling the page incomplete and asking to re-execute it.

Papermill is replaced by `test_faults.fake_execute`; the book's build (jupyter-book) by its first step, the check
that every published page is a complete run (`publish.check_published`).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from glauber_mlm.book import command, publish
from test_faults import CALLS, NAME, cli, world  # noqa: F401 - world is a fixture


@pytest.mark.parametrize("after, kept", [(3, "old"), (4, "new")])
@pytest.mark.parametrize("command_line", [["book"], ["verify", "--only", NAME]], ids=["book", "verify"])
def test_an_interrupted_publish_is_finished_or_undone_before_the_pages_are_read(world, monkeypatch, capsys, after,
                                                                                kept, command_line):
    notebooks, root = world
    monkeypatch.setattr(command, "build_book", lambda r, **_: publish.check_published(
        sorted((Path(r) / "book" / "notebooks").glob("*.ipynb"))) or Path(r) / "index.html")
    assert cli(world, "run", NAME) == 0
    pages = root / "book" / "notebooks"
    out_nb, out_dir = pages / f"{NAME}.ipynb", pages / NAME
    ids = {"old": publish.notebook_run_id(out_nb)}
    shutil.copytree(out_dir, root / "old")
    shutil.copy2(out_nb, root / "old.ipynb")
    assert cli(world, "run", NAME, "--publish") == 0
    ids["new"] = publish.notebook_run_id(out_nb)
    # the disk as a kill left it: the old results aside, the new ones hidden (3) or in place (4)
    os.replace(out_nb, pages / f".{NAME}.ipynb.incoming")
    shutil.copy2(root / "old.ipynb", out_nb)
    os.replace(root / "old", pages / f".{NAME}.previous")
    if after == 3:
        os.replace(out_dir, pages / f".{NAME}.incoming")
    capsys.readouterr()
    CALLS.clear()

    rc = cli_command(world, command_line)
    out, err = capsys.readouterr()
    said = {"old": "undone: the previous page is back", "new": "finished: the new page is published"}[kept]
    assert f"{NAME}: an interrupted publish was {said}" in out
    assert "provenance.json is missing" not in out + err and "different runs" not in out + err
    assert publish.problems(out_nb) == [] and publish.notebook_run_id(out_nb) == ids[kept]
    assert sorted(p.name for p in pages.iterdir() if p.name.startswith(".")) == []
    if command_line == ["book"]:
        assert rc == 0 and NAME not in CALLS  # the whole page is reused, not re-executed


def cli_command(world, command_line: list[str]) -> int:
    from glauber_mlm.cli import main as cli_main

    notebooks, root = world
    if command_line[0] == "verify":
        return cli_main([*command_line, "--notebooks", str(notebooks), "--root", str(root),
                         "--scratch", str(root.parent / "scratch")])
    return cli(world, *command_line)
