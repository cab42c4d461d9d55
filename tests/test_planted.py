"""Planted truths for notebook 02's growth rule: the curvature of T/n in log n, and its calibration on the Ising chain."""
import numpy as np
import pytest

from glauber_mlm.pages import planted
from glauber_mlm import stats

LENGTHS = np.array([8, 16, 32, 64, 128])


def exact_sample(law, pairs=9, spread=0.0, seed=0):
    rng = np.random.default_rng(seed)
    n = np.repeat(LENGTHS, pairs).astype(float)
    t = stats.law_function(law)(n) * np.exp(spread * rng.standard_normal(n.size))
    return n, t, np.ones(n.size, bool)


@pytest.mark.parametrize("law", ["n log n", "n"])
def test_the_curvature_of_n_log_n_plus_a_linear_term_is_zero_and_passes(law):
    n, t, met = exact_sample(law)
    t = t + 7 * n                                          # any lower-order linear term keeps c = 0
    curv = stats.nlogn_curvature(n, t, met)
    assert abs(curv["c"]) < 1e-9 and curv["c_faster"] > 0 and planted.not_faster_than_nlogn((n, t, met)) is True


@pytest.mark.parametrize("law", ["n^1.5", "n^2"])
def test_a_power_law_as_fast_as_n_to_the_1_5_or_faster_is_convex_and_fails(law):
    n, t, met = exact_sample(law, spread=0.05)
    curv = stats.nlogn_curvature(n, t, met)
    assert curv["low"] > 0 and curv["high"] >= curv["c_faster"] * 0.9
    assert planted.not_faster_than_nlogn((n, t, met)) is False


def test_c_faster_is_the_curvature_of_n_to_the_1_5_through_the_middle_median():
    n, t, met = exact_sample("n log n", spread=0.3)
    curv = stats.nlogn_curvature(n, t, met)
    med = np.array([np.median(t[n == m]) for m in LENGTHS])
    on_law = med[2] * (LENGTHS / LENGTHS[2]) ** 1.5
    assert curv["c_faster"] == pytest.approx(stats.nlogn_curvature(LENGTHS, on_law)["c"])
    assert curv["low"] <= curv["c"] <= curv["high"]
    with pytest.raises(ValueError, match="level"):
        stats.nlogn_curvature(n, t, met, level=0.05)        # one way to an upper bound: `high`, not a low level


def test_a_censored_median_makes_the_rule_not_computable():
    n, t, met = exact_sample("n log n")
    met[n == 128] = False
    assert planted.not_faster_than_nlogn((n, t, met)) is None


def test_the_growth_rule_decides_on_the_bounds_a_page_shows():
    """The bounds beside a check (`nlogn_curvature(..., seed)`: `high` and `c_faster`) are the ones the rule reads:
    a rule with its own bootstrap showed 0.016 beside a pass on notebook 00's τ = 4 cell."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n = np.repeat([8.0, 16, 32, 64], 30)
        t = n * np.log(n) * rng.lognormal(0, 0.4, n.size) * (1 + 0.05 * seed * np.log(n))
        curv = stats.nlogn_curvature(n, t, np.ones(n.size, bool), seed=seed)
        assert planted.not_faster_than_nlogn((n, t, np.ones(n.size, bool)), seed=seed) is bool(
            curv["high"] < curv["c_faster"])


def test_replant_law_gives_the_medians_the_new_law_and_keeps_the_spread():
    n, t, met = exact_sample("n log n", spread=0.3)
    n2, t2, met2 = planted.replant_law(n, t, met, "n^2", budget=10**9)
    med = np.array([np.median(t2[n2 == m]) for m in LENGTHS])
    assert np.allclose(med / LENGTHS**2, med[2] / 32**2, rtol=0.05)  # times are whole steps
    ratio = [np.std(np.log(t2[n2 == m])) / np.std(np.log(t[n == m])) for m in LENGTHS]
    assert np.allclose(ratio, 1, atol=0.1)  # rounding to whole steps widens the short lengths a little
    _, _, censored = planted.replant_law(n, t, met, "n^2", budget=int(np.median(t2[n2 == 64])))
    assert not censored[n == 128].any() and censored[n == 8].all()


def test_replant_law_with_the_pooled_medians_lets_a_replicate_scatter_around_the_law():
    law = stats.law_function("n log n")(LENGTHS.astype(float))  # the medians of the law the samples are drawn from
    n, t, met = exact_sample("n log n", pairs=15, spread=0.4, seed=3)
    n2, t2, _ = planted.replant_law(n, t, met, "n^1.5", 10**9, medians=law)
    med = np.array([np.median(t2[n2 == m]) for m in LENGTHS])
    scale = law[2] / 32**1.5
    assert not np.allclose(med, scale * LENGTHS**1.5, rtol=0.01)   # this replicate's medians are off the law …
    assert np.allclose(med, scale * LENGTHS**1.5, rtol=0.5)        # … and scatter around it


def test_the_curvature_rule_tells_n_log_n_from_n_to_the_1_5_with_enough_pairs_and_not_with_few():
    """Planted n log n times with a lognormal spread, and the law replanted as n^1.5 (replicates scattering around
    it): with 96 pairs per length over n = 8…128 the rule passes the first and fails the second; with 6 pairs it
    is not decisive (its power falls short of 0.8)."""
    law = stats.law_function("n log n")(LENGTHS.astype(float))

    def rates(pairs):
        samples = [exact_sample("n log n", pairs=pairs, spread=0.4, seed=s) for s in range(20)]
        power = np.mean([planted.not_faster_than_nlogn(x) is True for x in samples])
        size = np.mean([planted.not_faster_than_nlogn(planted.replant_law(*x, "n^1.5", 10**9, medians=law)) is True
                        for x in samples])
        return power, size

    power, size = rates(96)
    assert power >= 0.8 and size <= 0.1
    assert rates(6)[0] < 0.8


def test_the_growth_rule_passes_the_ising_chain_with_enough_pairs():
    """The Ising chain at J/τ = 1/2 and 1/4 (n log n asymptotically, convex in log n at n = 8…64): with 640 pairs
    per length the rule passes every replicate; the rule against 0 it replaces failed more of them as pairs grew."""
    for tau in (2.0, 4.0):
        for s in planted.ising_coupling_samples(0, 3, [8, 16, 32, 64], 640, 20_000, temperature=tau):
            assert planted.not_faster_than_nlogn(s) is True


def test_the_growth_calibration_reports_power_and_size_per_temperature():
    cals = planted.growth_rule_calibration([8, 16, 32, 64], 6, 2000, [2.0, 4.0], replicates=6)
    assert list(cals) == [2.0, 4.0]
    for tau, cal in cals.items():
        assert cal.replicates == 6 and "Ising" in cal.calibrated_on and "6 pairs at n = 8, 16, 32, 64" in cal.calibrated_on
        assert f"J/τ = {1 / tau:.3g}" in cal.calibrated_on
        assert not cal.decisive                                      # too few pairs to tell n^1.5 apart


def test_a_budget_too_short_for_the_planted_truth_gives_no_power_and_an_unknown_size():
    """No finite median: no replicate passes, and there is no law to replant, so the size is unknown (NaN), never a
    reassuring 0, and the check cannot decide."""
    cal = planted.growth_rule_calibration([8, 16, 32, 64], 4, budget=20, temperatures=[2.0], replicates=3)[2.0]
    assert cal.power == 0 and np.isnan(cal.size) and not cal.decisive


def test_the_seeds_of_different_cells_are_disjoint_blocks():
    """Each (n, τ) cell's chains take cell_seed, …, cell_seed + P − 1: at 00's largest design (40 replicates × 640
    pairs per cell) no two of its cells share a seed, where seed + 1000 n + 100 τ + arange(P) overlapped across τ
    once P > 200."""
    from glauber_mlm.rng import cell_seed

    P = 40 * 640
    for name in ("ising pairs", "planted ising pairs"):
        starts = sorted(cell_seed(0, name, n, tau) for n in (4, 6, 8, 12, 16, 32, 64, 128, 256)
                        for tau in (0.4, 0.5, 0.7, 1.0, 2.0, 4.0))
        assert len(set(starts)) == len(starts) and min(np.diff(starts)) > P
        assert all(0 <= s < 2**62 for s in starts)
    assert cell_seed(0, "ising pairs", 8, 2.0) == cell_seed(0, "ising pairs", 8, 2)   # τ as a float either way
    assert cell_seed(0, "ising pairs", 8, 2.0) != cell_seed(1, "ising pairs", 8, 2.0)


def test_ar1_chains_have_the_planted_autocorrelation_and_ess():
    rng = np.random.default_rng(1)
    x = planted.ar1_chains(rng, 50, 400, 0.6)
    lag1 = np.mean([np.corrcoef(c[:-1], c[1:])[0, 1] for c in x])
    assert abs(lag1 - 0.6) < 0.03 and abs(x.std() - 1) < 0.05
    assert planted.ar1_phi_for_ess(0.25 * 50 * 400, 50, 400) == pytest.approx(0.6)


def test_the_rhat_rule_decides_with_many_draws_and_not_with_few():
    """A strict threshold (1.01) on 8 short chains false-alarms on stationary chains; with many draws it decides."""
    few = planted.rhat_agreement_calibration(8, 10, 0.3, 1.01, replicates=60)
    many = planted.rhat_agreement_calibration(8, 200, 0.3, 1.01, replicates=60)
    assert not few.decisive and many.power >= 0.8 and many.size <= 0.1


def test_the_censored_dwell_fit_recovers_c_where_dropping_censored_dwells_biases_it():
    """Planted geometric dwells with c = 1, cut at a short run: the censored likelihood finds c, the old fit on the
    uncensored dwells alone (least squares on log dwell) falls short, because the longest dwells are the censored."""
    from glauber_mlm.measures import margins

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 6, 400)
    groups = np.repeat(np.arange(40), 10)
    d, cens = planted.censored_dwells(rng, x, np.full(400, 100), c=1.0, b=0.5)
    assert 0.2 < cens.mean() < 0.6
    fit = margins.fit_censored_dwell(x, d, cens, groups, n_boot=200)
    assert fit["slope_low"] < 1.0 < fit["slope_high"] and abs(fit["slope"] - 1) < 0.15
    dropped = margins.fit_log_linear(x[~cens], d[~cens], n_boot=50)
    assert dropped["slope_high"] < 0.9


def test_the_dwell_rules_are_decisive_at_a_well_sized_design():
    rng = np.random.default_rng(4)
    x, groups, remaining = rng.uniform(0, 5, 200), np.repeat(np.arange(20), 10), np.full(200, 2000)
    grows = planted.dwell_fit_calibration(x, remaining, groups, 0.5, lambda f: bool(f["slope_low"] > 0), 1.0, 0.0,
                                          replicates=20, n_boot=100)
    assert grows.power >= 0.8 and grows.size <= 0.1


def test_the_rhat_calibration_simulates_the_pages_cells():
    """Notebook 06 has one slow and two fast cells (cpu): the rule must hold on every cell, so two fast cells cannot
    pass more often than one, and the calibration says which design it simulated (issue 36)."""
    one = planted.rhat_agreement_calibration(8, 38, 0.25, 1.05, replicates=100, seed=2)
    two = planted.rhat_agreement_calibration(8, 38, 0.25, 1.05, replicates=100, fast_cells=2, seed=2)
    assert two.power <= one.power + 0.05 and "1 slow and 2 fast cells" in two.calibrated_on
    assert two.power >= 0.8 and two.size <= 0.1
