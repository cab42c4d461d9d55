"""The result box of a page: the paper's claim, this build, its key numbers and a verdict computed by one rule.

A page states its checks before it runs (each a sentence that a table answers with yes, no, or "cannot be
computed at this scale") and the verdict follows from their answers, never from a reading of the figures:

    reproduced                   every check passes
    partly reproduced            some checks pass, or all that could be computed pass while others could not
    not reproduced               every check that could be computed fails
    not testable at this scale   no check could be computed

A dry run (the profile's budgets scaled down, `Run(..., scale=S)` with S < 1) is no result: its box opens with
"Dry run at scale S" and its checks are shown only as a test that the code path computes them.

`Run.conclude` (in `notebook.py`) glues the box into the page (myst-nb `glue`, shown at the top of the page
by a `{glue:md}` directive) and saves it as result.json beside the tables.
"""
from __future__ import annotations

from dataclasses import dataclass

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE = ("reproduced", "partly reproduced", "not reproduced",
                                                     "not testable at this scale")
RULE = ("reproduced when every check passes; partly when some pass (or all that could be computed pass and "
        "others could not); not reproduced when every computable check fails; not testable at this scale when "
        "none could be computed")


@dataclass(frozen=True)
class Verdict:
    word: str                              # one of the four verdicts above
    passed: int                            # checks that pass
    failed: int                            # checks that fail
    untestable: int                        # checks that could not be computed

    @property
    def summary(self) -> str:
        total = self.passed + self.failed + self.untestable
        extra = f", {self.untestable} not computable at this scale" if self.untestable else ""
        return f"{self.passed} of {total} checks pass{extra}"


def judge(checks: dict[str, bool | None]) -> Verdict:
    """The verdict of the module doc from named checks: True passes, False fails, None could not be computed."""
    if not checks:
        raise ValueError("a verdict needs at least one check: name what the page tests before it runs.")
    bad = {k: v for k, v in checks.items() if v is not None and not isinstance(v, bool)}
    if bad:
        raise ValueError(f"checks must be True, False or None (not computable), got {bad}: compare the table's "
                         "numbers with the stated threshold and pass the bool.")
    passed = sum(v is True for v in checks.values())
    failed = sum(v is False for v in checks.values())
    untestable = sum(v is None for v in checks.values())
    if passed + failed == 0:
        word = NOT_TESTABLE
    elif passed == 0:
        word = NOT_REPRODUCED
    elif failed == 0 and untestable == 0:
        word = REPRODUCED
    else:
        word = PARTLY
    return Verdict(word, passed, failed, untestable)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def box_markdown(claim: str, build: str, numbers: dict[str, str], checks: dict[str, bool | None],
                 verdict: Verdict, dry_run: str | None = None) -> str:
    """The box as MyST Markdown: verdict line, claim, build, a table of key numbers and a table of checks.

    `dry_run` ("dry run at scale S") replaces the verdict line: the checks of a scaled-down run are no result."""
    mark = {True: "yes", False: "**no**", None: "not computable at this scale"}
    headline = (f"**Verdict: {dry_run}, not a result** (budgets scaled down; at this scale {verdict.summary}, "
                f"{verdict.word})." if dry_run else f"**Verdict: {verdict.word}** ({verdict.summary}).")
    lines = [headline, "",
             f"**The paper's claim.** {claim}", "", f"**This build.** {build}", "",
             "| this run | value |", "| --- | --- |"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in numbers.items()]
    lines += ["", "| check, stated before the run | passes |", "| --- | --- |"]
    lines += [f"| {_cell(k)} | {mark[v]} |" for k, v in checks.items()]
    lines += ["", f"*Rule:* {RULE}."]
    return "\n".join(lines)
