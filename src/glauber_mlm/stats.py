"""Uncertainty for the book's headline numbers: bootstrap intervals, Kaplan–Meier medians, saturation of maxima, TV null tests, n log n fits."""
from __future__ import annotations

import warnings

import numpy as np


def bootstrap_ci(values, statistic=np.mean, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): the statistic and its percentile bootstrap interval over the given samples."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("bootstrap_ci needs at least one value.")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, values.size, (n_boot, values.size))  # the same draws as n_boot calls of size values.size
    boots = values[picks].mean(1) if statistic is np.mean else np.array([statistic(values[k]) for k in picks])
    tail = (1 - level) / 2
    return float(statistic(values)), float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))


def _unit_picks(units, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(inverse, picks): each row's unit as an index 0..U-1, and `n_boot` draws of U units with replacement
    (n_boot, U), the same draws as n_boot calls of size U. The one way this module resamples units."""
    labels, inverse = np.unique(np.asarray(units), return_inverse=True)
    if labels.size < 2:
        raise ValueError(f"a bootstrap over units needs at least two independent units to resample, got {labels.size}.")
    return inverse.ravel(), rng.integers(0, labels.size, (n_boot, labels.size))  # the draws of n_boot calls of size U


def unit_resamples(units, n_boot: int, seed: int = 0) -> list[np.ndarray]:
    """`n_boot` bootstrap resamples of the rows: the independent units (`units[r]` is row r's) drawn with replacement,
    each bringing all its rows, as arrays of row indices."""
    inverse, picks = _unit_picks(units, n_boot, np.random.default_rng(seed))
    members = [np.flatnonzero(inverse == k) for k in range(picks.shape[1])]
    return [np.concatenate([members[k] for k in pick]) for pick in picks]


def _percentile_interval(estimate: float, boots, level: float) -> tuple[float, float, float]:
    """(estimate, low, high): the (1 − level)/2 and (1 + level)/2 quantiles of the resampled statistics, widened to
    contain the estimate. NaN resamples are counted and reported, not dropped (dropping them would narrow the interval
    silently): the interval is then undefined, (estimate, NaN, NaN), with a warning that gives the count, so a rule
    that reads it cannot pass on it."""
    boots = np.asarray(boots, float)
    undefined = int(np.isnan(boots).sum())
    if undefined:
        warnings.warn(
            f"{undefined} of {boots.size} bootstrap resamples gave a NaN statistic: it is undefined on them (NaN in the "
            "data, or e.g. a correlation of a resample whose values are all equal), so the interval is undefined (NaN); "
            "remove the NaN rows, or resample more units.", RuntimeWarning, stacklevel=3)
        return float(estimate), float("nan"), float("nan")
    tail = (1 - level) / 2
    low, high = np.quantile(boots, [tail, 1 - tail])
    return float(estimate), float(min(low, estimate)), float(max(high, estimate))


def unit_bootstrap_ci(units, statistic, level: float = 0.95, n_boot: int = 1000, seed: int = 0
                      ) -> tuple[float, float, float]:
    """(estimate, low, high): statistic(rows) on every row, and its percentile interval when the independent units
    (contexts, chains, documents: `units[r]` is row r's) are resampled with replacement (`unit_resamples`)."""
    boots = [statistic(k) for k in unit_resamples(units, n_boot, seed)]
    return _percentile_interval(statistic(np.arange(len(units))), boots, level)


def difference_ci(a_values, a_units, b_values, b_units, level: float = 0.95, n_boot: int = 2000, seed: int = 0
                  ) -> tuple[float, float, float]:
    """(mean(a) − mean(b), low, high): two groups of rows on disjoint independent units (`a_units[r]` is row r's),
    the percentile interval (containing the estimate) of mean(a*) − mean(b*), each group's units resampled on their own.

    A resample's mean is Σ_{k∈pick} s_k / Σ_{k∈pick} n_k, with s_k, n_k the sum and count of unit k's rows. The rule
    of notebook 04's level checks: a lies above b when low > 0."""
    rng = np.random.default_rng(seed)

    def group(values, units) -> tuple[float, np.ndarray]:  # the mean over rows and its n_boot resampled means
        values, units = np.asarray(values, dtype=float), np.asarray(units)
        if values.size == 0 or values.shape != units.shape:
            raise ValueError(f"need one unit per value, got {values.shape} values and {units.shape} units.")
        inverse, picks = _unit_picks(units, n_boot, rng)
        sums, counts = np.bincount(inverse, values.ravel()), np.bincount(inverse).astype(float)
        return float(values.mean()), sums[picks].sum(1) / counts[picks].sum(1)

    (a, a_boot), (b, b_boot) = group(a_values, a_units), group(b_values, b_units)
    return _percentile_interval(a - b, a_boot - b_boot, level)


def spearman_ci(x, y, units, level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """(r_s, low, high): Spearman's rank correlation of x and y, with its percentile interval from resampling the
    independent `units` (`unit_resamples`): rows that share a unit (the rectangles of one context) are never split."""
    from scipy.stats import rankdata

    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or len(units) != x.size:
        raise ValueError(f"spearman_ci needs x, y and units of one length, got {x.shape}, {y.shape}, {len(units)}.")

    def rows_corr(k: np.ndarray) -> np.ndarray:  # Spearman of each row of index matrix k: Pearson of the ranks
        rx, ry = rankdata(x[k], axis=-1), rankdata(y[k], axis=-1)
        rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
        return (rx * ry).sum(-1) / np.sqrt((rx**2).sum(-1) * (ry**2).sum(-1))

    resamples = unit_resamples(units, n_boot, seed)
    if len({k.size for k in resamples}) == 1:  # units of one size: every resample in one batch
        boots = rows_corr(np.stack(resamples))
    else:
        boots = [rows_corr(k) for k in resamples]
    return _percentile_interval(float(rows_corr(np.arange(x.size))), boots, level)


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
    # at p̂ = 0 or 1 the Wilson bound is exactly p̂: rounding must neither leave the estimate outside its interval
    # nor the interval outside [0, 1]
    return p, float(max(0.0, min(centre - half, p))), float(min(1.0, max(centre + half, p)))


def saturation_curve(samples, reduce, n_perm: int = 200, level: float = 0.9, seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(k, mean, low, high) for k = 1..N: reduce(max over the first k samples) along `n_perm` random orderings.

    The estimate of a supremum, reduce(max_s samples[s]), is a lower bound that more samples can only
    raise; it gets no bootstrap interval (every resample is a subset, so every replicate lies at or below
    it). This curve says instead how far it has saturated: for a non-decreasing `reduce` (max, sum, max_i Σ_j)
    every ordering's curve is non-decreasing and ends at the full-sample estimate; `low`, `high` bound the
    central `level` of the orderings at each k. `samples` is (N, ...); `reduce` maps (...) arrays to arrays.
    """
    samples = np.asarray(samples, dtype=float)
    N = samples.shape[0]
    if N == 0:
        raise ValueError("saturation_curve needs at least one sample.")
    rng = np.random.default_rng(seed)
    curves = np.stack([np.stack([reduce(m) for m in np.maximum.accumulate(samples[rng.permutation(N)], axis=0)])
                       for _ in range(n_perm)])  # (n_perm, N, ...)
    tail = (1 - level) / 2
    return (np.arange(1, N + 1), curves.mean(0), np.quantile(curves, tail, axis=0),
            np.quantile(curves, 1 - tail, axis=0))


def tv_null_test(counts, law, level: float = 0.95, n_sim: int = 2000, seed: int = 0) -> dict[str, float]:
    """TV(π̂, π) = ½ Σ_x |π̂_x − π_x| of pooled visit counts (B chains × K states) against a simulated null.

    Null: the TV of N_eff i.i.d. draws from π, with N_eff = N / d and design effect
    d = Σ_x Var̂(π̂_x) / Σ_x π_x(1 − π_x)/N, Var̂ from batch means over the B independent chains (a first-order
    Rao–Scott correction for correlated records). Returns the TV, the null's median and central `level` band,
    the one-sided p-value P(null TV ≥ TV) (a wrong law makes the TV large) and N_eff. d weighs states by their
    variance, so when common states are more correlated than rare ones the test is conservative (p too large).
    """
    counts, law = np.asarray(counts, dtype=float), np.asarray(law, dtype=float)
    if counts.ndim != 2 or counts.shape[0] < 2 or counts.shape[1] != law.size:
        raise ValueError(f"counts must be (chains ≥ 2, {law.size} states), got {counts.shape}.")
    law = law / law.sum()
    per_chain, N = counts.sum(1), counts.sum()
    pooled = counts.sum(0) / N
    B = counts.shape[0]
    var = B / (B - 1) * ((counts - np.outer(per_chain, pooled)) ** 2).sum(0) / N**2  # batch-means Var̂(π̂_x)
    d = var.sum() / (law * (1 - law)).sum() * N
    n_eff = max(1, round(N / d)) if d > 0 else int(N)
    rng = np.random.default_rng(seed)
    null = 0.5 * np.abs(rng.multinomial(n_eff, law, size=n_sim) / n_eff - law).sum(1)
    tv = 0.5 * np.abs(pooled - law).sum()
    tail = (1 - level) / 2
    return dict(tv=float(tv), null_median=float(np.median(null)), null_low=float(np.quantile(null, tail)),
                null_high=float(np.quantile(null, 1 - tail)), p_value=float((1 + (null >= tv).sum()) / (n_sim + 1)),
                effective_size=int(n_eff))


def _km(times, observed, level: float):
    """scipy's Kaplan–Meier survival function of right-censored times and its log-log pointwise band."""
    from scipy.stats import CensoredData, ecdf

    times, observed = np.asarray(times, float), np.asarray(observed, bool)
    if times.size == 0:
        raise ValueError("Kaplan–Meier needs at least one time.")
    sf = ecdf(CensoredData(uncensored=times[observed], right=times[~observed])).sf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the band is undefined where Ŝ ∈ {0, 1}
        band = sf.confidence_interval(level, method="log-log")
    return sf, band


def km_survival(times, observed, grid, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S, low, high) on `grid`: Kaplan–Meier Ŝ(t) = Π_{t_k ≤ t} (1 − d_k/n_k) with its log-log (Greenwood) band.

    `observed` is False for a time censored by the end of the run. Before the first event (Ŝ = 1) the band is
    [1, 1]; where Ŝ = 0 its lower end is 0 and its upper end, undefined, is nan (a plot leaves it blank).
    """
    sf, band = _km(times, observed, level)
    grid = np.asarray(grid, float)
    S = sf.evaluate(grid)
    low, high = band.low.evaluate(grid), band.high.evaluate(grid)
    return S, np.where(np.isnan(low), S, low), np.where(np.isnan(high) & (S == 1), 1.0, high)


def km_median(times, observed, level: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high): the first time with Ŝ(t) ≤ ½ (Kaplan–Meier), interval where the log-log band crosses ½.

    Brookmeyer–Crowley: the interval holds the t whose band contains ½, so it always contains the median.
    The median and the upper end are inf where Ŝ (or the band's upper end) never falls to ½ within the
    observed times; the lower end is then the last observed time (nothing is known beyond it).
    """
    times = np.asarray(times, float)
    at = np.unique(times)
    S, low, high = km_survival(times, observed, at, level)

    def first(curve, otherwise):
        hit = np.flatnonzero(curve <= 0.5)
        return float(at[hit[0]]) if hit.size else otherwise

    return first(S, np.inf), first(low, float(at[-1])), first(np.nan_to_num(high, nan=1.0), np.inf)


SCALINGS = {"n": lambda n: n, "n log n": lambda n: n * np.log(n), "n^2": lambda n: n**2}


def fit_scaling(n, T) -> dict[str, tuple[float, float]]:
    """For each law T ≈ C·f(n) (f = n, n log n, n²): (C, R²), both on the scale of log T.

    C is the least-squares fit of log T = log C + log f(n), i.e. log C = mean(log T − log f(n)) (the geometric
    mean of T/f(n)); R² = 1 − Σ(log T − log C·f(n))² / Σ(log T − mean log T)² on the same scale, so small and
    large n weigh alike and the best law has the largest R² (it can be negative for a law that fits worse than a
    constant).
    """
    n, T = np.asarray(n, float), np.asarray(T, float)
    out = {}
    for name, f in SCALINGS.items():
        x = f(n)
        C = float(np.exp(np.mean(np.log(T) - np.log(x))))
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


def pairs_by_length(n, times, met=None) -> tuple[np.ndarray, list[np.ndarray]]:
    """(lengths, times per length) with censored pairs (met False) at +∞; at least two lengths are required."""
    n, times = np.asarray(n, float), np.asarray(times, float)
    met = np.ones(n.shape, bool) if met is None else np.asarray(met, bool)
    t = np.where(met, times, np.inf)
    lengths = np.unique(n)
    if lengths.size < 2:
        raise ValueError(f"fitting a law in n needs at least two lengths, got {lengths.tolist()}.")
    return lengths, [t[n == m] for m in lengths]


def fit_scaling_ci(n, times, met=None, level: float = 0.95, n_boot: int = 1000, seed: int = 0
                   ) -> dict[str, tuple[float, float, float, float]]:
    """Per law (n, n log n, n²): (C, low, high, R²) for T ≈ C·f(n) fitted to the censored median T per length.

    One entry per pair: its length `n`, coupling time and whether it met. C and R² come from `fit_scaling`
    on the per-length medians; the interval resamples pairs within each length (percentile bootstrap).
    A median beyond the budget (half or more censored) makes C infinite: no finite fit exists there.
    """
    lengths, groups = pairs_by_length(n, times, met)

    def fit(medians: np.ndarray) -> dict[str, tuple[float, float]]:
        if not np.isfinite(medians).all():
            return {law: (np.inf, np.nan) for law in SCALINGS}
        return fit_scaling(lengths, medians)

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


def law_function(law: str):
    """f(n) for a law's name: one of `SCALINGS` ('n', 'n log n', 'n^2') or any power 'n^p' (e.g. 'n^1.5')."""
    if law in SCALINGS:
        return SCALINGS[law]
    if isinstance(law, str) and law.startswith("n^"):
        try:
            p = float(law[2:])
        except ValueError:
            p = None
        if p is not None:
            return lambda n: np.asarray(n, float) ** p
    raise ValueError(f"unknown law {law!r}: use one of {list(SCALINGS)} or a power such as 'n^1.5'.")


def law_exponent(law: str, lengths) -> float:
    """The law's local exponent over `lengths`: the least-squares slope of log f(n) on log n at those lengths.

    It is what the free exponent β of `fit_exponent` reads for noiseless T = C·f(n) on the same lengths:
    1 for n, 2 for n², p for n^p; for n log n it is 1 + (slope of log log n), which falls towards 1 as n grows
    (1.50 over n = 4, 8, 12, 16, indistinguishable from n^1.5 there; 1.33 over n = 8…64).
    """
    n = np.unique(np.asarray(lengths, float))
    if n.size < 2 or (n <= 1).any():
        raise ValueError(f"a local exponent needs at least two lengths above 1, got {n.tolist()}.")
    x, y = np.log(n), np.log(law_function(law)(n))
    return float(np.polyfit(x, y, 1)[0])


def fit_exponent(n, T) -> tuple[float, float, float]:
    """(β, C, R²): the free power law T ≈ C·n^β, least squares of log T on log n (R² on log T)."""
    n, T = np.asarray(n, float), np.asarray(T, float)
    if np.unique(n).size < 2:
        raise ValueError(f"fitting an exponent needs at least two lengths, got {np.unique(n).tolist()}.")
    x, y = np.log(n), np.log(T)
    beta, logC = np.polyfit(x, y, 1)
    resid = y - (logC + beta * x)
    r2 = 1 - np.sum(resid**2) / np.sum((y - y.mean()) ** 2)
    return float(beta), float(np.exp(logC)), float(r2)


def fit_exponent_ci(n, times, met=None, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """The free exponent of T ≈ C·n^β fitted to the censored median T per length, with a bootstrap interval.

    One entry per pair (length `n`, coupling time, met). β, C and R² come from `fit_exponent` on the
    per-length medians (censored pairs count as +∞, see `censored_median`); the percentile interval for β
    resamples pairs within each length. A resample whose median is censored at some length has no finite
    fit: it is dropped from the interval and counted in `dropped`. Returns dict(beta, low, high, C, r2,
    dropped); all nan when the medians themselves are not all finite.
    """
    lengths, groups = pairs_by_length(n, times, met)
    medians = np.array([np.median(g) for g in groups])
    nan = float("nan")
    if not np.isfinite(medians).all():
        return dict(beta=nan, low=nan, high=nan, C=nan, r2=nan, dropped=n_boot)
    beta, C, r2 = fit_exponent(lengths, medians)
    rng = np.random.default_rng(seed)
    boot = np.stack([np.median(g[rng.integers(0, g.size, (n_boot, g.size))], axis=1) for g in groups], 1)
    ok = np.isfinite(boot).all(1)
    x = np.log(lengths) - np.log(lengths).mean()
    slopes = np.log(boot[ok]) @ x / (x @ x)  # least-squares slope of each resample, vectorised
    tail = (1 - level) / 2
    low, high = np.quantile(slopes, [tail, 1 - tail]) if slopes.size else (nan, nan)
    return dict(beta=beta, low=float(low), high=float(high), C=C, r2=r2, dropped=int((~ok).sum()))


def ratio_trend(n, times, met=None, law: str = "n log n", level: float = 0.95, n_boot: int = 2000, seed: int = 0
                ) -> dict[str, float]:
    """Is T/f(n) flat in n? Two readings of a trend in the ratio of coupling time to the law f.

    - `slope` (with percentile bootstrap interval `low`, `high`, pairs resampled within each length): the
      least-squares slope of log(median T / f(n)) on log n, which equals β − `law_exponent(law, lengths)` for
      the free exponent β of `fit_exponent_ci` (same resamples for the same seed); 0 for a flat ratio;
    - `kendall`, `p_value`: Kendall's τ_b between n and T/f(n) over all pairs (censored pairs as +∞, which
      ranks them above every met pair) and its two-sided p-value, testing that T/f(n) has one distribution
      at every n (T = f(n)·X with the same X at each length). Rank based: heavy tails do not sway it.
    """
    from scipy.stats import kendalltau, rankdata

    n, times = np.asarray(n, float), np.asarray(times, float)
    met = np.ones(n.shape, bool) if met is None else np.asarray(met, bool)
    beta = fit_exponent_ci(n, times, met, level=level, n_boot=n_boot, seed=seed)
    shift = law_exponent(law, n)
    ratio = np.where(met, times, np.inf) / law_function(law)(n)
    ranks = rankdata(ratio)  # ties (e.g. censored pairs) share their mean rank
    tau, p = kendalltau(n, ranks) if np.ptp(ranks) > 0 else (0.0, 1.0)  # one ratio everywhere: perfectly flat
    return dict(slope=beta["beta"] - shift, low=beta["low"] - shift, high=beta["high"] - shift,
                kendall=float(tau), p_value=float(p))


def judge_laws(n, times, met=None, laws=("n", "n log n", "n^1.5", "n^2"), level: float = 0.95,
               n_boot: int = 2000, seed: int = 0, trend_law: str = "n log n") -> list[dict]:
    """The decision rule for which scaling laws the coupling times rule out, one row per law.

    A law is rejected when the `level` bootstrap interval of the free exponent β (`fit_exponent_ci`) excludes
    its local exponent over the fitted lengths (`law_exponent`); `trend_law` (n log n) is also rejected when
    Kendall's test of a flat T/f(n) (`ratio_trend`) gives p < 1 − level. Rows: law, exponent, beta, low, high,
    trend_p (nan except for `trend_law`), rejected. With censored medians (β nan) nothing is rejected.
    """
    fit = fit_exponent_ci(n, times, met, level=level, n_boot=n_boot, seed=seed)
    rows = []
    for law in laws:
        e = law_exponent(law, n)
        outside = bool(np.isfinite(fit["low"]) and not fit["low"] <= e <= fit["high"])
        p = ratio_trend(n, times, met, law, level, n_boot, seed)["p_value"] if law == trend_law else float("nan")
        rows.append(dict(law=law, exponent=e, beta=fit["beta"], low=fit["low"], high=fit["high"], trend_p=p,
                         rejected=outside or bool(np.isfinite(fit["low"]) and p < 1 - level)))
    return rows


def tell_apart(judged: list[dict]) -> list[dict]:
    """For each two laws of `judge_laws`'s rows: 'told apart' when exactly one is rejected, 'neither fits' when
    both are, 'cannot tell apart' when neither is. Rows: first, second, verdict."""
    out = []
    for i, a in enumerate(judged):
        for b in judged[i + 1:]:
            k = int(a["rejected"]) + int(b["rejected"])
            out.append(dict(first=a["law"], second=b["law"],
                            verdict=("cannot tell apart", "told apart", "neither fits")[k]))
    return out


# ---- the growth rule of notebooks 02 and 00: the local exponent at the largest lengths -------------------------------

CENSORED_WEIGHT_MAX = 0.01  # the most Harrell–Davis weight a length's censored pairs may carry (about a third of them)


def harrell_davis_weights(m: int) -> np.ndarray:
    """The Harrell–Davis weights of the median of m values: w_i = I_{i/m}(a, a) − I_{(i−1)/m}(a, a), a = (m + 1)/2
    (I the regularised incomplete beta), so that Σ w_i · x_(i) is a smooth estimate of the median."""
    from scipy.stats import beta

    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"the Harrell–Davis median needs a whole number ≥ 1 of values, got {m!r}.")
    a = (m + 1) / 2
    return np.diff(beta.cdf(np.arange(m + 1) / m, a, a))


def _hd_log_medians(values: np.ndarray, censored: np.ndarray, weights: np.ndarray, tail: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per row of (rows, m) `values` (censored entries, flagged in `censored`, hold a value at least every met one's,
    so that they sort last): (log of the Harrell–Davis median, the weight it puts on censored order statistics). A
    median of 0 (pairs that started equal, T = 0, in the majority) has no log: NaN."""
    hd = np.sort(values, axis=-1) @ weights
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(hd > 0, np.log(np.where(hd > 0, hd, 1.0)), np.nan), tail[censored.sum(-1)]


def local_exponent(n, times, met=None, largest: int = 3, level: float = 0.95, n_boot: int = 2000, seed: int = 0
                   ) -> dict:
    """The local growth exponent of coupling times at the largest lengths, with its one-sided bootstrap upper bound.

    One entry per coupled pair: its length `n`, its coupling time, whether it met (`met` False: censored, the time
    only a lower bound). At each of the `largest` largest lengths the location is the Harrell–Davis median of T (a
    smooth median: every order statistic weighted, so the bootstrap has no lumps); the exponent β is the
    least-squares slope of its log on log n. `upper` is the one-sided `level` percentile bootstrap bound of β,
    pairs (the independent units) resampled within each length.

    Censored pairs enter at their recorded time (a lower bound) as the largest order statistics. A median is
    refused when they carry more than `CENSORED_WEIGHT_MAX` of its weight (about a third of the pairs censored at
    48 pairs; below that they move it by less than 1 %): the point estimate is then NaN (the rule cannot be
    computed), and a resample where that happens counts as an infinite exponent (it pushes the bound up, never
    down). A median of 0 (most pairs started equal) is refused the same way. Returns dict(beta, upper, lengths, censored_weight (the largest over the lengths), infinite (resamples
    counted as infinite), n_boot).
    """
    if not 0.5 < level < 1:
        raise ValueError(f"level must lie in (0.5, 1) (the coverage of a one-sided bound), got {level!r}.")
    if isinstance(largest, bool) or not isinstance(largest, (int, np.integer)) or largest < 2:
        raise ValueError(f"largest must be a whole number ≥ 2 of lengths to fit a slope through, got {largest!r}.")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise ValueError(f"n_boot must be a whole number ≥ 100 of bootstrap resamples, got {n_boot!r}.")
    n, times = np.asarray(n, float).ravel(), np.asarray(times, float).ravel()
    met = np.ones(n.shape, bool) if met is None else np.asarray(met).ravel()
    if not (n.shape == times.shape == met.shape):
        raise ValueError(f"n, times and met must have one entry per pair, got {n.size}, {times.size} and {met.size}.")
    if met.dtype != bool:
        if not np.isin(met, (0, 1)).all():
            raise ValueError("met must be booleans (True: the pair met within the budget).")
        met = met.astype(bool)
    if not (np.isfinite(n).all() and np.isfinite(times).all()) or (times < 0).any() or (n <= 1).any():
        raise ValueError("local_exponent needs finite lengths above 1 and finite non-negative times (a censored pair "
                         "keeps its budget as its time, with met False; a pair that started equal has T = 0).")
    lengths = np.unique(n)
    if lengths.size < largest:
        raise ValueError(f"the local exponent over the {largest} largest lengths needs {largest} distinct lengths, got "
                         f"{lengths.tolist()}.")
    lengths = lengths[-largest:]
    x = np.log(lengths) - np.log(lengths).mean()
    rng = np.random.default_rng(seed)
    logs, weights_on_censored, boot_logs, boot_bad = [], [], [], []
    for length in lengths:
        t, c = times[n == length], ~met[n == length]
        m = t.size
        if m < 2:
            raise ValueError(f"length {length:g} has {m} pair: a bootstrap over pairs needs at least two per length.")
        t = np.where(c, max(t.max(), t[c].max() if c.any() else 0), t)  # censored: a lower bound, sorted last
        w = harrell_davis_weights(m)
        tail = np.concatenate([[0.0], np.cumsum(w[::-1])])  # tail[k]: the weight of the top k order statistics
        log_med, cw = _hd_log_medians(t[None], c[None], w, tail)
        logs.append(log_med[0])
        weights_on_censored.append(cw[0])
        pick = rng.integers(0, m, (n_boot, m))
        b_log, b_cw = _hd_log_medians(t[pick], c[pick], w, tail)
        boot_logs.append(b_log)
        boot_bad.append(b_cw > CENSORED_WEIGHT_MAX)
    worst = float(max(weights_on_censored))
    nan = float("nan")
    if worst > CENSORED_WEIGHT_MAX or not np.isfinite(logs).all():
        return dict(beta=nan, upper=nan, lengths=tuple(lengths.tolist()), censored_weight=worst, infinite=n_boot,
                    n_boot=int(n_boot))
    beta = float(np.asarray(logs) @ x / (x @ x))
    slopes = np.stack(boot_logs, 1) @ x / (x @ x)
    bad = np.stack(boot_bad, 1).any(1) | ~np.isfinite(slopes)
    slopes[bad] = np.inf
    upper = float(np.quantile(slopes, level, method="inverted_cdf"))
    return dict(beta=beta, upper=upper, lengths=tuple(lengths.tolist()), censored_weight=worst,
                infinite=int(bad.sum()), n_boot=int(n_boot))


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float, float]:
    """(p̂, low, high): the exact (Clopper–Pearson) two-sided `level` interval of a binomial proportion."""
    from scipy.stats import beta

    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be a whole number ≥ 1, got {trials!r}.")
    if isinstance(successes, bool) or not isinstance(successes, (int, np.integer)) or not 0 <= successes <= trials:
        raise ValueError(f"successes must be a whole number in [0, {trials}], got {successes!r}.")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}.")
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    return successes / trials, low, high


def chi2_counts_pvalue(counts: np.ndarray, law: np.ndarray, min_expected: float = 5.0) -> float:
    """p-value of Pearson's χ² of `counts` per state against `law`; cells expected fewer than `min_expected` times
    are pooled into one (none left out); a count where the law has no mass gives 0."""
    from scipy.stats import chisquare

    expected = counts.sum() * law / law.sum()
    small = expected < min_expected
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    if (obs[~keep] > 0).any():
        return 0.0  # a draw where the law puts no mass
    return float(chisquare(obs[keep], exp[keep]).pvalue) if keep.sum() > 1 else 1.0


def chi2_size_power(law, alternative, draws: int, level: float = 0.01, reps: int = 200, seed: int = 0
                    ) -> tuple[float, float]:
    """(size, power) of `chi2_counts_pvalue < level` with `draws` draws: the rejection rate of i.i.d. samples of `law`
    (size) and of `alternative` (power), each against `law`, over `reps` replicates."""
    law, alternative = np.asarray(law, float), np.asarray(alternative, float)
    rng = np.random.default_rng(seed)
    rate = lambda source: float(np.mean([chi2_counts_pvalue(c.astype(float), law) < level  # noqa: E731
                                         for c in rng.multinomial(draws, source / source.sum(), size=reps)]))
    return rate(law), rate(alternative)
