"""Issue 34, item 6: a resumed run says so, and the resume state of every parameter set survives another's publish.

A chain that starts from its checkpoint prints "resuming glauber from its checkpoint at step s of S" on stderr (where
its progress bar is); the runner, before the kernel starts, prints "resuming NAME from its checkpoints in DIR". After
a run publishes, only its own checkpoint folder (`_build/checkpoints/NAME/<inputs key>/`) is removed.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from glauber_mlm import book
from glauber_mlm.book import cache
from glauber_mlm.book.execute import announce_resume, prepare_parameters, remove_checkpoints
from test_book import EXAMPLE
from test_checkpoint import RUNS, count_forwards, potts


@pytest.mark.parametrize("kind", ["glauber", "coupling"])
def test_a_chain_resumed_from_its_checkpoint_says_from_which_step(tmp_path, capsys, kind):
    run, path = RUNS[kind], tmp_path / "run.pt"
    stopping = potts()
    count_forwards(stopping, stop_after=40)
    with pytest.raises(KeyboardInterrupt):
        run(stopping, path)
    assert "resuming" not in capsys.readouterr().err  # a fresh start says nothing of the kind
    saved = int(torch.load(path, weights_only=True)["step"])
    run(potts(), path)
    err = capsys.readouterr().err
    total = 300 if kind == "glauber" else 3000
    assert re.search(rf"resuming {kind} from its checkpoint at step {saved} of {total} \(.*run\.pt\)", err), err


def test_the_runner_says_it_resumes_only_where_checkpoints_are(tmp_path, capsys):
    folder = tmp_path / "checkpoints" / "97_x" / "0123456789abcdef"
    announce_resume("97_x", folder)
    assert capsys.readouterr().out == ""
    folder.mkdir(parents=True)
    (folder / "chains.pt").write_bytes(b"state")
    announce_resume("97_x", folder)
    assert capsys.readouterr().out == f"resuming 97_x from its checkpoints in {folder}\n"


def test_removing_a_published_sets_checkpoints_keeps_the_others(tmp_path):
    name = tmp_path / "checkpoints" / "97_x"
    mine, other = name / "aaaa", name / "bbbb"
    for folder in (mine, other):
        folder.mkdir(parents=True)
        (folder / "chains.pt").write_bytes(b"state")
    remove_checkpoints(mine)
    assert not mine.exists() and (other / "chains.pt").read_bytes() == b"state"
    remove_checkpoints(other)
    assert not name.exists()  # the notebook's folder goes once no parameter set has a checkpoint left


def test_publishing_one_parameter_set_keeps_another_sets_resume_state(tmp_path, capsys):
    """A killed `run NAME -p steps 9` keeps its checkpoints when a run of NAME with other parameters publishes."""
    nbs, root = tmp_path / "notebooks", tmp_path / "root"
    nbs.mkdir()
    src = nbs / "99_example.py"
    src.write_text(EXAMPLE)
    out_nb = (root / "book" / "notebooks" / "99_example.ipynb").resolve()
    params = prepare_parameters(src, {"profile": "smoke"})
    key = cache.key(cache.inputs(src, params, out_nb.parent))[:16]
    checkpoints = root / "_build" / "checkpoints" / "99_example"
    other = checkpoints / ("f" * 16 if key != "f" * 16 else "e" * 16)  # a killed run of another parameter set
    for folder in (checkpoints / key, other):
        folder.mkdir(parents=True)
        (folder / "chains.pt").write_bytes(b"not read: the example checkpoints nothing")
    book.prepare_root(root)
    book.run_notebook("99_example", out_nb, out_nb.with_suffix(""), {"profile": "smoke"}, notebooks_dir=nbs,
                      staging=root / "_build" / "staging", progress=False)
    assert f"resuming 99_example from its checkpoints in {(checkpoints / key).resolve()}" in capsys.readouterr().out
    assert out_nb.is_file() and not (checkpoints / key).exists()  # the published set's checkpoints are removed
    assert (other / "chains.pt").is_file()  # the other set's resume state survives
