"""Slow at low temperature (page 02): does the share of coupled pairs censored at the budget rise as τ falls?

The rule is a trend test over pairs: Kendall's τ_b between temperature and the censoring indicator, one-sided
(censoring falls as τ rises), passing when p < `TREND_LEVEL`. Its calibration plants censoring indicators at the
page's own design (its temperatures, lengths and pairs per cell): the null keeps each length's censoring level and
makes it the same at every τ (the twin without the trend), the truth tilts it by `TREND_SLOPE` in log-odds per unit
of ln τ around the same level, so the two differ only in the trend.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize, special, stats

TREND_LEVEL = 0.05   # one-sided p-value below which the censored share is said to rise as τ falls
TREND_SLOPE = 2.0    # the planted truth: log-odds of censoring fall by 2 per unit of ln τ (× 0.14 per doubling)


def censoring_trend(temperature, censored) -> dict:
    """Kendall's τ_b between temperature and censored (0/1) over pairs, with its one-sided p-value for "censoring
    falls as τ rises"; passes is None when either variable is constant (no trend can be read)."""
    t, c = np.asarray(temperature, float), np.asarray(censored, float)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError(f"temperature and censored must be 1-d of one length, got {t.shape} and {c.shape}.")
    if np.unique(t).size < 2 or np.unique(c).size < 2:
        return dict(kendall=float("nan"), p_value=float("nan"), passes=None)
    res = stats.kendalltau(t, c, alternative="less")
    return dict(kendall=float(res.statistic), p_value=float(res.pvalue), passes=bool(res.pvalue < TREND_LEVEL))


def rises_as_tau_falls(rows) -> bool | None:
    """The rule on (temperature, censored): True when the one-sided trend test gives p < TREND_LEVEL."""
    return censoring_trend(*rows)["passes"]


def tilted_levels(taus: np.ndarray, level: float, slope: float) -> np.ndarray:
    """Censoring probabilities expit(a − slope·ln τ) over `taus`, with a chosen so that their mean is `level`
    (constant at 0 or 1, where no tilt keeps the mean)."""
    if level <= 0 or level >= 1:
        return np.full(taus.shape, float(level))
    x = np.log(taus)
    a = optimize.brentq(lambda a: special.expit(a - slope * x).mean() - level, -60, 60)
    return special.expit(a - slope * x)


def censoring_trend_calibration(temperature, length, censored, replicates: int = 400,
                                slope: float = TREND_SLOPE, seed: int = 0):
    """Power and size of `rises_as_tau_falls` at the design of (temperature, length) per pair: each length keeps its
    observed censoring level; the null draws it at every τ alike, the truth tilts it by `slope` log-odds per ln τ."""
    from ..checks import calibrate

    t, n = np.asarray(temperature, float), np.asarray(length)
    c = np.asarray(censored, float)
    if not (t.shape == n.shape == c.shape) or t.size == 0:
        raise ValueError("temperature, length and censored must be non-empty and of one length (one row per pair).")
    null_p, truth_p = np.empty(t.size), np.empty(t.size)
    for length_value in np.unique(n):
        rows = n == length_value
        level = c[rows].mean()
        null_p[rows] = level
        taus = np.unique(t[rows])
        tilted = dict(zip(taus, tilted_levels(taus, level, slope)))
        truth_p[rows] = [tilted[x] for x in t[rows]]

    def draw(p):
        return lambda rng: (t, rng.random(t.size) < p)

    levels = ", ".join(f"n = {k:g}: {c[n == k].mean():.2f}" for k in np.unique(n))
    return calibrate(rises_as_tau_falls, draw(truth_p), draw(null_p), replicates, seed=seed,
                     calibrated_on=(f"planted censoring at this design ({t.size} pairs), each length at its observed "
                                    f"level ({levels}): rising as τ falls by {slope:g} log-odds per unit of ln τ / the "
                                    "same at every τ"))
