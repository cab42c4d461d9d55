"""The intro's first screen: does the paper hold? One line per claim, read from each page's result.json.

Each line gives the claim (its first clause, from result.json's `claim`), the verdict as a coloured mark and its word
(✓ reproduced / passes, ✗ not reproduced / fails, ? inconclusive), the number the verdict rests on with what it
means in plain words (the deciding check's statement, its value and whether its error bounds let it decide), and,
for an open check, what would decide it (`deciding.to_decide`). The paper's claims come first; the book's own
questions (`question: "book"`) follow apart. Every number is one of result.json's, except the limits at which an
error bound lets a check decide (`checks.FALSE_PASS_MAX`, `checks.FALSE_FAIL_MAX`), which the rule states.

The module is a Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): when a build starts it writes
the table (`write_first_screen`) to book/_generated/first_screen.md (not tracked), which book/intro.md includes, so
that every build of the book, however it is started, shows the result pages it holds at that moment.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..pages.checks import FALSE_FAIL_MAX, FALSE_PASS_MAX
from ..pages.verdict import WORDS
from .parameters import NOTEBOOKS
from .site import COMMITTED_NOTE, GENERATED, _short_title, shown_results

FIRST_SCREEN = GENERATED / "first_screen.md"

MARKS = {"positive": "✓", "negative": "✗", "open": "?", "other": "·"}
POSITIVE = {words[0] for words in WORDS.values()}   # reproduced, passes
NEGATIVE = {words[1] for words in WORDS.values()}   # not reproduced, fails
LABEL_WORDS = 3  # a check's text before its colon of at most this many words is a label ("random scan"), not a statement
HEADLINE = 110  # characters of a claim's first clause shown on the first screen
HEADER = "| {verdict} | {what} | the number it rests on |\n| --- | --- | --- |"


def tone(word: str) -> str:
    """'positive', 'negative', 'open' or 'other' (a smoke or dry run, a page not shown): the colour of a verdict."""
    if word in POSITIVE:
        return "positive"
    if word in NEGATIVE:
        return "negative"
    return "open" if word.startswith("inconclusive") else "other"


def mark(word: str) -> str:
    """The verdict as a coloured mark and its word, joined so that the mark never ends a line:
    `<span class="verdict-mark positive">✓&nbsp;reproduced</span>` (coloured by _static/book.css)."""
    kind = tone(word)
    return f'<span class="verdict-mark {kind}">{MARKS[kind]}&nbsp;{word}</span>'


def headline(claim: str) -> str:
    """A claim's first clause: up to its first colon or semicolon, without a leading parenthetical ("(The book's
    own question.)"), a parenthetical list ("(Glauber sampler, coupling times, …)") or a citation of the paper's
    figures ("(paper Fig 5)"); past `HEADLINE` characters it ends at a word with "…" (the claim is on its page)."""
    text = re.sub(r"^\([^)]*\)\s*", "", claim.strip())
    text = re.split(r":\s|;\s", text, maxsplit=1)[0]
    text = re.sub(r"\s*\((paper Figs? |[^)]*, )[^)]*\)", "", text).rstrip(". ")
    return text if len(text) <= HEADLINE else text[:HEADLINE].rsplit(" ", 1)[0].rstrip(",;") + " …"


def _percent(rate: float) -> str:
    return f"{100 * rate:.0f} %"


def judgement(deciding: Mapping) -> str:
    """Whether the deciding check decides, in plain words: 'passes (false-pass risk ≤ 7 %)', 'the rule says fail, but
    its false-fail risk may reach 67 % (limit 20 %)' (the one-sided 95 % bounds), or why it is undecided."""
    outcome, reason = deciding["outcome"], str(deciding.get("reason", ""))
    false_pass, false_fail = deciding.get("false_pass_upper"), deciding.get("false_fail_upper")
    if outcome == "pass":
        text = "passes" + (f" (false-pass risk ≤ {_percent(false_pass)})" if false_pass is not None else "")
    elif outcome == "fail":
        text = "fails" + (f" (false-fail risk ≤ {_percent(false_fail)})" if false_fail is not None else "")
    elif reason.startswith("rule says pass") and false_pass is not None:
        text = (f"the rule says pass, but its false-pass risk may reach {_percent(false_pass)} "
                f"(limit {_percent(FALSE_PASS_MAX)})")
    elif reason.startswith("rule says fail") and false_fail is not None:
        text = (f"the rule says fail, but its false-fail risk may reach {_percent(false_fail)} "
                f"(limit {_percent(FALSE_FAIL_MAX)})")
    else:
        text = f"undecided: {reason or 'no reason recorded'}"
    return text if deciding.get("core", True) else f"{text}; a side check, beside the verdict"


def statement(check: str) -> str:
    """What a check tests, without the rule that follows its statement's colon ("R̂ and coupling agree at 1.01: R̂ ≥
    1.01 at every slow τ …" → "R̂ and coupling agree at 1.01"); a short label before the colon ("random scan: the
    sampler's TV …", at most `LABEL_WORDS` words) stays with the statement it names."""
    parts = check.split(": ")
    keep = 2 if len(parts) > 1 and len(parts[0].split()) <= LABEL_WORDS else 1
    return ": ".join(parts[:keep])


def number(deciding: Mapping | None) -> str:
    """The deciding check as 'what it tests: **value** — whether that decides' (`statement`, `judgement`; the rule
    itself is on the page)."""
    if not deciding:
        return "–"
    return f"{statement(str(deciding['check']))}: **{deciding['value']}** — {judgement(deciding)}"


def to_decide(deciding: Mapping | None) -> str:
    """What would decide an open deciding check ('<br>*To decide:* …'): its `to_decide` up to the first colon or
    semicolon, without a parenthetical that holds the calibration's numbers, and `checks.smallest_decisive`'s
    "decisive at 192 pairs per length" as "192 pairs per length", "not decisive up to 8 chains" as "more than 8
    chains"; the rest is on the page; then its cost, where the page names its design (`deciding_cost`). '' when the
    check decides."""
    if not deciding or deciding["outcome"] != "inconclusive":
        return ""
    design = re.sub(r"\s*\((?:[^()]*\([^()]*\))+[^()]*\)", "", str(deciding.get("to_decide") or ""))
    design = re.sub(r"\s*\([^()]*$", "", re.split(r":\s|;\s", design, maxsplit=1)[0])  # a parenthesis cut open
    design = re.sub(r"^not decisive up to ", "more than ", re.sub(r"^decisive at ", "", design))
    cost = f" ({deciding['cost']})" if design and deciding.get("cost") else ""
    return f"<br>*To decide:* {design or 'not recorded; see the page’s checks.csv'}{cost}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def row(name: str, title: str, result: Mapping | str) -> str:
    """One line of the first screen: its mark, the page (linked) and its claim, its number and what would decide
    it; a page that is not shown (`result` is why) says so in place of its verdict."""
    link = f'<a href="notebooks/{name}.html#result-{name[:2]}">{name[:2]} · {title}</a>'
    if isinstance(result, str):
        cells = (mark("not shown"), link, result)
    else:
        claim = headline(str(result.get("claim", "")))
        deciding = result.get("deciding")
        link += f"<br>({COMMITTED_NOTE})" if result.get("differs_from_git") else ""
        cells = (mark(result["verdict"]), f"{link}<br>{claim}" if claim else link, number(deciding) + to_decide(deciding))
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def scales(shown: Mapping[str, Mapping | str]) -> str:
    """The profiles the shown pages ran at ("`cpu` profile"), from result.json's `build`; '' when none says."""
    found = dict.fromkeys(str(r["build"]).split(" · model")[0] for r in shown.values()
                          if not isinstance(r, str) and r.get("build"))
    return ", ".join(found)


def markdown(shown: Mapping[str, Mapping | str], titles: Mapping[str, str], book: set[str]) -> str:
    """The first screen: the paper's claims (their verdict column names the profile), then the book's own checks
    (`book`: the pages whose question is the book's) under their own header."""
    if not shown:
        return "No result page has been executed for this build.\n"
    paper = [row(n, titles[n], r) for n, r in shown.items() if n not in book]
    own = [row(n, titles[n], r) for n, r in shown.items() if n in book]
    verdict = f"verdict, {scales(shown)}".rstrip(", ")
    parts = []
    if paper:
        parts += [HEADER.format(verdict=verdict, what="the paper's claim"), *paper, ""]
    if own:
        parts += ["The book's own checks, which test its tools and questions rather than the paper:", "",
                  HEADER.format(verdict=verdict, what="the book's own check"), *own, ""]
    return "\n".join(parts)


def write_first_screen(root: Path, notebooks_dir: Path | None = None) -> Path:
    """Write `<root>/book/_generated/first_screen.md` (`markdown`) from the result pages `site.shown_results` shows for
    the notebooks in `notebooks_dir` (None: `NOTEBOOKS`); a page that is not shown stands with the others of its
    kind (the question its notebook's source asks)."""
    notebooks_dir = Path(notebooks_dir or NOTEBOOKS)
    shown, _ = shown_results(root, notebooks_dir)
    book = {name for name, result in shown.items()
            if (result.get("question") if isinstance(result, dict) else _asks(notebooks_dir, name)) == "book"}
    titles = {name: _short_title(root, name) for name in shown}
    page = Path(root) / FIRST_SCREEN
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(markdown(shown, titles, book))
    return page


def _asks(notebooks_dir: Path, name: str) -> str:
    """The question a notebook's source asks: "book" when it passes `question="book"` to `conclude`, else "paper"."""
    source = (Path(notebooks_dir) / f"{name}.py").read_text()
    return "book" if re.search(r"""question\s*=\s*["']book["']""", source) else "paper"


def _write_on_start(app, config) -> None:
    """`config-inited`: write the first screen into the book about to be built (its source folder)."""
    write_first_screen(Path(app.srcdir))


def setup(app) -> dict:
    app.connect("config-inited", _write_on_start)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
