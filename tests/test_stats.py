"""Numerical summaries and figure helpers the notebooks share: the slow-to-fast boundary, Kaplan–Meier medians,
saturation of maxima, the TV null test, interval error bars."""
import math

import numpy as np
import pytest

from glauber_mlm.stats import (difference_ci, km_median, km_survival, proportion_ci, saturation_curve,
                               slow_to_fast_boundary, tv_null_test)

inf = np.inf


def test_boundary_is_the_lowest_temperature_from_which_on_every_median_is_finite():
    assert slow_to_fast_boundary([0.5, 1, 2, 4], [inf, inf, 30, 10]) == 2.0
    # a finite median below a slow one does not count: fast must hold from the boundary upwards
    assert slow_to_fast_boundary([0.5, 1, 2, 4], [40, inf, 30, 10]) == 2.0
    assert slow_to_fast_boundary([0.5, 1, 2], [90, 50, 20]) == 0.5  # fast everywhere: the grid's lowest τ
    assert math.isnan(slow_to_fast_boundary([0.5, 1, 2], [20, 30, inf]))  # slow at the top: no boundary
    assert slow_to_fast_boundary([4, 0.5, 2, 1], [10, inf, 30, inf]) == 2.0  # order of the rows does not matter


def test_interval_errorbar_refuses_an_interval_that_excludes_its_estimate():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from glauber_mlm.pages.plots import interval_errorbar, plain_log_ticks, temperature_axis

    fig, ax = plt.subplots()
    bars = interval_errorbar(ax, [1, 2, 4], [3.0, 2.0, 1.0], [2.0, 2.0, 0.5], [4.0, 2.5, 1.5], marker="o")
    (segments,) = bars.lines[2]
    assert np.allclose([seg[1, 1] - seg[0, 1] for seg in segments.get_segments()], [2.0, 0.5, 1.0])
    with pytest.raises(ValueError, match=r"\[2.5, 2\] at x = 2 does not contain its estimate 2"):
        interval_errorbar(ax, [1, 2, 4], [3.0, 2.0, 1.0], [2.0, 2.5, 0.5], [4.0, 2.0, 1.5])
    with pytest.raises(ValueError, match="at x = 4"):
        interval_errorbar(ax, [1, 2, 4], [3.0, 2.0, np.nan], [2.0, 2.0, 0.5], [4.0, 2.5, 1.5])
    # a lower bound (high = inf) is a bar from its low end and an upward arrow, never a two-sided interval
    bars = interval_errorbar(ax, [1, 2], [3.0, 2.0], [3.0, 1.0], [inf, inf], arrow=0.5)
    (segments,) = bars.lines[2]
    assert [tuple(seg[:, 1]) for seg in segments.get_segments()] == [(3.0, 4.5), (1.0, 3.0)]
    temperature_axis(ax, [0.5, 1.0, 4.0])
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "1", "4"]
    plain_log_ticks(fig)  # what `Run.save_figure` does: the grid's labels stay
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "1", "4"]
    plt.close(fig)


def test_kaplan_meier_by_hand():
    # times 1, 2+, 3, 4, 5 (2 censored): Ŝ = 4/5 after 1, 4/5 · 2/3 after 3, · 1/2 after 4, 0 after 5
    times, observed = [1, 2, 3, 4, 5], [True, False, True, True, True]
    S, low, high = km_survival(times, observed, [0, 1, 2, 3, 4, 5])
    assert np.allclose(S, [1, 0.8, 0.8, 8 / 15, 4 / 15, 0])
    assert (low[:5] <= S[:5] + 1e-12).all() and (S[:5] <= high[:5] + 1e-12).all()
    assert low[5] == 0 and np.isnan(high[5])  # after the last event the band's upper end is undefined
    # log-log band at t = 3 from Greenwood's variance Ŝ² Σ d/(n(n−d)) = Ŝ² (1/20 + 1/6)
    s, v = 8 / 15, 1 / 20 + 1 / 6
    se = math.sqrt(v) / abs(math.log(s))
    z = 1.959963984540054
    assert low[3] == pytest.approx(s ** math.exp(z * se)) and high[3] == pytest.approx(s ** math.exp(-z * se))
    median, lo, hi = km_median(times, observed)
    assert median == 4 and lo <= 4 <= hi  # first t with Ŝ ≤ ½ (the naive median of the five times would be 3)
    assert km_median([1, 2, 3, 4], [True] * 4)[0] == 2  # uncensored: the lower sample median
    # censored past half: the median is not reached; with no event at all the interval is [last time, ∞)
    assert km_median([3, 3, 3, 1], [False, False, False, True])[0] == inf
    assert km_median([3, 3, 2], [False, False, False]) == (inf, 3.0, inf)


def test_kaplan_meier_median_of_censored_exponential_times():
    rng = np.random.default_rng(0)
    rate, n = 0.1, 1500
    t, c = rng.exponential(1 / rate, n), rng.exponential(2 / rate, n)  # about a third censored
    median, lo, hi = km_median(np.minimum(t, c), t <= c)
    assert lo < math.log(2) / rate < hi and median == pytest.approx(math.log(2) / rate, rel=0.1)
    naive = np.median(np.minimum(t, c))  # treating censored times as observed biases the median down
    assert naive < lo
    hits = 0
    for seed in range(100):  # the interval covers ln 2/λ at about its nominal rate
        r = np.random.default_rng(seed + 1)
        t, c = r.exponential(1 / rate, 60), r.exponential(2 / rate, 60)
        _, lo, hi = km_median(np.minimum(t, c), t <= c)
        hits += lo <= math.log(2) / rate <= hi
    assert hits >= 88


def test_saturation_curve_of_a_maximum_never_claims_an_upper_end():
    rng = np.random.default_rng(1)
    samples = rng.exponential(1.0, (30, 4, 3))  # e.g. (contexts, temperatures, sites)

    def reduce(m):  # max over the last axis: non-decreasing in each entry
        return m.max(-1)

    k, mean, low, high = saturation_curve(samples, reduce, n_perm=50)
    full = reduce(samples.max(0))
    assert k.tolist() == list(range(1, 31)) and mean.shape == (30, 4)
    assert np.allclose(mean[-1], full) and np.allclose(low[-1], full) and np.allclose(high[-1], full)
    assert (np.diff(mean, axis=0) >= -1e-12).all() and (np.diff(low, axis=0) >= -1e-12).all()
    assert (mean <= full + 1e-12).all() and (high <= full + 1e-12).all()  # nothing above the estimate
    # one dominant sample: the curve jumps to the estimate only once that sample is drawn
    spiky = np.zeros((10, 1))
    spiky[3] = 5.0
    _, mean, _, _ = saturation_curve(spiky, lambda m: m, n_perm=2000, seed=2)
    assert np.allclose(mean[:, 0], 5.0 * np.arange(1, 11) / 10, atol=0.2)


def test_tv_null_test_is_calibrated_and_catches_a_wrong_law():
    law = np.array([0.4, 0.2, 0.15, 0.1, 0.08, 0.04, 0.02, 0.01])
    inside, rejected = 0, 0
    for seed in range(200):  # i.i.d. draws from the law: 20 chains of 50 records
        counts = np.random.default_rng(seed).multinomial(50, law, size=20)
        r = tv_null_test(counts, law, n_sim=400, seed=seed)
        inside += r["null_low"] <= r["tv"] <= r["null_high"]
        rejected += r["p_value"] <= 0.05
    assert inside / 200 >= 0.9 and rejected / 200 <= 0.1
    # correlated records: each draw repeated 5 times; the effective size falls about 5-fold and the test stays calibrated
    rejected = 0
    for seed in range(100):
        counts = 5 * np.random.default_rng(seed).multinomial(10, law, size=20)
        r = tv_null_test(counts, law, n_sim=400, seed=seed)
        rejected += r["p_value"] <= 0.05
        assert r["effective_size"] < 400
    assert rejected / 100 <= 0.12
    tilted = law * np.exp(0.3 * np.arange(law.size))
    counts = np.random.default_rng(0).multinomial(50, tilted / tilted.sum(), size=20)
    r = tv_null_test(counts, law)
    assert r["p_value"] < 0.01 and r["tv"] > r["null_high"]
    with pytest.raises(ValueError, match="chains ≥ 2"):
        tv_null_test(counts[:1], law)


def test_wilson_interval_contains_its_estimate_at_the_ends():
    # Wilson's bounds at p̂ = 0 and 1 are exactly 0 and 1; in floats they can round just inside (e.g. 0.9999999999999999
    # at 2000 of 2000), which would leave the estimate outside its own interval
    for n in range(1, 3001):
        p, low, high = proportion_ci(n, n)
        assert p == 1.0 == high and 0 < low < 1
        p, low, high = proportion_ci(0, n)
        assert p == 0.0 == low and 0 < high < 1
    p, low, high = proportion_ci(30, 100)  # a textbook value: Wilson 95% for 30/100 is [0.219, 0.396]
    assert (round(low, 3), round(high, 3)) == (0.219, 0.396) and low < p < high


def test_difference_ci_resamples_each_group_and_contains_its_estimate():
    a, b = np.r_[np.ones(10), np.zeros(10)], np.zeros(30)
    d, lo, hi = difference_ci(a, np.arange(20), b, np.arange(30))
    assert d == 0.5 and lo <= d <= hi and lo > 0.2 and hi < 0.8
    d, lo, hi = difference_ci(b[:20], np.arange(20), a, np.arange(20))
    assert d == -0.5 and hi < 0  # the other way round: below
    d, lo, hi = difference_ci(b, np.arange(30), b[:20], np.arange(20))  # no spread: the interval is the estimate
    assert d == lo == hi == 0
    with pytest.raises(ValueError, match="one unit per value"):
        difference_ci(a, np.arange(19), b, np.arange(30))


def test_difference_ci_finds_a_planted_gap_of_one():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1, 1, 40), rng.normal(0, 1, 40)  # 40 units of one row each; se of the gap √(2/40) ≈ 0.22
    d, lo, hi = difference_ci(a, np.arange(40), b, np.arange(40, 80))
    assert d == pytest.approx(a.mean() - b.mean()) and d == pytest.approx(1, abs=0.45)
    assert lo <= 1 <= hi and lo > 0 and hi - lo == pytest.approx(4 * np.sqrt(2 / 40), rel=0.3)


def test_difference_ci_resamples_whole_units_not_rows():
    rng = np.random.default_rng(2)
    units = np.repeat(np.arange(4), 100)  # 4 units of 100 rows sharing their unit's level
    a = rng.normal(0, 1, 4)[units] + rng.normal(0, 0.1, 400)
    b = rng.normal(0, 1, 4)[units] + rng.normal(0, 0.1, 400)
    d, lo, hi = difference_ci(a, units, b, units + 4)
    d_rows, lo_rows, hi_rows = difference_ci(a, np.arange(400), b, np.arange(400, 800))  # rows as if independent
    assert d == pytest.approx(d_rows) and lo <= d <= hi
    assert hi - lo > 5 * (hi_rows - lo_rows)
