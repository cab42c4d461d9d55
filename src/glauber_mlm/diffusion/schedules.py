"""Time grids and remasking schedules of masked-diffusion samplers: what each step of a T-step run does.

MDLM (Sahoo et al. 2024) with the log-linear schedule α(t) = 1 − t on the grid t_j = 1 − j/T: step j goes from t to
s = t − 1/T and a masked site unmasks with probability (α_s − α_t)/(1 − α_t); the last step (s = 0) unmasks every
remaining mask. ReMDM (Wang et al. 2025, arXiv 2503.00307, §3–4) adds a remasking probability σ_t of a decoded site,
0 ≤ σ_t ≤ σ_max = min(1, (1 − α_s)/α_t), and unmasks with p(c)(α_s − (1 − σ_t)α_t)/(1 − α_t):
cap σ_t = min(η, σ_max); rescale σ_t = η·σ_max; loop: α rises linearly to α_on at t_on with no remasking, stays at
α_on from t_on to t_off while sites are remasked with σ_t = min(η, σ_max) (the corrector phase), then rises to 1 by
t = 0 with no remasking. LLaDA (Nie et al. 2025) commits a fixed number of sites per step, n split evenly over T.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..validate import check_int, check_real

REMDM_SCHEDULES = ("cap", "rescale", "loop")


@dataclass(frozen=True)
class StepRates:
    """One step's per-site rates: a masked site unmasks with `unmask` (times p(c)), a decoded one remasks with
    `remask` (σ_t)."""

    unmask: float
    remask: float


def check_steps(steps) -> int:
    """T ≥ 1 steps."""
    return check_int("steps", steps, 1)


def mdlm_rates(steps: int) -> list[StepRates]:
    """MDLM on the log-linear grid: unmask (α_s − α_t)/(1 − α_t) = (t − s)/t, no remasking; the last step unmasks all."""
    T = check_steps(steps)
    return [StepRates((t - s) / t, 0.0) for t, s in ((1 - j / T, 1 - (j + 1) / T) for j in range(T))]


def loop_alpha(t: float, t_on: float, t_off: float, alpha_on: float) -> float:
    """ReMDM-loop's α(t): 0 → α_on linearly on [t_on, 1], α_on on [t_off, t_on], α_on → 1 linearly on [0, t_off]."""
    if t >= t_on:
        return alpha_on * (1 - t) / (1 - t_on)
    if t >= t_off:
        return alpha_on
    return alpha_on + (1 - alpha_on) * (t_off - t) / t_off


def remdm_rates(steps: int, schedule: str = "cap", eta: float = 0.02, t_on: float = 0.55, t_off: float = 0.05,
                alpha_on: float = 0.9) -> list[StepRates]:
    """ReMDM's per-step rates (arXiv 2503.00307): σ_t by `schedule` (cap: min(η, σ_max); rescale: η·σ_max; loop:
    min(η, σ_max) between t_on and t_off, 0 elsewhere, on `loop_alpha`), unmask (α_s − (1 − σ_t)α_t)/(1 − α_t)."""
    T = check_steps(steps)
    if schedule not in REMDM_SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(map(repr, REMDM_SCHEDULES))}, got {schedule!r}.")
    eta = check_real("eta", eta, 0, fix="η is the remasking strength, e.g. 0.02.")
    if schedule == "loop":
        t_on, t_off = check_real("t_on", t_on, 0, above=True), check_real("t_off", t_off, 0, above=True)
        alpha_on = check_real("alpha_on", alpha_on, 0, above=True)
        if not (t_off < t_on < 1 and alpha_on < 1):
            raise ValueError(f"the loop needs 0 < t_off < t_on < 1 and 0 < α_on < 1, got t_off = {t_off}, "
                             f"t_on = {t_on}, α_on = {alpha_on}.")
        alpha = lambda t: loop_alpha(t, t_on, t_off, alpha_on)  # noqa: E731
    else:
        alpha = lambda t: 1 - t  # noqa: E731
    rates = []
    for j in range(T):
        t, s = 1 - j / T, (1 - (j + 1) / T if j < T - 1 else 0.0)
        a_t, a_s = alpha(t), alpha(s)
        top = min(1.0, (1 - a_s) / a_t) if a_t > 0 else 1.0
        if schedule == "cap":
            sigma = min(eta, top)
        elif schedule == "rescale":
            sigma = eta * top
        else:
            sigma = min(eta, top) if t_off < t <= t_on else 0.0
        sigma = sigma if a_t > 0 else 0.0  # nothing is decoded yet
        rates.append(StepRates(min(1.0, (a_s - (1 - sigma) * a_t) / (1 - a_t)), sigma))
    return rates


def commit_counts(n: int, steps: int) -> list[int]:
    """LLaDA's commits per step: n split over T steps as evenly as it goes, the remainder on the first steps."""
    n, T = check_int("n", n, 1), check_steps(steps)
    if T > n:
        raise ValueError(f"LLaDA-style sampling commits at least one site per step: steps ≤ n = {n}, got {T}.")
    return [n // T + (j < n % T) for j in range(T)]
