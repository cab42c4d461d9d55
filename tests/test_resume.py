"""A notebook run killed with SIGKILL mid-chain resumes from its checkpoint: the same tables as an uninterrupted run,
and it says so (issue 34): the runner names the checkpoint folder, the page the step its chain went on from."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd

from test_book import EXAMPLE

# the example notebook with a slowed-down exact model, its chain checkpointed every 20 steps, and a count of the
# forwards this kernel made (a resumed run makes fewer)
SLOW = EXAMPLE.replace('Run("99_example"', 'Run("97_resume"').replace(
    "run.show()\n",
    "import time\n"
    "plain, calls = ising.logits, [0]\n"
    "def slow(*args, **kwargs):\n"
    "    calls[0] += 1\n"
    "    time.sleep(0.01)\n"
    "    return plain(*args, **kwargs)\n"
    "ising.logits = slow\n"
    "run.show()\n").replace(
    'seed=run["seed"], progress=True)',
    'seed=run["seed"], progress=True,\n                  checkpoint=run.checkpoint("chains"), checkpoint_every=20)\n'
    'run.save_table(pd.DataFrame({"forwards": [calls[0]]}), "forwards")')


def _run(root, nbs, stdout=subprocess.DEVNULL):
    cmd = [sys.executable, "-m", "glauber_mlm.cli", "run", "97_resume", "--profile", "smoke", "-p", "steps", "300",
           "--notebooks", str(nbs), "--root", str(root)]
    return subprocess.Popen(cmd, start_new_session=True, stdout=stdout, stderr=subprocess.PIPE)


def test_a_killed_run_resumes_to_the_uninterrupted_tables(tmp_path):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "97_resume.py").write_text(SLOW)
    assert 'checkpoint=run.checkpoint("chains")' in SLOW and "ising.logits = slow" in SLOW

    whole = tmp_path / "whole"
    assert _run(whole, nbs).wait(timeout=300) == 0
    expected = (whole / "book" / "notebooks" / "97_resume" / "magnetisation.csv").read_bytes()

    root = tmp_path / "killed"
    proc = _run(root, nbs)
    checkpoints = root / "_build" / "checkpoints" / "97_resume"
    deadline = time.time() + 240
    while not list(checkpoints.rglob("chains.pt")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before its first checkpoint: slow the model down"
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its kernel, mid-chain
    proc.wait()
    assert list(checkpoints.rglob("chains.pt")) and not (root / "book" / "notebooks" / "97_resume.ipynb").exists()

    resumed = _run(root, nbs, stdout=subprocess.PIPE)
    said, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err.decode()[-2000:]
    assert f"resuming 97_resume from its checkpoints in {checkpoints.resolve()}" in said.decode()
    page = (root / "book" / "notebooks" / "97_resume.ipynb").read_text()
    assert re.search(r"resuming glauber from its checkpoint at step [1-9]\d* of 300", page)  # from which step
    results = root / "book" / "notebooks" / "97_resume"
    assert (results / "magnetisation.csv").read_bytes() == expected
    full = pd.read_csv(whole / "book" / "notebooks" / "97_resume" / "forwards.csv").forwards[0]
    assert pd.read_csv(results / "forwards.csv").forwards[0] < full  # it resumed rather than starting over
    assert not checkpoints.exists()  # removed once the run was published
