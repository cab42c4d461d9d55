"""Uncertainty for the book's headline numbers: bootstrap intervals, censored medians, n log n fits."""
from __future__ import annotations

import numpy as np


def bootstrap_ci(values, statistic=np.mean, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): the statistic and its percentile bootstrap interval over the given samples."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("bootstrap_ci needs at least one value.")
    rng = np.random.default_rng(seed)
    boots = np.array([statistic(values[rng.integers(0, values.size, values.size)]) for _ in range(n_boot)])
    tail = (1 - level) / 2
    return float(statistic(values)), float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))


def censored_median(times, met) -> float:
    """Median coupling time when censored pairs (never met) count as +∞; inf if half or more are censored."""
    t = np.where(np.asarray(met, bool), np.asarray(times, float), np.inf)
    return float(np.median(t))


def slow_to_fast_boundary(temperatures, median_times) -> float:
    """Lowest grid τ from which on every (censored) median coupling time is finite; nan if the highest τ is slow."""
    taus = np.asarray(temperatures, float)
    order = np.argsort(taus)
    taus, finite = taus[order], np.isfinite(np.asarray(median_times, float)[order])
    if finite.size == 0 or not finite[-1]:
        return float("nan")
    slow = np.flatnonzero(~finite)
    return float(taus[slow[-1] + 1] if slow.size else taus[0])


def proportion_ci(successes: int, trials: int, level: float = 0.95) -> tuple[float, float, float]:
    """(p̂, low, high): Wilson score interval for a binomial proportion."""
    if trials <= 0:
        raise ValueError("proportion_ci needs at least one trial.")
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2)) / (1 + z * z / trials)
    return p, float(centre - half), float(centre + half)


SCALINGS = {"n": lambda n: n, "n log n": lambda n: n * np.log(n), "n^2": lambda n: n**2}


def fit_scaling(n, T) -> dict[str, tuple[float, float]]:
    """For each law T ≈ C·f(n) (f = n, n log n, n²): least-squares C through the origin and R² on log T.

    R² is measured on log T, so small and large n weigh alike; the best law has the largest R².
    """
    n, T = np.asarray(n, float), np.asarray(T, float)
    out = {}
    for name, f in SCALINGS.items():
        x = f(n)
        C = float(np.sum(x * T) / np.sum(x * x))
        resid = np.log(T) - np.log(C * x)
        r2 = 1 - np.sum(resid**2) / np.sum((np.log(T) - np.log(T).mean()) ** 2)
        out[name] = (C, float(r2))
    return out


def censored_median_ci(times, met, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(median, low, high): `censored_median` and its percentile bootstrap interval over pairs (bounds may be inf)."""
    t = np.where(np.asarray(met, bool), np.asarray(times, float), np.inf)
    if t.size == 0:
        raise ValueError("censored_median_ci needs at least one pair.")
    rng = np.random.default_rng(seed)
    boots = np.median(t[rng.integers(0, t.size, (n_boot, t.size))], axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(boots, [tail, 1 - tail], method="inverted_cdf")
    return float(np.median(t)), float(low), float(high)


def fit_scaling_ci(n, times, met=None, level: float = 0.95, n_boot: int = 1000, seed: int = 0
                   ) -> dict[str, tuple[float, float, float, float]]:
    """Per law (n, n log n, n²): (C, low, high, R²) for T ≈ C·f(n) fitted to the censored median T per length.

    One entry per pair: its length `n`, coupling time and whether it met. C and R² come from `fit_scaling`
    on the per-length medians; the interval resamples pairs within each length (percentile bootstrap).
    A median beyond the budget (half or more censored) makes C infinite: no finite fit exists there.
    """
    n, times = np.asarray(n, float), np.asarray(times, float)
    met = np.ones(n.shape, bool) if met is None else np.asarray(met, bool)
    t = np.where(met, times, np.inf)
    lengths = np.unique(n)
    if lengths.size < 2:
        raise ValueError(f"fitting a scaling law needs at least two lengths, got {lengths.tolist()}.")

    def fit(medians: np.ndarray) -> dict[str, tuple[float, float]]:
        if not np.isfinite(medians).all():
            return {law: (np.inf, np.nan) for law in SCALINGS}
        return fit_scaling(lengths, medians)

    groups = [t[n == m] for m in lengths]
    point = fit(np.array([np.median(g) for g in groups]))
    rng = np.random.default_rng(seed)
    boot_medians = np.stack([np.median(g[rng.integers(0, g.size, (n_boot, g.size))], axis=1) for g in groups], 1)
    boots = {law: np.empty(n_boot) for law in SCALINGS}
    for b in range(n_boot):
        for law, (C, _) in fit(boot_medians[b]).items():
            boots[law][b] = C
    tail = (1 - level) / 2
    out = {}
    for law, (C, r2) in point.items():
        low, high = np.quantile(boots[law], [tail, 1 - tail], method="inverted_cdf")
        out[law] = (C, float(low), float(high), r2)
    return out
