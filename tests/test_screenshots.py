"""Issue 34 item 8: `scripts/screenshots.py` finishes. A page whose browser hangs is killed after `--timeout` seconds,
named and skipped; the other pages are captured and the exit status says that one timed out (a fake chromium on PATH:
it hangs on pages named slow*, else draws a short page with a blank tail)."""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "screenshots.py"

FAKE_CHROMIUM = f"""#!{sys.executable}
import sys, time
from PIL import Image

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
if "/slow" in sys.argv[-1]:
    time.sleep(600)
width, height = map(int, args["window-size"].split(","))
image = Image.new("RGB", (width, height), "white")
image.paste((0, 0, 0), (0, 0, width, 300))  # the page: 300 px of ink, then a blank tail
image.save(args["screenshot"])
"""


@pytest.fixture
def screenshots():
    spec = importlib.util.spec_from_file_location("screenshots", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WINDOW_HEIGHTS = (1000,)
    return module


def fake_book(tmp_path: Path, monkeypatch, pages: tuple[str, ...]) -> Path:
    """A built book of `pages` (its html folder), with the fake chromium first on PATH."""
    bin_dir, html = tmp_path / "bin", tmp_path / "html"
    bin_dir.mkdir()
    (bin_dir / "chromium").write_text(FAKE_CHROMIUM)
    (bin_dir / "chromium").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (html / "book").mkdir(parents=True)
    (html / "index.html").write_text("<html></html>")
    for name in pages:
        (html / "book" / f"{name}.html").write_text("<html></html>")
    return html


def test_a_page_that_hangs_is_named_skipped_and_fails_the_run(tmp_path, monkeypatch, capsys, screenshots):
    html = fake_book(tmp_path, monkeypatch, ("a_page", "slow_page", "z_page"))
    start = time.monotonic()
    status = screenshots.main(["--html", str(html), "--out", str(tmp_path / "out"), "--timeout", "3"])
    assert time.monotonic() - start < 60  # one timeout of 3 s, not the fake browser's 600 s
    err = capsys.readouterr().err
    assert status == 1
    assert "slow_page at 1400 px: the browser took more than 3 s; page skipped" in err
    assert "timed out (no screenshot): slow_page" in err
    shots = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert shots == [f"{name}-{width}-1.png" for name in ("a_page", "z_page") for width in (1400, 400)]


def test_a_run_without_timeouts_exits_0(tmp_path, monkeypatch, screenshots):
    html = fake_book(tmp_path, monkeypatch, ("a_page",))
    assert screenshots.main(["--html", str(html), "--out", str(tmp_path / "out")]) == 0
