"""Notebook 03's checks calibrated on planted truths: the trap criterion on planted two-well against no-well embedding
trajectories with the same edit rate, and the escape rules on planted censored escape times with a known slope in
1/τ. Known answers: the rules pass where the planted law has wells (a slope) and fail where it has none."""
import numpy as np
import pytest

from glauber_mlm.measures import margins, semantic
from glauber_mlm.pages.planted import margin_theorem, traps
from glauber_mlm.stats import bootstrap_ci


def test_bootstrap_ci_draws_as_one_call_per_resample():
    v = np.random.default_rng(2).normal(size=9)
    rng = np.random.default_rng(5)
    loop = np.array([v[rng.integers(0, 9, 9)].mean() for _ in range(300)])
    est, lo, hi = bootstrap_ci(v, n_boot=300, seed=5)
    assert est == pytest.approx(v.mean()) and lo == pytest.approx(np.quantile(loop, 0.025))
    assert hi == pytest.approx(np.quantile(loop, 0.975))
    assert bootstrap_ci(v, np.median, n_boot=300, seed=5)[1] <= np.median(v)


def test_the_censored_slope_recovers_a_planted_slope_and_its_interval_is_over_starts():
    temps = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0]
    slope, intercept = traps.arrhenius_truth(temps, 500)
    assert slope > 0
    rng = np.random.default_rng(3)
    x, t, escaped, start = traps.arrhenius_escapes(rng, temps, 200, 8, 500, 10, slope, intercept, start_sd=0.0)
    assert t.max() == 500 and (t[~escaped] == 500).all() and (t % 10 == 0).all() and (~escaped).any()
    fit = margins.fit_censored_dwell(x, t, ~escaped, start, n_boot=200)
    assert fit["slope_low"] <= slope <= fit["slope_high"] and fit["slope_low"] > 0
    _, t0, e0, s0 = traps.arrhenius_escapes(rng, temps, 200, 8, 500, 10, 0.0, intercept + slope, start_sd=0.0)
    flat = margins.fit_censored_dwell(x, t0, ~e0, s0, n_boot=200)
    assert flat["slope_low"] <= 0 <= flat["slope_high"]


def test_the_weighted_newton_fit_is_the_maximum_likelihood_fit():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 5, 80)
    d, cens = margin_theorem.censored_dwells(rng, x, rng.integers(5, 500, 80), c=0.6, b=0.5)
    start = np.array([0.0, np.log(d.mean())])
    one = margins._censored_dwell_mle(x, d, cens, start)
    w = np.stack([np.ones(80), rng.integers(0, 3, 80)]).astype(float)
    both = margins._censored_dwell_mle_weighted(x, d, cens, w, one)
    assert np.allclose(both[0], one, atol=1e-4)
    k = np.repeat(np.arange(80), w[1].astype(int))             # weights are repeated rows
    assert np.allclose(both[1], margins._censored_dwell_mle(x[k], d[k], cens[k], one), atol=1e-4)


def test_escapes_at_one_temperature_only_have_no_finite_slope():
    x = np.repeat([10.0, 1.0], 4)
    d = np.array([28, 28, 28, 28, 4, 8, 28, 28.0])
    cens = np.array([1, 1, 1, 1, 0, 0, 1, 1], bool)           # every chain at the low τ (x = 10) censored
    assert np.isnan(margins.fit_censored_dwell(x, d, cens, np.tile([0, 1], 4), n_boot=50)["slope"])


def test_the_escape_rules_pass_with_a_slope_and_fail_without_one_at_the_cpu_design():
    wilson, slope = traps.escape_calibrations([0.05, 0.1, 0.25, 0.5, 1.0, 2.0], 16, 8, 500, 10, replicates=40)
    assert wilson.power >= 0.85 and wilson.size <= 0.1 and slope.power >= 0.85 and slope.size <= 0.15
    tiny, _ = traps.escape_calibrations([0.1, 1.0], 2, 2, 30, 4, replicates=40)
    assert not tiny.decisive                                  # two chains per τ cannot separate Wilson intervals


def test_single_edit_jumps_read_only_records_one_token_apart():
    states = np.array([[[0, 0]], [[0, 1]], [[2, 3]], [[2, 3]], [[2, 4]]])    # (R=5, B=1, n=2)
    emb = np.array([[[0.0, 0]], [[3, 4]], [[9, 9]], [[9, 9]], [[9, 10]]])
    assert semantic.single_edit_jumps(states, emb).tolist() == [5.0, 1.0]   # steps 0→1 and 3→4; 1→2 changed two sites
    with pytest.raises(ValueError, match="same records"):
        semantic.single_edit_jumps(states[:3], emb)


