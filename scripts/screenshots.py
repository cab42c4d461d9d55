"""Screenshot every page of the built book, whole, at desktop (1400 px) and phone (400 px) width, so that a developer
looks at what a reader sees before committing a build:

    make book && .venv/bin/python scripts/screenshots.py      # -> _build/screenshots/<page>-<width>-<k>.png

Headless Chromium renders each page in a window taller than any page; the blank space below the page is cut off and
the rest is cut into slices of at most 5,000 px, a height an image viewer shows legibly. Needs chromium (Debian:
apt-get install chromium) and Pillow (installed with matplotlib). Pages are read from _build/html; nothing is fetched.

Each screenshot may take at most `--timeout` seconds (default 120): a page whose browser runs longer is killed, named
on stderr and skipped, and the script goes on with the next page; its exit status is 1 when any page timed out.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

WIDTHS = (1400, 400)
WINDOW_HEIGHTS = (30000, 60000, 120000)  # tried in turn until the page ends inside the window
SLICE = 5000
TIMEOUT = 120  # seconds one screenshot may take (a page normally renders in a few)


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    sys.exit("no chromium found: install it (Debian: apt-get install chromium) and rerun")


def capture(page: Path, width: int, height: int, png: Path, timeout: float = TIMEOUT) -> None:
    """`page` rendered in a `width` × `height` window into `png`; subprocess.TimeoutExpired after `timeout` s, the
    browser and every process it started killed (its own process group: a renderer left behind would hold the pipe)."""
    command = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--virtual-time-budget=5000", f"--window-size={width},{height}", f"--screenshot={png}",
               page.resolve().as_uri()]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, command, stderr=err)


def blank_tail(image: Image.Image) -> tuple[int, int]:
    """(start, length) of the blank stretch between the page's end and the footer (which sits at the window's
    bottom): the longest run of identical rows; length < 200 means the page did not end inside the window."""
    rows = np.asarray(image)
    same = np.concatenate([[False], np.all(rows[1:] == rows[:-1], axis=(1, 2)), [False]]).astype(int)
    starts, ends = np.flatnonzero(np.diff(same) == 1), np.flatnonzero(np.diff(same) == -1)
    if starts.size == 0:
        return 0, 0
    k = np.argmax(ends - starts)
    return int(starts[k]), int(ends[k] - starts[k])


def slices(png: Path) -> list[Path]:
    """Cut the blank tail out of `png` and the rest into slices of at most SLICE px; returns the slices' paths."""
    with Image.open(png) as image:
        image = image.convert("RGB")
    start, length = blank_tail(image)
    rows = np.asarray(image)
    image = Image.fromarray(np.concatenate([rows[:start + 40], rows[start + length:]]))
    out = []
    for k, top in enumerate(range(0, image.height, SLICE), start=1):
        path = png.with_name(f"{png.stem}-{k}.png")
        image.crop((0, top, image.width, min(top + SLICE, image.height))).save(path)
        out.append(path)
    png.unlink()
    return out


def screenshot(page: Path, width: int, out: Path, timeout: float) -> list[Path]:
    """The slices of `page` at `width` px, in windows of growing height until the page ends inside one."""
    whole = out / f"{page.stem}-{width}.png"
    for height in WINDOW_HEIGHTS:
        capture(page, width, height, whole, timeout)
        with Image.open(whole) as image:
            if blank_tail(image.convert("RGB"))[1] >= 200:
                break
    else:
        print(f"{page.stem} at {width} px is longer than {height} px: its screenshot is cut", file=sys.stderr)
    return slices(whole)


def main(argv: list[str] | None = None) -> int:
    """Screenshot the pages; 1 when some page timed out (named on stderr and skipped), else 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=Path("_build/html"))
    parser.add_argument("--out", type=Path, default=Path("_build/screenshots"))
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds one screenshot may take (default: 120)")
    parser.add_argument("pages", nargs="*", help="page names (e.g. 02_high_temperature_mixing intro); default: all")
    args = parser.parse_args(argv)
    if not (args.html / "index.html").is_file():
        sys.exit(f"no built book in {args.html}: run 'make book' (or 'glauber-mlm book --no-execute') first")
    args.out.mkdir(parents=True, exist_ok=True)
    timed_out = []
    for page in sorted((args.html / "book").rglob("*.html")):
        if args.pages and page.stem not in args.pages:
            continue
        for width in WIDTHS:
            try:
                print(page.stem, width, " ".join(str(p) for p in screenshot(page, width, args.out, args.timeout)))
            except subprocess.TimeoutExpired:
                print(f"{page.stem} at {width} px: the browser took more than {args.timeout:g} s; page skipped",
                      file=sys.stderr)
                timed_out.append(page.stem)
                break
    if timed_out:
        print(f"timed out (no screenshot): {', '.join(timed_out)}", file=sys.stderr)
    return 1 if timed_out else 0


if __name__ == "__main__":
    sys.exit(main())
