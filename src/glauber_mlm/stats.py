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
