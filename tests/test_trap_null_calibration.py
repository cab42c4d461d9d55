"""Notebook 03's checks calibrated on planted truths: the trap criterion on planted two-well against no-well embedding
trajectories with the same edit rate, and the escape rules on planted censored escape times with a known slope in
1/τ. Known answers: the rules pass where the planted law has wells (a slope) and fail where it has none."""
import numpy as np
import pytest

from glauber_mlm.measures import margins, semantic
from glauber_mlm.pages.planted import margin_theorem, traps
from glauber_mlm.stats import bootstrap_ci


def test_planted_trajectories_move_by_one_jitter_per_edit_and_only_the_wells_hold_them():
    rng = np.random.default_rng(0)
    x, rec = traps.well_trajectories(rng, [0.0, 1.0], 400, 1, wells=False, dim=32)
    assert rec.tolist() == list(range(401)) and x.shape == (401, 2, 32)
    assert np.all(x[:, 0] == 0)                               # no edits: the embedding never moves
    steps = np.linalg.norm(np.diff(x[:, 1], axis=0), axis=-1)  # one edit per step: a jitter draw of norm ≈ 1
    assert abs(steps.mean() - 1) < 0.05
    assert np.linalg.norm(x[-1, 1]) > 10                      # a random walk of 400 jitters: √400 = 20 away
    w, _ = traps.well_trajectories(rng, [1.0], 400, 1, wells=True, dim=32, separation=10, well_steps=100)
    within = np.linalg.norm(np.diff(w[:, 0], axis=0), axis=-1)
    same = np.sign(w[1:, 0, 0]) == np.sign(w[:-1, 0, 0])
    assert abs(within[same].mean() - 1) < 0.05                 # an edit inside a well moves it by a jitter draw too
    assert 1 <= (~same).sum() <= 12                           # and hops are rare: about 400 / 100 of them
    assert np.abs(np.abs(w[:, 0, 0]) - 5).max() < 2            # always near a centre at ±5 jitters


def test_time_trapped_at_many_radii_equals_the_detector_radius_by_radius():
    rng = np.random.default_rng(1)
    x, rec = traps.well_trajectories(rng, [0.05, 0.1, 0.2], 600, 10, wells=False)
    radii = [0.5, 1.0, 1.5]
    at = semantic.time_trapped_at(x, rec, radii, 50, 600)
    one = [semantic.time_trapped(semantic.chain_traps(x, rec, r, 50), 3, 600) for r in radii]
    assert np.allclose(at, one) and at.shape == (3, 3)
    for b in range(3):  # the batched scan is the single-chain detector
        assert semantic.find_traps(x[:, b], rec, 1.0, 50).dwell.sum() / 600 == pytest.approx(at[1, b])


def test_the_trap_criterion_passes_on_two_wells_and_fails_without_wells():
    rates = np.full(8, 0.08)
    cal, panel = traps.trap_criterion_calibration(rates, 1000, 10, 100, [0.5, 0.9, 0.99], 0.9, 256, replicates=30)
    assert cal.power >= 0.9 and cal.size <= 0.15 and panel.power >= 0.9 and panel.size <= 0.15
    assert cal.decisive == (cal.false_pass_upper <= 0.1 and cal.false_fail_upper <= 0.2)  # issue 36's rule


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


def test_smaller_steps_alone_pass_the_criterion_and_the_calibration_says_so():
    """Without any well, chains whose edits move the embedding half as far as their matched null's are 'trapped more':
    the calibration with the two steps measured gives that null a size near one, so the criterion cannot decide."""
    rates = np.full(8, 0.08)
    cal, _ = traps.trap_criterion_calibration(rates, 1000, 10, 100, [0.9], 0.9, 256, replicates=20,
                                                chain_step=0.5, null_step=1.0)
    assert cal.size >= 0.8 and not cal.decisive


def test_the_sign_randomised_null_has_the_chains_steps_at_their_times():
    """The matched null (issue 36): each chain's own record-to-record increments with random signs, so its edit times
    and step lengths are the chain's exactly, whatever the chain's step size (planted chains stepping 0.5 and 1.3)."""
    rng = np.random.default_rng(6)
    x, rec = traps.well_trajectories(rng, [0.05, 0.2], 600, 10, wells=True, dim=8, jitter=0.5)
    y, _ = traps.well_trajectories(rng, [0.1], 600, 10, wells=False, dim=8, jitter=1.3)
    emb = np.concatenate([x, y], 1)
    walks = semantic.sign_randomised_walks(emb, copies=3, seed=1)
    assert walks.shape == (len(rec), 9, 8) and np.allclose(walks[0], np.tile(emb[0], (3, 1)))
    own = np.linalg.norm(np.diff(emb, axis=0), axis=-1)
    for c in range(3):
        assert np.allclose(np.linalg.norm(np.diff(walks[:, 3 * c:3 * c + 3], axis=0), axis=-1), own)
    assert not np.allclose(walks[:, :3], emb)                    # the directions are not the chain's


def test_span_coordinates_and_the_compiled_scan_keep_the_detector_exact():
    rng = np.random.default_rng(7)
    x, rec = traps.well_trajectories(rng, [0.05, 0.1, 0.3], 800, 10, wells=True, dim=40)
    radii = [0.6, 0.9, 1.4]
    ref = semantic.time_trapped_at(x, rec, radii, 50, 800)
    assert np.array_equal(traps.trapped_fractions(x, rec, radii, 50, 800), ref)
    z = traps.span_coordinates(x)
    assert z.shape[2] <= min(len(rec) - 1, 40) and np.allclose(traps.trapped_fractions(z, rec, radii, 50, 800), ref)
    w = semantic.sign_randomised_walks(x, 1, seed=3)
    zw = semantic.sign_randomised_walks(z, 1, seed=3)            # the same signs in the span: the same distances
    assert np.allclose(traps.trapped_fractions(zw, rec, radii, 50, 800),
                       semantic.time_trapped_at(w, rec, radii, 50, 800))


def test_signflip_p_is_exact():
    assert traps.signflip_p([0.5] * 8) == pytest.approx(1 / 256)
    assert traps.signflip_p([-0.5] * 4) == 1.0
    assert traps.signflip_p([0.0, 0.0]) == 1.0                 # no evidence: every pattern ties


def test_the_matched_null_rule_passes_planted_traps_and_fails_a_matched_walk_at_the_calibrated_rates():
    """Calibrated at a design like the page's (8 chains at its rates, steps 0.85 jitters), then run on fresh planted
    data: the rule passes two-well chains and a structureless walk stepping as they do at the rates it states."""
    rates = np.array([0.0665, 0.0375, 0.0485, 0.0645, 0.122, 0.0755, 0.06, 0.085])
    levels = [0.5, 0.9, 0.99]
    rng = np.random.default_rng(8)
    radii = semantic.calibrated_thresholds(np.linalg.norm(traps.jitter_draws(rng, 256, 16), axis=-1), levels)
    walk, rec = traps.well_trajectories(rng, rates, 2000, 10, wells=False, dim=16, jitter=0.85)
    cal, panel = traps.trap_null_calibration(walk, rec, radii, rates, 10, 100, 2000, 1, 0.85, 256, levels,
                                               replicates=40, copies=4)
    assert cal.power >= 0.9 and cal.size <= 0.1 and panel.power >= 0.9 and panel.size <= 0.1

    def passes(x):
        _, rank = traps.trap_null_scores(x, rec, radii, 100, 2000, 4, seed=int(rng.integers(2**31)))
        return traps.signflip_p(rank[1] - 0.5) < 0.05

    trapped = np.mean([passes(traps.well_trajectories(rng, rates, 2000, 10, True, 16, jitter=0.85)[0])
                       for _ in range(20)])
    free = np.mean([passes(traps.well_trajectories(rng, rates, 2000, 10, False, 16, jitter=0.85)[0])
                    for _ in range(20)])
    assert trapped >= cal.power - 0.2 and free <= cal.size + 0.15
