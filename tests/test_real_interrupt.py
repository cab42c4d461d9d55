"""Issue 43, item 7: Ctrl-C with a real kernel ends in the command's one sentence, with nothing before it on stderr
(no traceback of the kernel's ZMQ channels, papermill or nbclient).

`glauber-mlm run` executes a tiny page in a real kernel, in its own session as a terminal's foreground job is; the
page writes a file once it is running and then waits; the test waits for that file (the event, not a sleep) and
sends SIGINT to the whole process group, as a terminal's Ctrl-C does.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from test_book import EXAMPLE

NAME = "97_waits"
PROGRESS_BAR = re.compile(r"^Executing: +\d+%\|")  # papermill's bar, redrawn on stderr while the page runs


def _page(started: Path) -> str:
    """The template page, whose first cell after Run() writes `started` and then waits for the signal."""
    wait = textwrap.dedent(f'''\
        # %%
        import pathlib, time
        pathlib.Path({str(started)!r}).write_text("running")
        while True:
            time.sleep(0.05)

        ''')
    page = EXAMPLE.replace('Run("99_example"', f'Run("{NAME}"')
    return page.replace("# %% [markdown]\n# ## Magnetisation", wait + "# %% [markdown]\n# ## Magnetisation", 1)


def _ctrl_c_as_a_terminal_gives_it() -> None:
    """SIGINT at its default in the command, as in a terminal's foreground job: a suite started in the background
    (`make test &` from a script) inherits SIGINT ignored, and the command would never see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_with_a_real_kernel_ends_in_the_one_sentence_only(tmp_path):
    nbs, root, started = tmp_path / "nbs", tmp_path / "root", tmp_path / "started"
    nbs.mkdir()
    (nbs / f"{NAME}.py").write_text(_page(started))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                       os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "glauber_mlm.cli", "run", NAME, "--profile", "smoke", "--notebooks",
                             str(nbs), "--root", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True, preexec_fn=_ctrl_c_as_a_terminal_gives_it)
    try:
        deadline = time.monotonic() + 600  # a bound on a hung kernel, not a timing: the test waits for the event
        while not started.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the page never started"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (out, err)
    lines = [line for line in err.splitlines() if line.strip() and not PROGRESS_BAR.search(line)]
    assert len(lines) == 1 and lines[0].startswith("run stopped by Ctrl-C: every page published before is kept"), err
    assert not (root / "book" / "notebooks" / f"{NAME}.ipynb").exists()
