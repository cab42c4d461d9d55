"""The result box of a page: the paper's claim, this build, its key numbers and a verdict from its decisive checks.

A page states its checks before it runs (`checks.Check`: a rule, its value here, and its power and size on
planted truths at this design). Only a decisive check (power ≥ 0.8, size ≤ 0.1) passes or fails; the verdict
follows from the outcomes, never from a reading of the figures:

    reproduced                    every check passes decisively
    not reproduced                a decisive check of the claim's core fails
    inconclusive at this scale    otherwise (some check is inconclusive, or only a side check fails)

The book's own questions (00: do the tools recover known answers; 06: does a diagnostic agree with coupling) are
not claims of the paper: their words are "passes", "fails" and "inconclusive at this scale" (`question="book"`).
Every verdict comes with a one-line reason.

A dry run (the profile's budgets scaled down, `Run(..., scale=S)` with S < 1) is no result: its box opens with
"Dry run at scale S" and its checks are shown only as a test that the code path computes them.

`Run.conclude` (in `run.py`) glues the box into the page (myst-nb `glue`, shown at the top of the page by a
`{glue:md}` directive) and saves it as result.json, and the checks as checks.csv, beside the tables.
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks import FAIL, INCONCLUSIVE, PASS, POWER_MIN, SIZE_MAX, Check

WORDS = {"paper": ("reproduced", "not reproduced", "inconclusive at this scale"),
         "book": ("passes", "fails", "inconclusive at this scale")}
RULE = (f"a check decides only where its power on a planted truth is ≥ {POWER_MIN} and its size on a planted null "
        f"≤ {SIZE_MAX}, at this page's design; the verdict is positive when every check passes decisively, negative "
        "when a decisive check of the claim's core fails, and inconclusive otherwise")


@dataclass(frozen=True)
class Verdict:
    word: str
    reason: str                   # one line: why this word
    passed: int                   # decisive passes
    failed: int                   # decisive fails
    inconclusive: int
    deciding: Check               # the check the word rests on: the failing core check, the first open one, or (all
                                  # pass) the first core check

    @property
    def summary(self) -> str:
        total = self.passed + self.failed + self.inconclusive
        return f"{self.passed} of {total} checks pass decisively, {self.failed} fail, {self.inconclusive} inconclusive"


def judge(checks: list[Check], question: str = "paper") -> Verdict:
    """The verdict of the module doc from a page's checks; `question` is "paper" (a claim of the paper) or "book"."""
    if question not in WORDS:
        raise ValueError(f"question must be 'paper' (a claim of the paper) or 'book' (the book's own), got {question!r}.")
    if not checks or not all(isinstance(c, Check) for c in checks):
        raise ValueError("a verdict needs at least one Check (glauber_mlm.pages.checks.Check): name what the page tests "
                         "before it runs.")
    yes, no, unsure = WORDS[question]
    outcomes = [c.outcome for c in checks]
    passed, failed, inconclusive = (outcomes.count(o) for o in (PASS, FAIL, INCONCLUSIVE))
    core_fails = [c for c in checks if c.core and c.outcome == FAIL]
    if core_fails:
        word, reason, deciding = no, f"a decisive check fails: {core_fails[0].check}", core_fails[0]
    elif passed == len(checks):
        word, reason = yes, f"all {len(checks)} checks pass decisively"
        deciding = next((c for c in checks if c.core), checks[0])
    else:
        open_ = [c for c in checks if c.outcome != PASS]
        first = next((c for c in open_ if c.core), open_[0])  # a core check decides the claim: name it first
        more = f" (and {len(open_) - 1} more)" if len(open_) > 1 else ""
        state = "fails (a side check)" if first.outcome == FAIL else f"is inconclusive: {first.reason}"
        reason = f"{passed} of {len(checks)} checks pass decisively; “{first.check}” {state}{more}"
        word, deciding = unsure, first
    return Verdict(word, reason, passed, failed, inconclusive, deciding)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def box_markdown(claim: str, build: str, numbers: dict[str, str], checks: list[Check], verdict: Verdict,
                 dry_run: str | None = None, not_shown: str = "", paper: str = "") -> str:
    """The box as MyST Markdown: verdict line and reason, claim, what the paper reports, build, key numbers, the
    checks with their power and size, and what this build does not show. `dry_run` ("dry run at scale S") replaces
    the verdict line."""
    headline = (f"**Verdict: {dry_run}, not a result** (budgets scaled down; at this scale: {verdict.word}, "
                f"{verdict.summary})." if dry_run else f"**Verdict: {verdict.word}.** {verdict.reason}.")
    lines = [headline, "",
             f"**The claim.** {claim}", ""]
    if paper:
        lines += [f"**What the paper reports.** {paper}", ""]
    lines += [f"**This build.** {build}", "",
             "| this run | value |", "| --- | --- |"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in numbers.items()]
    lines += ["", "| check, stated before the run | value | rule | power / size | outcome |",
              "| --- | --- | --- | --- | --- |"]
    for c in checks:
        cal = f"{c.calibration.power:.2f} / {c.calibration.size:.2f}" if c.calibration else "not calibrated"
        says = {True: "the rule says pass", False: "the rule says fail", None: "not computable"}[c.passes]
        outcome = {PASS: "pass", FAIL: "**fail**",
                   INCONCLUSIVE: f"inconclusive: {says}" + ("" if c.passes is None else f", but {c.reason}")}[c.outcome]
        outcome += "" if c.core else " (side check)"
        lines.append(f"| {_cell(c.check)} | {_cell(c.value)} | {_cell(c.threshold)} | {cal} | {_cell(outcome)} |")
    if not_shown:
        lines += ["", f"**What this build does not show.** {not_shown}"]
    lines += ["", f"*Rule:* {RULE}. Each check's calibration and what would make it decisive: `checks.csv`."]
    return "\n".join(lines)
