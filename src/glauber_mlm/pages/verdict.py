"""The result box of a page: the paper's claim, this build, its key numbers and a verdict from its core checks.

A page states its checks before it runs (`checks.Check`: a rule, its value here, and its error rates on planted
truths and nulls at this design). Each outcome is charged its own error, with its binomial uncertainty: a check
passes decisively when its rule says pass and the one-sided 95 % upper bound of its false-pass rate (size) is
≤ 0.10, and fails decisively when its rule says fail and the one-sided 95 % upper bound of its false-fail rate
(1 − power) is ≤ 0.20 (`checks.Calibration.decides`). The verdict rests on the page's **core**, calibrated checks
only, never on a reading of the figures; side checks (core=False) and uncalibrated checks are shown beside it and
neither block nor grant it:

    reproduced                    every core check passes decisively
    not reproduced                a core check fails decisively
    inconclusive at this scale    otherwise (a core check is inconclusive, or the page has no calibrated core check)

The book's own questions (00: do the tools recover known answers; 06: does a diagnostic agree with coupling) are
not claims of the paper: their words are "passes", "fails" and "inconclusive at this scale" (`question="book"`).
Every verdict comes with a one-line reason, and the box says, for each inconclusive core check, what would decide
it (the check's `to_decide`, the page parameters of that design where it names them (`Check.decide_with`), or the
replicates its bound needs).

A dry run (the profile's budgets scaled down, `Run(..., scale=S)` with S < 1) is no result: its box opens with
"Dry run at scale S" and its checks are shown only as a test that the code path computes them.
Nor is a smoke run (the tests' profile): its word is "smoke test, not a result". A page run on a model this book
does not know (not an embedded model, nor one its profiles name) says so in its box, and its word counts its
checks ("checks on MODEL: N pass, M fail") instead of claiming the paper's result for a model nobody trained.

A verdict word is about the model(s) and profile the page ran: the box says so ("reproduced on minilm-mlm at `cpu`
scale", `scope`). Its check table says whether the page's rules were stated before the run or revised after
outcomes had been seen (`history.Provenance`), and a revised page shows its outcome under the earlier rules, as the
rules record wrote it down, beside the current one.

`Run.conclude` (in `run.py`) glues the box into the page (myst-nb `glue`, shown at the top of the page by a
`{glue:md}` directive) and saves it as result.json, and the checks as checks.csv, beside the tables.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .checks import FAIL, FALSE_FAIL_MAX, FALSE_PASS_MAX, INCONCLUSIVE, PASS, Check, shown_bound
from .history import Provenance

WORDS = {"paper": ("reproduced", "not reproduced", "inconclusive at this scale"),
         "book": ("passes", "fails", "inconclusive at this scale")}
RULE = (f"a check passes decisively when its rule says pass and the one-sided 95 % upper bound of its false-pass "
        f"rate on a planted null is ≤ {FALSE_PASS_MAX:.2f}, and fails decisively when its rule says fail and the "
        f"one-sided 95 % upper bound of its false-fail rate on a planted truth is ≤ {FALSE_FAIL_MAX:.2f}, at this "
        "page's design; the verdict rests on the core checks: positive when every core check passes decisively, "
        "negative when one fails decisively, inconclusive otherwise; side and uncalibrated checks are shown beside it")


@dataclass(frozen=True)
class Verdict:
    word: str
    reason: str                   # one line: why this word
    passed: int                   # core checks that pass decisively
    failed: int                   # core checks that fail decisively
    inconclusive: int             # core checks that do not decide
    deciding: Check               # the check the word rests on: the failing core check, the first open one, or (all
                                  # pass) the first core check
    beside: int = 0               # side and uncalibrated checks, shown beside the verdict

    @property
    def summary(self) -> str:
        total = self.passed + self.failed + self.inconclusive
        side = f"; {self.beside} side or uncalibrated checks beside" if self.beside else ""
        return (f"{self.passed} of {total} core checks pass decisively, {self.failed} fail, "
                f"{self.inconclusive} inconclusive{side}")


def verdict_checks(checks: list[Check]) -> list[Check]:
    """The checks a verdict rests on: the core checks with a calibration (side and uncalibrated ones are shown
    beside it)."""
    return [c for c in checks if c.core and c.calibration is not None]


def judge(checks: list[Check], question: str = "paper") -> Verdict:
    """The verdict of the module doc from a page's checks; `question` is "paper" (a claim of the paper) or "book"."""
    if question not in WORDS:
        raise ValueError(f"question must be 'paper' (a claim of the paper) or 'book' (the book's own), got {question!r}.")
    if not checks or not all(isinstance(c, Check) for c in checks):
        raise ValueError("a verdict needs at least one Check (glauber_mlm.pages.checks.Check): name what the page tests "
                         "before it runs.")
    yes, no, unsure = WORDS[question]
    core = verdict_checks(checks)
    passed, failed, inconclusive = ([c.outcome for c in core].count(o) for o in (PASS, FAIL, INCONCLUSIVE))
    fails = [c for c in core if c.outcome == FAIL]
    if not core:
        why = "states no core check" if not any(c.core for c in checks) else "has no calibrated core check"
        word, reason = unsure, f"the page {why}, so nothing decides its verdict"
        deciding = next((c for c in checks if c.core), checks[0])
    elif fails:
        word, reason, deciding = no, f"a core check fails decisively: {fails[0].check}", fails[0]
    elif passed == len(core):
        every = "the one core check passes" if len(core) == 1 else f"all {len(core)} core checks pass"
        word, reason, deciding = yes, f"{every} decisively", core[0]
    else:
        open_ = [c for c in core if c.outcome != PASS]
        more = f" (and {len(open_) - 1} more)" if len(open_) > 1 else ""
        word, deciding = unsure, open_[0]
        reason = (f"{passed} of {len(core)} core checks pass decisively; “{deciding.check}” is inconclusive: "
                  f"{deciding.reason}{more}")
    return Verdict(word, reason, passed, failed, inconclusive, deciding, beside=len(checks) - len(core))


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _bounds(check: Check) -> str:
    """'≤ 0.10 (0 of 30) / ≤ 0.14 (2 of 40)': each error rate's one-sided 95 % upper bound and its count."""
    c = check.calibration
    if c is None:
        return "not calibrated"
    fails = None if c.truth_passes is None else c.replicates - c.truth_passes
    rates = ((c.false_pass_upper, c.null_passes, c.null_replicates, FALSE_PASS_MAX),
             (c.false_fail_upper, fails, c.replicates, FALSE_FAIL_MAX))
    return " / ".join("unknown" if k is None else f"≤ {shown_bound(bound, limit)} ({k} of {n})"
                      for bound, k, n, limit in rates)


def _outcome(check: Check) -> str:
    """The outcome cell: pass, **fail**, or 'inconclusive: <why>'; a check the verdict does not rest on says so."""
    text = {PASS: "pass", FAIL: "**fail**", INCONCLUSIVE: f"inconclusive: {check.reason}"}[check.outcome]
    if not check.core:
        return f"{text} (side check, beside the verdict)"
    return text if check.calibration is not None else f"{text} (beside the verdict)"


def _to_decide(core: list[Check]) -> list[str]:
    """'What would decide it': for each inconclusive core check, the design its page names (`Check.to_decide`),
    else the replicates its bound needs."""
    open_ = [c for c in core if c.outcome == INCONCLUSIVE]
    if not open_:
        return []
    return ["", "**What would decide it.**", ""] + [f"- “{_cell(c.check)}”: {_cell(c.to_decide or c.reason)}"
                                                    + _parameters(c) for c in open_]


def _parameters(check: Check) -> str:
    """' — its parameters: `-p steps 4800`' for a check that names its deciding design as parameters, else ''."""
    if not check.deciding_parameters:
        return ""
    flags = " ".join(f"-p {k} {json.dumps(v)}" for k, v in sorted(check.decide_with.items()))
    return f" — its parameters: `{flags}`"


SMOKE = "smoke test, not a result"  # a smoke-profile page's word: its tiny budgets only test that the code runs


def shown_word(verdict: Verdict, dry_run: str | None = None, smoke: bool = False,
               unknown: tuple[str, ...] = ()) -> str:
    """The word a page carries (box, result.json, dashboard): `SMOKE` for a smoke run, "dry run at scale S" for a
    dry run, "checks on MODEL: N pass, M fail" for models this book does not know (`unknown`), else the verdict's."""
    if smoke:
        return SMOKE
    if dry_run:
        return dry_run
    if unknown:
        more = f", {verdict.inconclusive} inconclusive" if verdict.inconclusive else ""
        return f"checks on {', '.join(unknown)}: {verdict.passed} pass, {verdict.failed} fail{more}"
    return verdict.word


def scope(models: list[str], profile: str) -> str:
    """What a verdict word is about: 'on minilm-mlm and minilm6-mlm at `cpu` scale'."""
    names = [str(m) for m in models]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"on {joined} at `{profile}` scale"


def _headline(verdict: Verdict, dry_run: str | None, smoke: bool, unknown: tuple[str, ...], where: str = "") -> str:
    """The box's first line: the verdict, its scope (`where`, `scope`) and its reason, or what the page is in place of
    one (`shown_word`); a page run on models this book does not know says so."""
    word = shown_word(verdict, dry_run, smoke, unknown)
    if smoke:
        line = (f"**Verdict: {word}** (the smoke profile only tests the code path; its checks: {verdict.word}, "
                f"{verdict.summary}).")
    elif dry_run:
        line = (f"**Verdict: {word}, not a result** (budgets scaled down; at this scale: {verdict.word}, "
                f"{verdict.summary}).")
    else:
        scoped = f"{word.removesuffix(' at this scale')} {where}" if where and not unknown else word
        line = f"**Verdict: {scoped}.** {verdict.reason}."
    if unknown:
        one = len(unknown) == 1
        line += (f" Run on {', '.join(unknown)}, {'a model' if one else 'models'} this book does not know: the checks "
                 f"ran, but no verdict claims the paper's result for {'it' if one else 'them'}.")
    return line


def box_markdown(claim: str, build: str, numbers: dict[str, str], checks: list[Check], verdict: Verdict,
                 dry_run: str | None = None, not_shown: str = "", paper: str = "", smoke: bool = False,
                 unknown: tuple[str, ...] = (), where: str = "", provenance: Provenance | None = None) -> str:
    """The box as MyST Markdown: verdict line with its scope (`where`) and reason, the earlier rules' outcome where
    the rules were revised after an outcome (`provenance`), claim, what the paper reports, build, key numbers, the
    checks with their error bounds under a header that says whether their rules were stated before the run, what
    would decide each inconclusive core check, and what this build does not show (the book links its glossary
    terms: `book.page_links`). `smoke` (a smoke-profile run) or
    `dry_run` ("dry run at scale S") replaces the verdict line, and `unknown` (the models this book does not know
    that the page ran on) its word (`_headline`)."""
    headline = _headline(verdict, dry_run, smoke, unknown, where)
    lines = [headline, ""]
    if provenance is not None and not provenance.stated_before_run:
        lines += [f"**Under the earlier rules.** This page's rules were {provenance.label}; its outcome before the "
                  f"last recorded revision: {provenance.previous}.", ""]
    lines += [f"**The claim.** {claim}", ""]
    if paper:
        lines += [f"**What the paper reports.** {paper}", ""]
    lines += [f"**This build.** {build}", "",
             "| this run | value |", "| --- | --- |"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in numbers.items()]
    stated = f"check, rules {provenance.label}" if provenance is not None else "check"
    lines += ["", f"| {stated} | value | rule | false pass / false fail (one-sided 95 % bound) "
              "| outcome |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {_cell(c.check)} | {_cell(c.value)} | {_cell(c.threshold)} | {_bounds(c)} | {_cell(_outcome(c))} |"
              for c in checks]
    lines += _to_decide(verdict_checks(checks))
    if not_shown:
        lines += ["", f"**What this build does not show.** {not_shown}"]
    lines += ["", f"*Rule:* {RULE}. Each check's calibration and what would make it decisive: `checks.csv`."]
    return "\n".join(lines)
