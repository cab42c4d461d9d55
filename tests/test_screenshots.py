"""Issue 34 item 8: `scripts/screenshots.py` finishes. A page whose browser hangs is killed after `--timeout` seconds,
named and skipped; the other pages are captured and the exit status says that one timed out (a fake chromium on PATH:
it hangs on pages named slow*, else draws a short page with a blank tail)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "screenshots.py"

# a shell script, so that a page's screenshot costs a `cp` (far inside the test's timeout on a loaded machine); a slow*
# page's "browser" writes its pid and never ends on its own
FAKE_CHROMIUM = """#!/bin/sh
for arg; do
    case "$arg" in
        --window-size=*) size="${arg#--window-size=}" ;;
        --screenshot=*) png="${arg#--screenshot=}" ;;
    esac
done
case "$arg" in
    */slow*) echo $$ > "$(dirname "$0")/hung.pid"; exec sleep 600 ;;
esac
cp "$(dirname "$0")/page-${size%,*}x${size#*,}.png" "$png"
"""


def draw_pages(bin_dir: Path, heights: tuple[int, ...]) -> None:
    """What the fake browser shows at each window size: 300 px of ink, then a blank tail."""
    from PIL import Image

    for width in (1400, 400):
        for height in heights:
            image = Image.new("RGB", (width, height), "white")
            image.paste((0, 0, 0), (0, 0, width, 300))
            image.save(bin_dir / f"page-{width}x{height}.png")


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
    draw_pages(bin_dir, (1000,))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (html / "book").mkdir(parents=True)
    (html / "index.html").write_text("<html></html>")
    for name in pages:
        (html / "book" / f"{name}.html").write_text("<html></html>")
    return html


def test_a_page_that_hangs_is_named_skipped_and_fails_the_run(tmp_path, monkeypatch, capsys, screenshots):
    html = fake_book(tmp_path, monkeypatch, ("a_page", "slow_page", "z_page"))
    status = screenshots.main(["--html", str(html), "--out", str(tmp_path / "out"), "--timeout", "3"])
    hung = int((tmp_path / "bin" / "hung.pid").read_text())
    with pytest.raises(ProcessLookupError):  # the hung browser was killed after the timeout, not waited for
        os.kill(hung, 0)
    err = capsys.readouterr().err
    assert status == 1
    assert "slow_page at 1400 px: the browser took more than 3 s; page skipped" in err
    assert "timed out (no screenshot): slow_page" in err
    shots = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert shots == [f"{name}-{width}-1.png" for name in ("a_page", "z_page") for width in (1400, 400)]


def test_a_run_without_timeouts_exits_0(tmp_path, monkeypatch, screenshots):
    html = fake_book(tmp_path, monkeypatch, ("a_page",))
    assert screenshots.main(["--html", str(html), "--out", str(tmp_path / "out")]) == 0
