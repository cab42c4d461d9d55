"""Checks that could fail: a decision rule, its answer on this run, and its two error rates at this run's design.

A check is a rule (a statistic and a threshold) stated before the run (a rule revised after an outcome was seen says
so in its page's box: `history.Provenance`). Before it decides anything, the same
rule is run, at the page's own design (lengths, pairs, chains, steps), on replicate data from a planted truth,
where the claim holds, and from a planted null, where it fails (`calibrate`). Each outcome is charged its own error:

    false-pass rate = size      = P(rule passes | planted null)
    false-fail rate = 1 − power = P(rule does not pass | planted truth)

each measured as a count of replicates, with its one-sided 95 % upper Clopper–Pearson bound (`upper_bound`).
A check **passes** decisively when its rule says pass and the false-pass rate's bound is ≤ 0.10; it **fails**
decisively when its rule says fail and the false-fail rate's bound is ≤ 0.20; otherwise, or when it was not
calibrated or could not be computed, its outcome is `inconclusive`, and its reason names the bound that is too
wide and how many replicates would narrow it (`replicates_to_bound`), while `to_decide` names the design that
would decide it and `decide_with` gives that design as the page's parameters (`deciding_design`), so that the book
can price it (`glauber_mlm.book.deciding_cost`). Every page writes its checks as checks.csv (`table`), and `verdict.judge` turns the outcomes of
its core checks into the page's verdict.
"""
from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import beta

FALSE_PASS_MAX, FALSE_FAIL_MAX = 0.10, 0.20   # the largest one-sided 95 % upper bounds that let a pass / a fail decide
CONFIDENCE = 0.95
MOST_REPLICATES = 100_000                     # `replicates_to_bound` looks no further
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
COLUMNS = ["check", "statistic", "threshold", "value", "outcome", "power", "size", "calibrated_on", "replicates",
           "rule_says", "core", "to_decide", "truth_replicates", "null_replicates", "false_pass_upper",
           "false_fail_upper", "decided_by", "decide_with"]
DECIDED_BY = {PASS: f"pass: false-pass bound ≤ {FALSE_PASS_MAX:.2f}",
              FAIL: f"fail: false-fail bound ≤ {FALSE_FAIL_MAX:.2f}"}


def shown_bound(bound: float, limit: float) -> str:
    """An error bound to 2 decimals, or to 3 where 2 would round a bound above `limit` onto it (0.1014 against 0.10:
    '0.101', never '0.10')."""
    return f"{bound:.3f}" if round(bound, 2) <= limit < bound else f"{bound:.2f}"


def upper_bound(errors: int, replicates: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided upper Clopper–Pearson bound of an error rate seen `errors` times in `replicates` runs: the
    `confidence` quantile of Beta(k + 1, n − k), a bound that lies above the true rate in at least a share
    `confidence` of calibrations (one-sided 95 % by default; 0 of n gives 1 − 0.05^(1/n)). 1 when every run erred."""
    if not 0 <= errors <= replicates or replicates < 1:
        raise ValueError(f"an error count must lie in [0, replicates] with replicates ≥ 1, got {errors} of "
                         f"{replicates}.")
    return 1.0 if errors == replicates else float(beta.ppf(confidence, errors + 1, replicates - errors))


@functools.lru_cache(maxsize=1024)
def replicates_to_bound(rate: float, limit: float, confidence: float = CONFIDENCE) -> int | None:
    """The smallest replicate count n at which an error rate observed at `rate` (round(rate · n) errors of n) has a
    one-sided upper bound (`upper_bound`) ≤ `limit`: 29 for rate 0 and limit 0.10. None when no count up to
    `MOST_REPLICATES` does (a rate at or above the limit never does: the design, not the replicates, must change)."""
    if not 0 <= rate <= 1 or not 0 < limit < 1:
        raise ValueError(f"rate must lie in [0, 1] and limit in (0, 1), got rate {rate!r}, limit {limit!r}.")
    if rate >= limit:
        return None
    start = 1
    while start <= MOST_REPLICATES:   # scan in doubling blocks: cheap where the answer is small
        n = np.arange(start, min(2 * start, MOST_REPLICATES + 1))
        k = np.minimum(np.round(rate * n), n - 1)
        hits = np.flatnonzero(beta.ppf(confidence, k + 1, n - k) <= limit)
        if hits.size:
            return int(n[hits[0]])
        start *= 2
    return None


def _count(rate: float, replicates: int, what: str) -> int | None:
    """`rate · replicates` rounded to a whole count (None for an unknown rate, NaN); a rate outside [0, 1] is
    refused."""
    if math.isnan(rate):
        return None
    if not 0 <= rate <= 1:
        raise ValueError(f"{what} must be a rate in [0, 1] (or NaN: unknown), got {rate!r}.")
    return round(rate * replicates)


def _whole(n, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{what} must be a whole number ≥ 1 (runs of the rule on a planted law), got {n!r}.")
    return int(n)


@dataclass(frozen=True)
class Calibration:
    """The rule's pass rates on a planted truth (power, over `replicates` runs) and on a planted null (size, over
    `null_replicates` runs; None: as many as on the truth). A rate times its replicates is its count, rounded (a
    rate combined from several calibrations may not be an exact count); a NaN rate is unknown and decides nothing."""
    power: float
    size: float
    replicates: int               # runs on the planted truth
    calibrated_on: str            # the planted truth / the planted null, in words
    null_replicates: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "replicates", _whole(self.replicates, "replicates"))
        nulls = self.replicates if self.null_replicates is None else _whole(self.null_replicates, "null_replicates")
        object.__setattr__(self, "null_replicates", nulls)
        for rate, n, what in ((self.power, self.replicates, "power"), (self.size, nulls, "size")):
            _count(rate, n, what)  # refuses a rate outside [0, 1]

    @classmethod
    def from_counts(cls, truth_passes: int, truth_replicates: int, null_passes: int, null_replicates: int,
                    calibrated_on: str) -> "Calibration":
        """The calibration of a rule that passed `truth_passes` of `truth_replicates` planted truths and `null_passes`
        of `null_replicates` planted nulls."""
        for passes, n, what in ((truth_passes, truth_replicates, "truth"), (null_passes, null_replicates, "null")):
            if not 0 <= passes <= _whole(n, f"{what}_replicates"):
                raise ValueError(f"{what}_passes must lie in [0, {n}], got {passes!r}.")
        return cls(truth_passes / truth_replicates, null_passes / null_replicates, truth_replicates, calibrated_on,
                   null_replicates)

    @property
    def truth_replicates(self) -> int:
        return self.replicates

    @property
    def truth_passes(self) -> int | None:
        return _count(self.power, self.replicates, "power")

    @property
    def null_passes(self) -> int | None:
        return _count(self.size, self.null_replicates, "size")

    @property
    def false_pass_upper(self) -> float:
        """One-sided 95 % upper bound of the size (NaN when the size is unknown)."""
        k = self.null_passes
        return math.nan if k is None else upper_bound(k, self.null_replicates)

    @property
    def false_fail_upper(self) -> float:
        """One-sided 95 % upper bound of 1 − power (NaN when the power is unknown)."""
        k = self.truth_passes
        return math.nan if k is None else upper_bound(self.replicates - k, self.replicates)

    def decides(self, passes: bool) -> bool:
        """Whether the rule's answer `passes` decides: a pass when the false-pass bound is ≤ 0.10, a fail when the
        false-fail bound is ≤ 0.20 (a NaN bound never decides)."""
        return self.false_pass_upper <= FALSE_PASS_MAX if passes else self.false_fail_upper <= FALSE_FAIL_MAX

    @property
    def decisive(self) -> bool:
        """Whether this design decides whichever way the rule answers (both bounds within their limits)."""
        return self.decides(True) and self.decides(False)

    def why_not(self, passes: bool) -> str:
        """Why the answer `passes` does not decide: the bound that is too wide, its count, and the replicates that
        would narrow it at the observed rate."""
        says, error, limit = (("pass", "false-pass", FALSE_PASS_MAX) if passes else
                              ("fail", "false-fail", FALSE_FAIL_MAX))
        planted, n = ("null", self.null_replicates) if passes else ("truth", self.replicates)
        k = self.null_passes if passes else (None if self.truth_passes is None else n - self.truth_passes)
        if k is None:
            return (f"rule says {says}, but its {error} rate is unknown (the calibration could not run its planted "
                    f"{planted})")
        bound, event = upper_bound(k, n), "passed" if passes else "did not pass"
        need = replicates_to_bound(k / n, limit)
        more = (f"{need} {planted} replicates would bound it at {limit:.2f}" if need else
                f"at its observed rate ({k / n:.2f}) no number of replicates would bound it at {limit:.2f}: "
                "the design must change")
        return (f"rule says {says}, but the {error} rate's one-sided 95 % upper bound is {shown_bound(bound, limit)} "
                f"({k} of {n} {planted} replicates {event}); {more}")

    def __str__(self) -> str:
        return (f"power {self.power:.2f} ({self.truth_passes} of {self.replicates}), size {self.size:.2f} "
                f"({self.null_passes} of {self.null_replicates}); false-pass ≤ {self.false_pass_upper:.2f}, "
                f"false-fail ≤ {self.false_fail_upper:.2f} (one-sided 95 %)")


def calibrate(rule: Callable[[object], bool | None], truth: Callable[[np.random.Generator], object],
              null: Callable[[np.random.Generator], object], replicates: int, calibrated_on: str,
              seed: int = 0, null_replicates: int | None = None) -> Calibration:
    """Power and size of `rule` from `replicates` draws of planted data `truth(rng)`, where the claim holds, and
    `null_replicates` (None: as many) draws of `null(rng)`, where it fails. A replicate on which the rule cannot be
    computed (None) counts as not passing: a false fail on the truth, a correct refusal on the null."""
    replicates = _whole(replicates, "replicates")
    nulls = replicates if null_replicates is None else _whole(null_replicates, "null_replicates")
    truth_rng, null_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    truth_passes = sum(rule(truth(truth_rng)) is True for _ in range(replicates))
    null_passes = sum(rule(null(null_rng)) is True for _ in range(nulls))
    return Calibration.from_counts(truth_passes, replicates, null_passes, nulls, calibrated_on)


@dataclass(frozen=True)
class Check:
    """One row of checks.csv: the rule stated before the run, its value here, and its calibration (None: not
    calibrated at this design, so it cannot decide)."""
    check: str                    # the sentence the rule tests
    statistic: str                # what is computed
    threshold: str                # the rule that turns it into pass / fail
    value: str                    # this run's statistic, formatted
    passes: bool | None           # the rule's answer on this run (None: not computable at this scale)
    calibration: Calibration | None
    core: bool = True             # the verdict rests on the core checks; a side check is shown beside it
    to_decide: str = ""           # what design would decide an inconclusive check, and its cost
    decide_with: Mapping[str, object] | None = None  # that design as parameters of the page (`-p KEY VALUE`)

    def __post_init__(self):
        if self.passes is not None and not isinstance(self.passes, (bool, np.bool_)):
            raise ValueError(f"check {self.check!r}: passes must be True, False or None (not computable), got "
                             f"{self.passes!r}: compare the statistic with the threshold and pass the bool.")
        object.__setattr__(self, "passes", None if self.passes is None else bool(self.passes))
        if self.decide_with is not None and (not isinstance(self.decide_with, Mapping) or not self.decide_with
                                             or not all(isinstance(k, str) for k in self.decide_with)):
            raise ValueError(f"check {self.check!r}: decide_with must be a non-empty dict of the page's parameters "
                             f"(e.g. {{'steps': 4800}}), or None, got {self.decide_with!r}.")

    @property
    def outcome(self) -> str:
        if self.passes is None or self.calibration is None or not self.calibration.decides(self.passes):
            return INCONCLUSIVE
        return PASS if self.passes else FAIL

    @property
    def reason(self) -> str:
        """The rule that decided the outcome (`DECIDED_BY`), or why an inconclusive check does not decide."""
        if self.passes is None:
            return "not computable at this scale"
        if self.calibration is None:
            return "not calibrated on a planted truth at this design"
        return DECIDED_BY.get(self.outcome) or self.calibration.why_not(self.passes)

    def row(self) -> dict:
        c = self.calibration
        return dict(check=self.check, statistic=self.statistic, threshold=self.threshold, value=self.value,
                    outcome=self.outcome, power=c.power if c else np.nan, size=c.size if c else np.nan,
                    calibrated_on=c.calibrated_on if c else "not calibrated", replicates=c.replicates if c else 0,
                    rule_says={True: "pass", False: "fail", None: "not computable"}[self.passes], core=self.core,
                    to_decide="" if self.outcome != INCONCLUSIVE else (self.to_decide or self.reason),
                    truth_replicates=c.replicates if c else 0, null_replicates=c.null_replicates if c else 0,
                    false_pass_upper=c.false_pass_upper if c else np.nan,
                    false_fail_upper=c.false_fail_upper if c else np.nan, decided_by=self.reason,
                    decide_with=self.deciding_parameters)

    @property
    def deciding_parameters(self) -> str:
        """The design that would decide this inconclusive check, as JSON parameters ('' when it decides or when its
        page names no such design)."""
        if self.outcome != INCONCLUSIVE or not self.decide_with:
            return ""
        return json.dumps(dict(self.decide_with), sort_keys=True)


def table(checks: list[Check]) -> pd.DataFrame:
    """checks.csv: one row per check, in the columns of `COLUMNS`."""
    if not checks or not all(isinstance(c, Check) for c in checks):
        raise ValueError("a page needs at least one Check (glauber_mlm.pages.checks.Check): name what it tests before it runs.")
    return pd.DataFrame([c.row() for c in checks], columns=COLUMNS)


def deciding_design(designs: dict[str, Calibration], parameters: Mapping[str, Mapping[str, object]],
                    passes: bool | None = None) -> dict | None:
    """The page's parameters (`parameters[design]`) of the design `smallest_decisive` names: the first in `designs`
    whose calibration decides; None when none does. A design with no parameters given is refused."""
    missing = [d for d in designs if d not in parameters]
    if missing:
        raise ValueError(f"no parameters given for the designs {missing}: give each design of `designs` its page "
                         "parameters (e.g. {'steps': 4800}).")
    for design, cal in designs.items():
        if cal.decisive if passes is None else cal.decides(passes):
            return dict(parameters[design])
    return None


def smallest_decisive(designs: dict[str, Calibration], passes: bool | None = None) -> str:
    """'decisive at <design>' for the first design in `designs` (ordered from cheap to costly) whose calibration
    decides the rule's answer `passes` (None: either answer, `Calibration.decisive`), else 'not decisive up to <the
    last design>': what an inconclusive check would need."""
    for design, cal in designs.items():
        if cal.decisive if passes is None else cal.decides(passes):
            return f"decisive at {design} ({cal})"
    last, cal = list(designs.items())[-1]
    return f"not decisive up to {last} ({cal})"


def rules_source(notebook_source: str) -> str:
    """The cell of a Jupytext percent notebook that states its checks (the one calling `run.conclude(`)."""
    cells = [c for c in notebook_source.split("\n# %%") if "run.conclude(" in c]
    if len(cells) != 1:
        raise ValueError(f"a result notebook states its checks in exactly one cell calling run.conclude(, found {len(cells)}.")
    return cells[0].split("\n", 1)[1] if "\n" in cells[0] else ""


def rules_hash(notebook_source: str) -> str:
    """The first 12 hex digits of the SHA-256 of `rules_source`: what a dated entry of the rules record names."""
    import hashlib

    return hashlib.sha256(rules_source(notebook_source).encode()).hexdigest()[:12]


def rules_record(name: str, record_path=None) -> list[dict]:
    """The dated entries of notebook `name` in the rules record (notebooks/rules.json), oldest first."""
    import json
    from pathlib import Path

    path = Path(record_path) if record_path else Path(__file__).resolve().parents[3] / "notebooks" / "rules.json"
    return json.loads(path.read_text()).get(name, []) if path.is_file() else []
