"""The coupling inequality against an exact distance: sampled coupling times must bound the exact TV from above.

For coupled chains from (x, y), P(T > t) ≥ TV(P^t(x, ·), P^t(y, ·)) at every t. With N pairs the empirical survival
Ŝ(t) (pairs not met by step t; a pair censored at the budget counts as not met at every t < budget) lies within
ε_N = √(log(1/α) / 2N) of P(T > t) at every t at once with probability ≥ 1 − α (the one-sided
Dvoretzky–Kiefer–Wolfowitz–Massart bound). The rule: Ŝ(t) + ε_N ≥ TV_t at every t < budget of every cell, at level
α / cells (Bonferroni). It fails only where the coupling under-reports its times, by more than sampling noise.

Calibration (`calibration`): the planted truth draws each cell's N times from the law whose survival is the exact TV
curve itself, the tightest coupling the inequality allows (power); the planted null halves those times, a coupling
that meets faster than any coupling can (size).

The L-lag bound (`samplers.lag_coupling`) is held to an exact d(t) the same way (`covers`, notebook 07's rule); its
planted null halves each run's coupled phase (`halved_meetings`).
"""
from __future__ import annotations

import math

import numpy as np

from .checks import Calibration, calibrate


def survival(times, met, budget: int) -> np.ndarray:
    """Ŝ(t) = share of pairs with T > t, t = 0 … budget − 1 (a censored pair has T > t for every t < budget)."""
    times, met = np.asarray(times), np.asarray(met, dtype=bool)
    T = np.where(met, times, budget)
    return (T[None, :] > np.arange(budget)[:, None]).mean(1)


def dkw_margin(pairs: int, alpha: float) -> float:
    """ε with P(sup_t (S(t) − Ŝ(t)) > ε) ≤ α for N = `pairs` i.i.d. times: √(log(1/α) / 2N)."""
    return math.sqrt(math.log(1 / alpha) / (2 * pairs))


def slack(times, met, exact_tv, budget: int, alpha: float) -> float:
    """min over t < budget of Ŝ(t) + ε_N − TV_t: ≥ 0 where the sampled times bound the exact distance."""
    tv = np.asarray(exact_tv, dtype=float)[:budget]
    s = survival(times, met, budget)[: tv.size]
    return float((s + dkw_margin(np.asarray(times).size, alpha) - tv).min())


def holds(cells, budget: int, level: float = 0.05) -> bool:
    """The rule on every cell (times, met, exact TV curve) at level `level` / cells."""
    return all(slack(times, met, tv, budget, level / len(cells)) >= 0 for times, met, tv in cells)


def draw_times(exact_tv, pairs: int, budget: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N times with P(T > t) = TV_t: T = min{t : TV_t ≤ U}, U uniform; T ≥ budget is censored (time = budget)."""
    tv = np.asarray(exact_tv, dtype=float)[:budget]
    u = rng.random(pairs)
    below = tv[None, :] <= u[:, None]
    T = np.where(below.any(1), below.argmax(1), budget)
    return T, T < budget


def calibration(curves: list, pairs: int, budget: int, replicates: int, level: float = 0.05,
                seed: int = 0) -> Calibration:
    """Power and size of `holds` at this design (`pairs` per cell, `budget`): on times drawn from each exact curve
    (the tightest coupling), and on those times halved (a coupling faster than the exact distance allows)."""

    def truth(rng):
        return [(*draw_times(tv, pairs, budget, rng), tv) for tv in curves]

    def null(rng):
        return [(T // 2, met, tv) for T, met, tv in truth(rng)]

    return calibrate(lambda cells: holds(cells, budget, level), truth, null, replicates,
                     "times drawn with P(T > t) = the exact TV (truth) / those times halved (null)", seed)


def covers(high, exact_tv, floor: float = 0.02) -> bool | None:
    """The L-lag rule (notebook 07's): the bound's upper interval end ≥ the exact d(t) at every t of the grid where
    d(t) ≥ `floor` (below it the bound's rare non-zero terms say nothing); None where no t is read."""
    high, tv = np.asarray(high, dtype=float), np.asarray(exact_tv, dtype=float)[: np.size(high)]
    read = tv >= floor
    return None if not read.any() else bool((high[: tv.size][read] >= tv[read]).all())


def halved_meetings(result):
    """A planted too-fast L-lag run: each coupled phase half as long, τ_L ↦ L + ⌊(τ_L − L)/2⌋ (censored runs kept)."""
    from dataclasses import replace

    return replace(result, meeting_times=result.lag + (result.meeting_times - result.lag) // 2)
