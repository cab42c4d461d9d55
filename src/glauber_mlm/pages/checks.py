"""Checks that could fail: a decision rule, its value on this run, and its power and size at this run's design.

A check is a rule (a statistic and a threshold) stated before the run. Before it decides anything, the same
rule is run, at the page's own design (lengths, pairs, chains, steps), on replicate data from a planted truth,
where the claim holds, and from a planted null, where it fails (`calibrate`):

    power = P(rule passes | planted truth)      size = P(rule passes | planted null)

A check decides (outcome `pass` or `fail`) only where power ≥ 0.8 and size ≤ 0.1; otherwise, or when it was not
calibrated or could not be computed, its outcome is `inconclusive`, and `to_decide` says what design would make
it decisive. Every page writes its checks as checks.csv (`table`), and `verdict.judge` turns the outcomes into
the page's verdict.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

POWER_MIN, SIZE_MAX = 0.8, 0.1
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
COLUMNS = ["check", "statistic", "threshold", "value", "outcome", "power", "size", "calibrated_on", "replicates",
           "rule_says", "core", "to_decide"]


@dataclass(frozen=True)
class Calibration:
    """The rule's pass rates over `replicates` runs on a planted truth (power) and on a planted null (size)."""
    power: float
    size: float
    replicates: int
    calibrated_on: str            # the planted truth / the planted null, in words

    @property
    def decisive(self) -> bool:
        return self.power >= POWER_MIN and self.size <= SIZE_MAX

    def __str__(self) -> str:
        return f"power {self.power:.2f}, size {self.size:.2f} ({self.replicates} replicates)"


def calibrate(rule: Callable[[object], bool | None], truth: Callable[[np.random.Generator], object],
              null: Callable[[np.random.Generator], object], replicates: int, calibrated_on: str,
              seed: int = 0) -> Calibration:
    """Power and size of `rule` from `replicates` draws of planted data: `truth(rng)` where the claim holds,
    `null(rng)` where it fails. A replicate on which the rule cannot be computed (None) counts as not passing."""
    if isinstance(replicates, bool) or not isinstance(replicates, (int, np.integer)) or replicates < 1:
        raise ValueError(f"replicates must be a whole number ≥ 1 (runs of the rule on each planted law), got {replicates!r}.")
    truth_rng, null_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    power = np.mean([rule(truth(truth_rng)) is True for _ in range(replicates)])
    size = np.mean([rule(null(null_rng)) is True for _ in range(replicates)])
    return Calibration(float(power), float(size), int(replicates), calibrated_on)


@dataclass(frozen=True)
class Check:
    """One row of checks.csv: the rule stated before the run, its value here, and its calibration (None: not
    calibrated at this design, so it cannot decide)."""
    check: str                    # the sentence, stated before the run
    statistic: str                # what is computed
    threshold: str                # the rule that turns it into pass / fail
    value: str                    # this run's statistic, formatted
    passes: bool | None           # the rule's answer on this run (None: not computable at this scale)
    calibration: Calibration | None
    core: bool = True             # a decisive fail of a core check means "not reproduced"
    to_decide: str = ""           # what design would make an inconclusive check decisive

    def __post_init__(self):
        if self.passes is not None and not isinstance(self.passes, (bool, np.bool_)):
            raise ValueError(f"check {self.check!r}: passes must be True, False or None (not computable), got "
                             f"{self.passes!r}: compare the statistic with the threshold and pass the bool.")
        object.__setattr__(self, "passes", None if self.passes is None else bool(self.passes))

    @property
    def outcome(self) -> str:
        if self.passes is None or self.calibration is None or not self.calibration.decisive:
            return INCONCLUSIVE
        return PASS if self.passes else FAIL

    @property
    def reason(self) -> str:
        """Why an inconclusive check does not decide, in a few words."""
        if self.passes is None:
            return "not computable at this scale"
        if self.calibration is None:
            return "not calibrated on a planted truth at this design"
        c = self.calibration
        weak = [f"power {c.power:.2f} < {POWER_MIN}"] * (c.power < POWER_MIN) + [f"size {c.size:.2f} > {SIZE_MAX}"] * (c.size > SIZE_MAX)
        return ", ".join(weak) or "decisive"

    def row(self) -> dict:
        c = self.calibration
        return dict(check=self.check, statistic=self.statistic, threshold=self.threshold, value=self.value,
                    outcome=self.outcome, power=c.power if c else np.nan, size=c.size if c else np.nan,
                    calibrated_on=c.calibrated_on if c else "not calibrated", replicates=c.replicates if c else 0,
                    rule_says={True: "pass", False: "fail", None: "not computable"}[self.passes], core=self.core,
                    to_decide="" if self.outcome != INCONCLUSIVE else (self.to_decide or self.reason))


def table(checks: list[Check]) -> pd.DataFrame:
    """checks.csv: one row per check, in the columns of `COLUMNS`."""
    if not checks or not all(isinstance(c, Check) for c in checks):
        raise ValueError("a page needs at least one Check (glauber_mlm.pages.checks.Check): name what it tests before it runs.")
    return pd.DataFrame([c.row() for c in checks], columns=COLUMNS)


def smallest_decisive(designs: dict[str, Calibration]) -> str:
    """'decisive at <design>' for the first design in `designs` (ordered from cheap to costly) whose calibration is
    decisive, else 'not decisive up to <the last design>': what an inconclusive check would need."""
    for design, cal in designs.items():
        if cal.decisive:
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
