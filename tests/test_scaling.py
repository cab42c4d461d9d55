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
