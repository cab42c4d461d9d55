#!/usr/bin/env bash
# Screenshot every page of the built book at desktop (1400 px) and phone (400 px) width with headless Chromium,
# so a developer can look at what a reader sees before committing a build:
#
#     make book && bash scripts/screenshots.sh            # -> _build/screenshots/<page>-1400.png, -400.png
#
# Needs chromium (Debian: apt-get install chromium). Pages are read from _build/html; nothing is fetched.
set -euo pipefail
html="${1:-_build/html}"
out="${2:-_build/screenshots}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
  echo "no chromium found: install it (Debian: apt-get install chromium) and rerun" >&2
  exit 1
fi
if [ ! -f "$html/index.html" ]; then
  echo "no built book in $html: run 'make book' (or 'glauber-mlm book --no-execute') first" >&2
  exit 1
fi
mkdir -p "$out"
find "$html/book" -name '*.html' | sort | while read -r page; do
  name="$(basename "${page%.html}")"
  for width in 1400 400; do
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=5000 \
      --window-size="$width,4000" --screenshot="$out/$name-$width.png" "file://$(realpath "$page")" >/dev/null 2>&1
  done
  echo "$name: $out/$name-1400.png, $out/$name-400.png"
done
