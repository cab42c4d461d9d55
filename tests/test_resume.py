"""A notebook run killed with SIGKILL mid-chain resumes from its checkpoint: the same tables as an uninterrupted run,
and it says so (issue 34): the runner names the checkpoint folder, the page's provenance.json the step its chain went
on from (not the page: a reader sees results, not how the build went)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from test_book import EXAMPLE

# the example notebook with its chain checkpointed every 20 steps, a count of the forwards this kernel made (a resumed
# run makes fewer), and, when HOLD is in its environment, a stop for good at the first forward after the first
# checkpoint: the test's SIGKILL lands mid-chain however loaded the machine is
HOLD = "GLAUBER_TEST_HOLD_AFTER_CHECKPOINT"
SLOW = EXAMPLE.replace('Run("99_example"', 'Run("97_resume"').replace(
    "run.show()\n",
    "import os, threading\n"
    "plain, calls, saved = ising.logits, [0], run.checkpoint(\"chains\")\n"
    "def counted(*args, **kwargs):\n"
    f"    if os.environ.get(\"{HOLD}\") and saved.exists():\n"
    "        threading.Event().wait()\n"
    "    calls[0] += 1\n"
    "    return plain(*args, **kwargs)\n"
    "ising.logits = counted\n"
    "run.show()\n").replace(
    'seed=run["seed"], progress=True)',
    'seed=run["seed"], progress=True,\n                  checkpoint=run.checkpoint("chains"), checkpoint_every=20)\n'
    'run.save_table(pd.DataFrame({"forwards": [calls[0]]}), "forwards")')


def _run(root, nbs, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, hold=False):
    cmd = [sys.executable, "-m", "glauber_mlm.cli", "run", "97_resume", "--profile", "smoke", "-p", "steps", "300",
           "--notebooks", str(nbs), "--root", str(root)]
    env = {**os.environ, HOLD: "1"} if hold else {k: v for k, v in os.environ.items() if k != HOLD}
    return subprocess.Popen(cmd, start_new_session=True, stdout=stdout, stderr=stderr, env=env)


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_tables(tmp_path):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "97_resume.py").write_text(SLOW)
    assert 'checkpoint=run.checkpoint("chains")' in SLOW and "ising.logits = counted" in SLOW

    whole = tmp_path / "whole"
    first = _run(whole, nbs)
    err = first.communicate()[1]
    assert first.returncode == 0, err.decode()[-2000:]
    expected = (whole / "book" / "notebooks" / "97_resume" / "magnetisation.csv").read_bytes()

    root = tmp_path / "killed"
    log = tmp_path / "killed.log"
    with log.open("wb") as stderr:
        proc = _run(root, nbs, stderr=stderr, hold=True)
    checkpoints = root / "_build" / "checkpoints" / "97_resume"
    while not list(checkpoints.rglob("chains.pt")):
        assert proc.poll() is None, "the run ended before its first checkpoint: " + log.read_text()[-2000:]
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its kernel, mid-chain
    proc.wait()
    assert list(checkpoints.rglob("chains.pt")) and not (root / "book" / "notebooks" / "97_resume.ipynb").exists()

    resumed = _run(root, nbs, stdout=subprocess.PIPE)
    said, err = resumed.communicate()
    assert resumed.returncode == 0, err.decode()[-2000:]
    assert f"resuming 97_resume from its checkpoints in {checkpoints.resolve()}" in said.decode()
    results = root / "book" / "notebooks" / "97_resume"
    resumed = json.loads((results / "provenance.json").read_text())["resumed"]  # from which step, without a local path
    assert len(resumed) == 1 and re.fullmatch(r"resuming glauber from its checkpoint at step [1-9]\d* of 300", resumed[0])
    assert "resuming" not in (root / "book" / "notebooks" / "97_resume.ipynb").read_text()  # not on the page
    assert (results / "magnetisation.csv").read_bytes() == expected
    full = pd.read_csv(whole / "book" / "notebooks" / "97_resume" / "forwards.csv").forwards[0]
    assert pd.read_csv(results / "forwards.csv").forwards[0] < full  # it resumed rather than starting over
    assert not checkpoints.exists()  # removed once the run was published
