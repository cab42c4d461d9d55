"""Planted truths for notebook 02's growth rule: the local exponent at the largest lengths against 1.5, its calibration
by replanting a run's own coupling times, and its rate on the exact Ising chain."""
import numpy as np
import pytest

from glauber_mlm.pages.planted import growth, margin_theorem, mixing
from glauber_mlm import stats

DESIGN = [8, 16, 32, 64, 128]   # notebook 02's cpu scaling lengths; the rule reads the three largest


def planted_times(law, pairs=48, spread=0.35, seed=0, lengths=DESIGN):
    """Coupling times like notebook 02's: T = f(n)·exp(spread·N(0, 1)) in whole steps, `pairs` per length (its MLM
    pairs scatter with a standard deviation of log T of 0.27–0.41)."""
    rng = np.random.default_rng(seed)
    n = np.repeat(lengths, pairs).astype(float)
    return n, np.maximum(1, np.round(stats.law_function(law)(n) * np.exp(spread * rng.standard_normal(n.size)))), \
        np.ones(n.size, bool)


def test_the_rule_passes_n_log_n_and_fails_faster_laws_without_scatter():
    n = np.repeat(DESIGN, 6).astype(float)
    met = np.ones(n.size, bool)
    assert growth.grows_slower_than_n15((n, 5 * n * np.log(n) + 7 * n, met)) is True
    assert growth.grows_slower_than_n15((n, 3 * n**1.5, met)) is False     # the bound is the exponent: 1.5 ≮ 1.5
    assert growth.grows_slower_than_n15((n, n**2, met)) is False


def test_the_rule_decides_on_the_bound_a_page_shows():
    """The bound beside a check (`local_exponent(..., seed)`'s `upper`) is the one the rule reads."""
    for seed in range(6):
        n, t, met = planted_times("n^1.4", seed=seed)
        est = stats.local_exponent(n, t, met, level=growth.GROWTH_LEVEL, seed=seed)
        assert growth.grows_slower_than_n15((n, t, met), seed=seed) is bool(est["upper"] < growth.GROWTH_LIMIT)


def test_too_many_censored_pairs_make_the_rule_not_computable_and_bad_input_is_refused():
    n, t, met = planted_times("n log n")
    met[n == 128] = False
    assert growth.grows_slower_than_n15((n, t, met)) is None
    with pytest.raises(ValueError, match="distinct lengths"):
        growth.grows_slower_than_n15(planted_times("n log n", lengths=[64, 128]))
    with pytest.raises(ValueError, match="finite"):
        growth.grows_slower_than_n15((n, np.full(n.size, np.nan), met))


def test_replant_growth_moves_the_locations_onto_the_law_and_keeps_the_scatter():
    n, t, met = planted_times("n log n", spread=0.3)
    n2, t2, met2 = growth.replant_growth(n, t, met, "n^2", budget=10**9)
    assert set(n2) == {32.0, 64.0, 128.0}                          # the rule's lengths only
    est = stats.local_exponent(n2, t2, met2, n_boot=200)
    assert est["beta"] == pytest.approx(2.0, abs=0.01)              # whole steps round the law a little
    hd = lambda x: np.sort(x) @ stats.harrell_davis_weights(x.size)  # noqa: E731
    assert hd(t2[n2 == 64]) == pytest.approx(hd(t[n == 64]), rel=0.01)   # matched at the middle length
    for m in (32, 64, 128):
        assert np.std(np.log(t2[n2 == m])) == pytest.approx(np.std(np.log(t[n == m])), rel=0.02)
    budget = int(np.median(t2[n2 == 128]))
    _, t3, met3 = growth.replant_growth(n, t, met, "n^2", budget=budget)
    assert (~met3[n2 == 128]).sum() >= 20 and met3[n2 == 32].all() and t3.max() == budget


def test_replant_growth_with_pooled_locations_lets_a_replicate_scatter_around_the_law():
    law = np.log(stats.law_function("n log n")(np.array([32.0, 64, 128])))   # the locations the samples scatter around
    betas = []
    for seed in range(20):
        n, t, met = planted_times("n log n", seed=seed)
        betas.append(stats.local_exponent(*growth.replant_growth(n, t, met, "n^1.5", 10**9, locations=law),
                                          n_boot=100)["beta"])
    assert np.std(betas) > 0.02 and abs(np.mean(betas) - 1.5) < 0.03


def test_on_a_design_like_02s_the_rule_has_the_power_and_size_its_calibration_states():
    """Calibrated on one planted n log n run (48 pairs at n = 8…128, post-processing: 200 replicates), the rule has
    power ≥ 0.9 and size ≤ 0.05; and on fresh planted runs it passes n log n and n^1.5 at those rates (within their
    binomial uncertainty)."""
    n, t, met = planted_times("n log n", seed=100)
    cal = growth.growth_replant_calibration(n, t, met, budget=10**6, replicates=200, seed=1)
    assert cal.power >= 0.9 and cal.size <= 0.05 and cal.replicates == 200
    assert "replanted as n log n / as n^1.5" in cal.calibrated_on and "n = 32, 64, 128" in cal.calibrated_on
    fresh = 100
    on_truth = sum(growth.grows_slower_than_n15(planted_times("n log n", seed=s), seed=s) is True
                   for s in range(fresh))
    on_null = sum(growth.grows_slower_than_n15(planted_times("n^1.5", seed=s), seed=s) is True
                  for s in range(fresh))
    assert stats.clopper_pearson(on_truth, fresh, 0.99)[2] >= cal.power - 0.02   # not worse than stated
    assert on_truth >= 0.9 * fresh
    assert on_null <= 0.10 * fresh and stats.clopper_pearson(on_null, fresh, 0.99)[1] <= max(cal.size, 0.05)


def test_more_pairs_per_replicate_buy_power_and_a_censored_run_cannot_be_calibrated():
    n, t, met = planted_times("n log n", pairs=8, spread=0.6, seed=3)
    few = growth.growth_replant_calibration(n, t, met, budget=10**6, replicates=60, seed=0)
    many = growth.growth_replant_calibration(n, t, met, budget=10**6, pairs=64, replicates=60, seed=0)
    assert many.power > few.power and "64 pairs per length drawn" in many.calibrated_on
    met[n == 128] = False
    cal = growth.growth_replant_calibration(n, t, met, budget=10**6, replicates=5)
    assert cal.power == 0 and np.isnan(cal.size)


def test_the_ising_calibration_reports_the_rule_s_rate_on_the_exact_chain():
    cal = growth.ising_growth_calibration([8, 16, 32], 6, 2000, 4.0, replicates=4)
    assert cal.replicates == 4 and 0 <= cal.power <= 1 and 0 <= cal.size <= 1
    assert "J/τ = 0.25" in cal.calibrated_on and "6 pairs at n = 8, 16, 32" in cal.calibrated_on
    short = growth.ising_growth_calibration([8, 16, 32], 4, 3, 2.0, replicates=3)   # nothing meets in 3 steps
    assert short.power == 0 and np.isnan(short.size)


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
    x = mixing.ar1_chains(rng, 50, 400, 0.6)
    lag1 = np.mean([np.corrcoef(c[:-1], c[1:])[0, 1] for c in x])
    assert abs(lag1 - 0.6) < 0.03 and abs(x.std() - 1) < 0.05
    assert mixing.ar1_phi_for_ess(0.25 * 50 * 400, 50, 400) == pytest.approx(0.6)


def test_the_rhat_rule_decides_with_many_draws_and_not_with_few():
    """A strict threshold (1.01) on 8 short chains false-alarms on stationary chains; with many draws it decides."""
    few = mixing.rhat_agreement_calibration(8, 10, 0.3, 1.01, replicates=60)
    many = mixing.rhat_agreement_calibration(8, 200, 0.3, 1.01, replicates=60)
    assert not few.decisive and many.power >= 0.8 and many.size <= 0.1


def test_the_censored_dwell_fit_recovers_c_where_dropping_censored_dwells_biases_it():
    """Planted geometric dwells with c = 1, cut at a short run: the censored likelihood finds c, the old fit on the
    uncensored dwells alone (least squares on log dwell) falls short, because the longest dwells are the censored."""
    from glauber_mlm.measures import margins

    rng = np.random.default_rng(3)
    x = rng.uniform(0, 6, 400)
    groups = np.repeat(np.arange(40), 10)
    d, cens = margin_theorem.censored_dwells(rng, x, np.full(400, 100), c=1.0, b=0.5)
    assert 0.2 < cens.mean() < 0.6
    fit = margins.fit_censored_dwell(x, d, cens, groups, n_boot=200)
    assert fit["slope_low"] < 1.0 < fit["slope_high"] and abs(fit["slope"] - 1) < 0.15
    dropped = margins.fit_log_linear(x[~cens], d[~cens], n_boot=50)
    assert dropped["slope_high"] < 0.9


def test_the_dwell_rules_are_decisive_at_a_well_sized_design():
    rng = np.random.default_rng(4)
    x, groups, remaining = rng.uniform(0, 5, 200), np.repeat(np.arange(20), 10), np.full(200, 2000)
    grows = margin_theorem.dwell_fit_calibration(x, remaining, groups, 0.5, lambda f: bool(f["slope_low"] > 0), 1.0, 0.0,
                                          replicates=20, n_boot=100)
    assert grows.power >= 0.8 and grows.size <= 0.1


def test_the_rhat_calibration_simulates_the_pages_cells():
    """Notebook 06 has one slow and two fast cells (cpu): the rule must hold on every cell, so two fast cells cannot
    pass more often than one, and the calibration says which design it simulated (issue 36)."""
    one = mixing.rhat_agreement_calibration(8, 38, 0.25, 1.05, replicates=100, seed=2)
    two = mixing.rhat_agreement_calibration(8, 38, 0.25, 1.05, replicates=100, fast_cells=2, seed=2)
    assert two.power <= one.power + 0.05 and "1 slow and 2 fast cells" in two.calibrated_on
    assert two.power >= 0.8 and two.size <= 0.1


def test_a_rule_judged_by_its_rates_passes_only_on_both_bounds():
    from glauber_mlm.pages.checks import Calibration
    from glauber_mlm.pages.planted.growth import judge_rates
    from glauber_mlm.stats import clopper_pearson

    good = judge_rates(Calibration(190 / 200, 4 / 200, 200, "planted"))
    assert (good["truth_passes"], good["null_passes"], good["passes"]) == (190, 4, True)
    assert good["power_low"] == pytest.approx(clopper_pearson(190, 200, 0.90)[1]) and good["power_low"] < 0.95
    # a power of 0.85 over 40 runs: its lower bound (≈ 0.72) is below 0.80, so the rule does not pass
    assert judge_rates(Calibration(34 / 40, 0.0, 40, "planted"))["passes"] is False
    # 3 false passes in 30: the size's upper bound (≈ 0.24) is above 0.10
    assert judge_rates(Calibration(1.0, 3 / 30, 30, "planted"))["passes"] is False
    assert judge_rates(Calibration(1.0, float("nan"), 30, "planted"))["passes"] is None


def test_coupling_samples_start_uniformly_over_each_models_states_and_keep_their_replicates_apart():
    from glauber_mlm import exact
    from glauber_mlm.pages.planted.growth import coupling_samples

    models = {3: exact.potts_chain(3, 3, 0.2), 5: exact.potts_chain(5, 3, 0.2)}
    samples = coupling_samples(models, {3: 11, 5: 12}, replicates=4, pairs=6, budget=50, temperature=5.0)
    assert len(samples) == 4
    for n, times, met in samples:
        assert n.tolist() == [3.0] * 6 + [5.0] * 6 and times.shape == met.shape == (12,)
        assert (times[met] <= 50).all() and (times >= 0).all()
    assert not all(np.array_equal(samples[0][1], s[1]) for s in samples[1:])  # the replicates are different runs
    again = coupling_samples(models, {3: 11, 5: 12}, replicates=4, pairs=6, budget=50, temperature=5.0)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(samples, again))  # seeded
