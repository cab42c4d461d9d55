"""Influence and margins (page 05): whether every cell is fast, and censored dwell fits for the margin theorem.
"""
from __future__ import annotations

import numpy as np

from .growth import ising_coupling_samples


def every_cell_fast(cells) -> bool | None:
    """The rule of notebook 05 on [(times, met) per cell]: True when every cell's censored median coupling time
    (`stats.censored_median`: censored pairs as +∞) is finite, i.e. more than half its pairs met within the budget;
    None when there is no cell."""
    from ...stats import censored_median

    return None if not cells else all(np.isfinite(censored_median(t, m)) for t, m in cells)


def fast_cells_calibration(cells, replicates: int = 40, slow_factor: float = 1.0, seed: int = 0):
    """Power and size of `every_cell_fast` at a set of cells [(n, pairs, budget)], each with its own length, pairs
    and budget: power on the Ising chain at J/τ = 1/2 (T ≈ (n/δ)·log(n/2), δ = 1 − tanh ½, fast), size on its twin
    without the effect: the same times scaled so that each cell's law has median `slow_factor` × its budget (1: the
    slow law nearest to fast, each replicate's median as likely below the budget as above) and cut at the budget.
    Each cell draws its own planted pairs, so k cells pass the boundary null together about 2^−k of the time."""
    from ..checks import Calibration

    cells = [(int(n), int(p), int(b)) for n, p, b in cells]
    if not cells:
        raise ValueError("fast_cells_calibration needs at least one (n, pairs, budget) cell.")
    per_cell, factor = [], []  # per cell: replicates × (times, met), and the factor that makes it slow
    for k, (n, pairs, budget) in enumerate(cells):
        s = ising_coupling_samples(seed * 1009 + k, replicates, [n], pairs, budget, coupling=1.0, temperature=2.0)
        per_cell.append([(t, m) for _, t, m in s])
        # the law's median (pooled over the replicates), so that each replicate's own median scatters around
        # slow_factor × budget as a slow chain's would, rather than sitting on it
        pooled = np.median(np.concatenate([np.where(m, t, np.inf) for _, t, m in s]))
        factor.append(slow_factor * budget / pooled if np.isfinite(pooled) else np.inf)

    def slow(times, met, f, budget):
        new = np.round(times * f) if np.isfinite(f) else np.full_like(times, np.inf)
        return np.minimum(new, budget), met & (new <= budget)

    power = np.mean([every_cell_fast([c[r] for c in per_cell]) is True for r in range(replicates)])
    size = np.mean([every_cell_fast([slow(*c[r], f, b) for c, f, (_, _, b) in zip(per_cell, factor, cells)]) is True
                    for r in range(replicates)])
    shown = ", ".join(f"n = {n} ({p} pairs, budget {b})" for n, p, b in sorted(set(cells)))
    on = (f"Ising chain (J/τ = 1/2, fast) / its twin replanted to a median of {slow_factor:g} × the budget (slow), "
          f"at {len(cells)} cells: {shown}")
    return Calibration(float(power), float(size), replicates, on)


def censored_dwells(rng: np.random.Generator, x, remaining, c: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """(dwell, censored): geometric dwells with escape hazard λ = exp(−(c·x + b)) per step, cut at `remaining` steps
    (the rest of each chain's run), so the planted data are censored as the page's are."""
    lam = np.exp(-(c * np.asarray(x, float) + b))
    d = rng.geometric(-np.expm1(-lam))
    remaining = np.asarray(remaining)
    return np.minimum(d, remaining), d > remaining


def dwell_fit_calibration(x, remaining, groups, b: float, rule, truth_c: float, null_c: float, replicates: int = 30,
                          n_boot: int = 200, seed: int = 0):
    """Power and size of a rule on `margins.fit_censored_dwell`'s result at notebook 05's design (its traps' m/τ,
    their chains and how much of each chain's run was left): planted dwells with c = `truth_c` and with c = `null_c`."""
    from ..checks import calibrate
    from ...measures.margins import fit_censored_dwell

    def draw(c: float):
        def sample(rng: np.random.Generator):
            d, cens = censored_dwells(rng, x, remaining, c, b)
            return fit_censored_dwell(x, d, cens, groups, n_boot=n_boot, seed=int(rng.integers(2**31)))
        return sample

    return calibrate(rule, draw(truth_c), draw(null_c), replicates, seed=seed,
                     calibrated_on=(f"planted censored geometric dwells at these traps' m/τ (b = {b:.2f}): "
                                    f"c = {truth_c:g} / c = {null_c:g}"))
