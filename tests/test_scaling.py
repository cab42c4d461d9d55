"""Scaling fits on planted coupling times: C on log T, the free exponent β, the flat-ratio trend test, the verdicts."""
import numpy as np
import pytest

from glauber_mlm.stats import (fit_exponent, fit_exponent_ci, fit_scaling, judge_laws, law_exponent, ratio_trend,
                               tell_apart)

LENGTHS = [8, 16, 32, 64]


def planted(f, pairs=40, noise=0.3, seed=0):
    """Pairs with T = f(n)·exp(noise·N(0, 1)): the median of T/f(n) is 1 at every length."""
    rng = np.random.default_rng(seed)
    n = np.repeat(LENGTHS, pairs).astype(float)
    return n, f(n) * np.exp(noise * rng.standard_normal(n.size))


def test_fit_scaling_fits_C_on_log_T():
    n = np.array([4.0, 8, 16])
    T = np.array([10.0, 40, 90])
    C, r2 = fit_scaling(n, T)["n"]
    assert C == pytest.approx(np.exp(np.mean(np.log(T / n))))  # geometric mean of T/n, not Σ nT / Σ n²
    assert C != pytest.approx(np.sum(n * T) / np.sum(n * n))
    resid = np.log(T) - np.log(C * n)
    assert r2 == pytest.approx(1 - np.sum(resid**2) / np.sum((np.log(T) - np.log(T).mean()) ** 2))
    C, r2 = fit_scaling(n, 2 * n * np.log(n))["n log n"]
    assert C == pytest.approx(2.0) and r2 == pytest.approx(1.0)


def test_local_exponents():
    assert law_exponent("n", LENGTHS) == pytest.approx(1.0)
    assert law_exponent("n^2", LENGTHS) == pytest.approx(2.0)
    assert law_exponent("n^1.5", LENGTHS) == pytest.approx(1.5)
    e = law_exponent("n log n", LENGTHS)
    assert 1.3 < e < 1.37 and e < law_exponent("n log n", [4, 8, 12, 16])  # the log factor fades as n grows
    beta, C, r2 = fit_exponent(LENGTHS, 2 * np.array(LENGTHS) * np.log(LENGTHS))
    assert beta == pytest.approx(e) and r2 > 0.99
    with pytest.raises(ValueError, match="unknown law"):
        law_exponent("n^x", LENGTHS)
    with pytest.raises(ValueError, match="two lengths"):
        fit_exponent([4, 4], [1, 2])


def test_exact_n_log_n_gives_its_local_exponent():
    n = np.repeat(LENGTHS, 5).astype(float)
    fit = fit_exponent_ci(n, 2 * n * np.log(n), n_boot=200)
    assert fit["beta"] == pytest.approx(law_exponent("n log n", LENGTHS))
    assert fit["low"] == pytest.approx(fit["beta"]) and fit["high"] == pytest.approx(fit["beta"])
    assert fit["C"] == pytest.approx(2 * np.exp(np.mean(np.log(np.log(LENGTHS))) - (law_exponent("n log n", LENGTHS) - 1)
                                                * np.mean(np.log(LENGTHS))))
    trend = ratio_trend(n, 2 * n * np.log(n), n_boot=200)
    assert trend["slope"] == pytest.approx(0.0, abs=1e-9) and trend["p_value"] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_n_log_n_is_kept_and_its_neighbours_are_not(seed):
    n, T = planted(lambda n: 2 * n * np.log(n), seed=seed)
    fit = fit_exponent_ci(n, T, n_boot=500, seed=seed)
    assert fit["low"] < law_exponent("n log n", LENGTHS) < fit["high"]
    assert fit["high"] - fit["low"] < 0.3 and fit["dropped"] == 0
    trend = ratio_trend(n, T, n_boot=500, seed=seed)
    assert trend["p_value"] > 0.05 and trend["low"] < 0 < trend["high"]
    judged = {row["law"]: row for row in judge_laws(n, T, n_boot=500, seed=seed)}
    assert not judged["n log n"]["rejected"]
    assert judged["n"]["rejected"] and judged["n^2"]["rejected"]
    verdicts = {(v["first"], v["second"]): v["verdict"] for v in tell_apart(list(judged.values()))}
    assert verdicts["n", "n log n"] == "told apart" and verdicts["n", "n^2"] == "neither fits"


def test_planted_n_squared_rejects_n_log_n():
    n, T = planted(lambda n: 0.5 * n**2)
    fit = fit_exponent_ci(n, T, n_boot=500)
    assert fit["low"] < 2 < fit["high"]
    trend = ratio_trend(n, T, n_boot=500)
    assert trend["p_value"] < 1e-6 and trend["kendall"] > 0 and trend["low"] > 0
    judged = {row["law"]: row for row in judge_laws(n, T, n_boot=500)}
    assert judged["n log n"]["rejected"] and judged["n^1.5"]["rejected"] and not judged["n^2"]["rejected"]


def test_few_noisy_pairs_cannot_tell_n_log_n_from_n_to_the_1_5():
    n, T = planted(lambda n: 2 * n * np.log(n), pairs=6, noise=1.0, seed=3)
    judged = {row["law"]: row for row in judge_laws(n, T, n_boot=500)}
    verdicts = {(v["first"], v["second"]): v["verdict"] for v in tell_apart(list(judged.values()))}
    assert verdicts["n log n", "n^1.5"] == "cannot tell apart"


def test_censored_pairs():
    n = np.repeat([8, 16], 4).astype(float)
    T = np.array([5, 6, 7, 8, 100, 100, 100, 9.0])
    met = np.array([1, 1, 1, 1, 0, 0, 0, 1], bool)
    fit = fit_exponent_ci(n, T, met, n_boot=50)
    assert np.isnan(fit["beta"]) and np.isnan(fit["low"])
    assert not any(row["rejected"] for row in judge_laws(n, T, met, n_boot=50))
    met[4] = met[5] = True  # now one of four censored at n = 16: the median is finite, some resamples are not
    fit = fit_exponent_ci(n, T, met, n_boot=200)
    assert np.isfinite(fit["beta"]) and 0 < fit["dropped"] < 200
    trend = ratio_trend(n, T, met, n_boot=50)
    assert trend["kendall"] > 0  # censored pairs rank above every met pair


# ---- the local exponent at the largest lengths (the growth rule's statistic) ----------------------------------------

from glauber_mlm.stats import CENSORED_WEIGHT_MAX, clopper_pearson, harrell_davis_weights, local_exponent  # noqa: E402

WIDE = [8, 16, 32, 64, 128]


def test_harrell_davis_weights_are_a_symmetric_law_on_the_order_statistics():
    for m in (1, 2, 5, 48):
        w = harrell_davis_weights(m)
        assert w.shape == (m,) and (w >= 0).all() and w.sum() == pytest.approx(1.0) and np.allclose(w, w[::-1])
    x = np.arange(1.0, 50)
    assert harrell_davis_weights(49) @ x == pytest.approx(25.0)      # the middle of a symmetric sample
    with pytest.raises(ValueError, match="whole number"):
        harrell_davis_weights(0)


def test_exact_laws_give_their_local_exponent_at_the_largest_lengths():
    n = np.repeat(WIDE, 5).astype(float)
    for law in ("n log n", "n^1.5", "n"):
        est = local_exponent(n, stats_law(law)(n), n_boot=200)
        assert est["lengths"] == (32.0, 64.0, 128.0)
        assert est["beta"] == pytest.approx(law_exponent(law, [32, 64, 128]))
        assert est["upper"] == pytest.approx(est["beta"]) and est["infinite"] == 0   # no scatter: every resample agrees
    assert law_exponent("n log n", [32, 64, 128]) < 1.3 < law_exponent("n log n", [8, 16, 32, 64])
    assert local_exponent(n, 3 * n * np.log(n), largest=4, n_boot=200)["lengths"] == (16.0, 32.0, 64.0, 128.0)


def stats_law(law):
    from glauber_mlm.stats import law_function

    return law_function(law)


def test_the_upper_bound_is_one_sided_and_covers_the_truth_at_the_stated_rate():
    """Planted n^1.5 with a lognormal scatter (48 pairs at each length, like notebook 02): the one-sided 95 % bound lies
    below the true exponent 1.5 in about 5 % of samples, and its distance above the estimate is the bootstrap's."""
    rng = np.random.default_rng(0)
    n = np.repeat(WIDE, 48).astype(float)
    below = []
    for s in range(200):
        t = np.round(n**1.5 * np.exp(0.35 * rng.standard_normal(n.size))) + 1
        est = local_exponent(n, t, seed=s)
        assert est["upper"] > est["beta"]
        below.append(est["upper"] < 1.5)
    assert 0.01 <= np.mean(below) <= 0.10


def test_censored_pairs_enter_as_the_largest_order_statistics_until_they_weigh_too_much():
    rng = np.random.default_rng(1)
    n = np.repeat(WIDE, 48).astype(float)
    t = np.round(n * np.log(n) * np.exp(0.35 * rng.standard_normal(n.size))) + 1
    met = np.ones(n.size, bool)
    top = np.flatnonzero(n == 128)
    slowest = top[np.argsort(t[top])[-8:]]                 # the 8 slowest of 48 censored at a budget below them
    budget = t[slowest].min()
    t2, met2 = t.copy(), met.copy()
    t2[slowest], met2[slowest] = budget, False
    full, cut = local_exponent(n, t, met), local_exponent(n, t2, met2)
    assert cut["censored_weight"] < 1e-4 and abs(cut["beta"] - full["beta"]) < 0.01 and cut["infinite"] < 10
    half = top[np.argsort(t[top])[-24:]]                   # half the pairs censored: the median is refused
    t3, met3 = t.copy(), met.copy()
    t3[half], met3[half] = t[half].min(), False
    refused = local_exponent(n, t3, met3)
    assert refused["censored_weight"] > CENSORED_WEIGHT_MAX and np.isnan(refused["beta"]) and np.isnan(refused["upper"])


@pytest.mark.parametrize("bad, match", [
    (dict(n=[8, 8, 16, 16], times=[1, 2, 3, 4]), "3 distinct lengths"),
    (dict(times=[1, 2, np.nan, 4, 5, 6]), "finite"),
    (dict(times=[1, 2, -1, 4, 5, 6]), "non-negative"),
    (dict(times=[1, 2, 3]), "one entry per pair"),
    (dict(met=[1, 1, 2, 1, 1, 1]), "booleans"),
    (dict(level=0.05), "level"),
    (dict(largest=1), "largest"),
    (dict(n_boot=10), "n_boot"),
    (dict(n=[8, 16, 16, 32, 32, 32]), "at least two per length"),
])
def test_local_exponent_refuses_bad_input(bad, match):
    args = dict(n=[8, 8, 16, 16, 32, 32], times=[1, 2, 3, 4, 5, 6], met=None) | bad
    with pytest.raises(ValueError, match=match):
        local_exponent(**args)


def test_pairs_that_started_equal_count_as_zero_and_a_zero_median_is_refused():
    n = np.repeat([8.0, 16, 32], 5)
    t = np.array([0, 5, 6, 7, 8, 0, 10, 12, 14, 16, 0, 20, 24, 28, 32.0])
    est = local_exponent(n, t, n_boot=200)
    assert np.isfinite(est["beta"]) and est["upper"] >= est["beta"]
    t[:3] = 0               # three of five at n = 8 started equal: the smooth median still weighs the other two
    assert np.isfinite(local_exponent(n, t, n_boot=200)["beta"])
    t[:5] = 0                                               # all of them: a median of 0 has no log, refused
    assert np.isnan(local_exponent(n, t, n_boot=200)["beta"])


def test_clopper_pearson_is_exact_and_closed_at_the_ends():
    p, low, high = clopper_pearson(37, 40)
    assert p == 0.925 and low == pytest.approx(0.7961, abs=1e-3) and high == pytest.approx(0.9843, abs=1e-3)
    assert clopper_pearson(0, 10)[1] == 0 and clopper_pearson(10, 10)[2] == 1
    assert clopper_pearson(0, 10)[2] == pytest.approx(1 - 0.025 ** (1 / 10))
    with pytest.raises(ValueError):
        clopper_pearson(11, 10)
