"""No hand-typed build facts in the hand-written prose: README.md and the prose pages `book/*.md`.

The notebook pages are covered by `test_pages.py` (every number in their prose is printed by a cell). The
hand-written pages cannot print anything, so they must not state what a particular build measured: each
rebuild (another machine, another dtype, new verdict rules) changes those facts and the prose goes stale
while the page it points to (the generated execution page, `provenance.json`, `result.json`) stays right.

**The rule.** The prose is cut into sentences (a table row, a list item and a shell comment in a code
block each count as one); math, link targets, html tags and MyST labels are not prose, and numbers inside
inline code are commands and parameters, not facts. The generated execution page is not hand-written and is
not read. A sentence *names a build* when it says `book`, `build`, `built`, `rebuilt`, `committed`,
`notebook`, `page`, `make book`, `glauber-mlm book`, `provenance`, or names a notebook by its number
(00–06, alone or as `04_political_basins`), and it is *stale-prone* when it also states any of:

- a **duration**: a number followed by a unit of time (`ms`, `s`, `sec`, `seconds`, `min`, `minutes`,
  `h`, `hours`), as in "04 takes 170 s" or "the book took 20.6 min";
- a **dtype of a build or a machine's bf16 support**: "an fp32 build", "the committed book … in bf16",
  "this CPU has no native bf16";
- a **verdict** (with or without a build word: a verdict is always one build's): "reproduced" or
  "inconclusive" in a sentence that says "verdict", or "partly reproduced", "not reproduced", "not testable",
  "inconclusive at this scale" anywhere;
- a **share of a result**: a percentage.

A stale-prone sentence passes only when it matches an entry of `STABLE`, a short list of facts that do not
depend on the build (`glauber-mlm plan`'s output at stated rates, checked against the command here; a dated
timing on a named machine), each with its reason; an entry excuses the numbers of its sentence, never a
dtype or a verdict, and an entry that no longer matches anything fails too.
Everything else fails with the sentence: point to the page or file that has the number (`execution.md`,
`provenance.json`, `result.json`), or say it for any build.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from glauber_mlm import book

REPO = book.REPO
PAGES = [REPO / "README.md"] + sorted((REPO / "book").glob("*.md"))  # generated tables are in book/_generated/

# A build of the book, named in a sentence.
BUILD = re.compile(r"\b(?:books?|builds?|built|rebuilt|committed|notebooks?|pages?|make book|glauber-mlm book"
                   r"|provenance)\b|(?<![\w:.–-])0[0-6](?:_[a-z0-9_]+)?(?![\w:.–-])", re.I)
DURATION = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?)\b")
DTYPE = re.compile(r"\b(?:an?|the|in)\s+(?:fp32|bf16|float32|bfloat16)\s+(?:build|book)\b"
                   r"|\b(?:book|build|built)\b[^.]{0,60}\bin\s+(?:fp32|bf16|float32|bfloat16)\b"
                   r"|\bthis (?:CPU|machine)\b[^.]{0,40}\bnative bf16\b", re.I)
VERDICT = re.compile(r"\b(?:partly reproduced|not reproduced|not testable|inconclusive at this scale)\b"
                     r"|\bverdict\b.*\b(?:reproduced|inconclusive)\b"
                     r"|\b(?:reproduced|inconclusive)\b.*\bverdict\b", re.I)
PERCENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?%")

# Stale-prone sentences that state no fact of a build: (file, a regex the sentence matches, why it is stable).
PLAN = "`glauber-mlm plan`'s output at stated rates, not a build's measurement"
STABLE: list[tuple[str, str, str]] = [
    ("run_it_yourself.md", r"^\|.*(?:forward rows \(worst case\)|FLOP \|)",
     "the plan table: " + PLAN + "; test_the_plan_table_is_what_glauber_mlm_plan_prints checks it"),
    ("run_it_yourself.md", r"^Commands: `glauber-mlm plan",
     "the rates the plan table assumes, or calibrated (dated, on a named machine)"),
    ("run_it_yourself.md", r"calibration's rounded rates", PLAN),
    ("run_it_yourself.md", r"^On the GPU the largest parts are", PLAN),
    ("run_it_yourself.md", r"one coupled step took",
     "a dated timing on the calibration's machine: what the plan leaves out"),
]

_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.S),          # display math
    re.compile(r"\$[^$\n]+\$"),                # inline math
    re.compile(r"\]\([^)]*\)"),                # link targets
    re.compile(r"^\(.*?\)=\s*$", re.M),        # MyST labels
    re.compile(r"<[^>\n]+>"),                  # html tags
]


def sentences(markdown: str) -> list[str]:
    """The prose of a Markdown file cut into sentences; code blocks contribute their shell comments only."""
    units = []
    for k, block in enumerate(re.split(r"^```.*$", markdown, flags=re.M)):
        if k % 2:  # inside a fenced block: the comment after `#` is prose about the command
            units += [m.group(1) for m in re.finditer(r"(?:^|\s)#\s+(.+)$", block, re.M)]
            continue
        for pattern in _STRIP:
            block = pattern.sub(" ", block)
        for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |\|))", block):
            units += re.split(r"(?<=[.!?])\s+(?=[A-Z*(`\[])", " ".join(para.split()))
    return [u.strip() for u in units if u.strip()]


def stale_prone(sentence: str, numbers: bool = True) -> list[str]:
    """What in `sentence` states a fact of a build (empty when it names no build or states no such fact);
    with `numbers=False` only its dtype and verdict claims (what a `STABLE` entry never excuses)."""
    prose = re.sub(r"`[^`]*`", lambda m: " CODE " if not BUILD.search(m.group()) else m.group(), sentence)
    bare = re.sub(r"`[^`]*`", " ", prose)  # numbers inside code are commands and parameters
    found = [m.group() for m in VERDICT.finditer(bare)]  # a verdict is always one build's
    if BUILD.search(prose):
        kinds = (DURATION, PERCENT, DTYPE) if numbers else (DTYPE,)
        found = [m.group() for pattern in kinds for m in pattern.finditer(bare)] + found
    return found


def stale_statements(path: Path) -> list[tuple[str, list[str]]]:
    """(sentence, what is stale-prone in it) for every sentence of `path` that states a build's fact off `STABLE`."""
    allowed = [pattern for name, pattern, _ in STABLE if name == path.name]
    return [(s, hits) for s in sentences(path.read_text())
            if (hits := stale_prone(s, numbers=not any(re.search(pattern, s) for pattern in allowed)))]


def test_a_hand_typed_build_fact_is_found_and_a_stable_one_is_not(tmp_path):
    page = tmp_path / "planted.md"
    page.write_text(
        "# Planted\n\nNotebook 04 takes 170 s on this machine. The committed cpu book is an fp32 build.\n"
        "The pages run in fp32 because this CPU has no native bf16.\n"
        "Notebook 04's verdict is partly reproduced, and 83 % of its chains stay in the region.\n\n"
        "```bash\nglauber-mlm book --profile smoke   # every notebook, tiny grids (< 1 min each)\n```\n\n"
        "| notebook | time |\n| --- | --- |\n| 02_high_temperature_mixing | 354.6 s |\n\n"
        # what may stay: times and shares that describe no build, and pointers to where a build's numbers are
        "The paper's budget is $10^4$ steps. A coupled step took 3.7 ms in the benchmark. The bf16 and fp32\n"
        "builds give different numbers. Each notebook's time is on the [execution page](execution.md) (2026-12-01).\n"
        "The per-page dtype is in `provenance.json`; run `glauber-mlm book --dtype float32` for fp32.\n")
    found = [hits for _, hits in stale_statements(page)]
    assert found == [["170 s"], ["an fp32 build"], ["this CPU has no native bf16"],
                     ["83 %", "verdict is partly reproduced"], ["1 min"], ["354.6 s"]]
    assert stale_prone("The rectangle tolerance is 10 times the noise of 00 at 95 % confidence.") == ["95 %"]
    assert stale_prone("Notebook 02 runs at temperatures 2 and 3 on the pages' grid (Fig 3).") == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_hand_written_page_states_a_fact_of_one_build(page):
    stale = stale_statements(page)
    detail = [f"{hits}: “{sentence[:160]}”" for sentence, hits in stale]
    assert not stale, (f"{page.name} states what one build measured (point to the execution page, provenance.json or "
                       "result.json, or say it for any build):\n" + "\n".join(detail))


def test_every_stable_entry_is_still_needed():
    """An allow-list entry that no longer matches a stale-prone sentence is dead weight: remove it."""
    for name, pattern, _ in STABLE:
        path = next(p for p in PAGES if p.name == name)
        assert any(re.search(pattern, s) and stale_prone(s) for s in sentences(path.read_text())), (name, pattern)


def _seconds(cell: str) -> float:
    """'1.5 s', '52.7 min', '3.3 h', '88 days', '**115 min** (102–132 min …)' → seconds (the first duration)."""
    value, unit = re.search(r"([\d.]+)\s*(s|min|h|days)\b", cell.replace(",", "")).groups()
    return float(value) * {"s": 1, "min": 60, "h": 3600, "days": 86400}[unit]


def _table(text: str, header: str) -> list[list[str]]:
    lines = text[text.index(header):].splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|")]
    end = next((k for k, line in enumerate(lines) if not line.startswith("|")), len(lines))
    return rows[2:end]


def test_the_plan_table_is_what_glauber_mlm_plan_prints(capsys):
    """run_it_yourself.md's plan table against the commands it names: rows, sentences and FLOPs exactly, the GPU
    and quiet-CPU times to the table's rounding (5 %). The shared-CPU column is a dated calibration, not rerun."""
    from glauber_mlm.book import plan

    typed = _table((REPO / "book" / "run_it_yourself.md").read_text(), "| notebook | forward rows (worst case)")
    printed = {}
    for column, rates in (("gpu", ["--tflops", "350", "23", "--latency-ms", "5"]),
                          ("quiet", ["--throughput", "354", "--latency-ms", "14.4"])):
        assert plan.main(["--profile", "paper", "--worst-case", *rates]) == 0
        out = capsys.readouterr().out
        for row in _table(out, "| notebook | MLM rows"):
            printed.setdefault(row[0], {}).update(rows=row[1], sentences=row[3].replace("0", "") if row[3] == "0"
                                                 else row[3], flops=row[5], **{column: _seconds(row[6])})
    assert sorted(row[0].split()[0] for row in typed) == sorted(printed), (
        "the plan table lists other notebooks than `glauber-mlm plan` prints: `glauber-mlm new` writes a new page's "
        "row, and `glauber_mlm.book.new.with_plan_rows` rewrites the table's counts from the plan")
    for row in typed:
        key = row[0].split()[0]
        want = printed[key]
        assert (row[1], row[3], row[4]) == (want["rows"], want["sentences"], want["flops"]), row
        for cell, column in ((row[5], "gpu"), (row[7], "quiet")):
            assert math.isclose(_seconds(cell), want[column], rel_tol=0.05), (row[0], column, cell, want[column])
