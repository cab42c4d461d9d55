"""Notebook 03 (metastability traps) runs in the smoke profile, saves sane tables, and refuses bad parameters early."""
import numpy as np
import pandas as pd
import pytest

from glauber_mlm.book.errors import BookError
from glauber_mlm.models.hf import DEFAULT_MODEL
from notebook_runner import execute, first_cell_error

NAME = "03_metastability_traps"
needs_model = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                 reason="the embedded default model is not built yet")
# smoke profile: starts=2 documents × seeds=1 chains of steps=60 recorded every 4, at τ = 0.1 and the control τ = 2;
# temperatures [0.1, 1.0] × chains=4; radius and δ calibrated as quantiles (identical levels in every profile)
PAIRS, STEPS, EVERY, TEMPS, CHAINS, MIN_DWELL = 2, 60, 4, [0.1, 1.0], 4, 12
RADIUS_Q, PANEL_Q, DELTA_Q = 0.9, [0.5, 0.75, 0.9, 0.95, 0.99], [0.1, 0.25, 0.5]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb03"))


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_the_basin_free_twins_are_one_row_per_chain_with_its_rank(out):
    m = pd.read_csv(out / "twins.csv")
    assert len(m) == PAIRS and m.change_rate.between(0, 1).all()
    assert (m.twin_change_rate <= m.change_rate + 1e-6).all() and (m.twin_change_rate > 0).all()
    assert m.time_trapped_low.between(0, 1).all() and m.time_trapped_twins.between(0, 1).all()
    assert (m.trap_spread_low >= 0).all() and (m.trap_spread_twins >= 0).all()
    radius = pd.read_csv(out / "calibration.csv").query("threshold == 'trap radius'").value.item()
    assert np.allclose(m.excess_in_r2, (m.trap_spread_low - m.trap_spread_twins) / radius ** 2)
    checks = pd.read_csv(out / "checks.csv")
    assert checks.check.str.startswith("at the calibrated radius, low-temperature chains hold traps in more distinct "
                                       "places than their basin-free twins").sum() == 1
    assert m.rank_among_twins.between(0, 1).all()
    by_chain = pd.read_csv(out / "time_trapped_by_chain.csv")
    assert np.allclose(m.time_trapped_low, by_chain.time_trapped_low)   # one detector, two tables


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_trajectory_table(out):
    t = pd.read_csv(out / "trajectory.csv", keep_default_na=False)
    assert list(t.columns[:5]) == ["step", "pc1", "pc2", "text", "distance_from_start"]
    assert t.step.tolist() == list(range(0, STEPS + 1, EVERY))
    assert t.distance_from_start.iloc[0] == pytest.approx(0, abs=1e-5)
    assert t.distance_from_start.between(0, 2 + 1e-6).all()  # unit vectors
    assert (t.text.str.len() > 0).all()
    # PCA of one chain: coordinates are centred
    assert abs(t.pc1.mean()) < 1e-6 and abs(t.pc2.mean()) < 1e-6
    assert (out / "trajectory_map.png").is_file()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_calibration_table(out):
    c = pd.read_csv(out / "calibration.csv")
    assert list(c.columns) == ["threshold", "source", "level", "value", "sample"]
    radius = c[c.source == "one-token jitter"]
    assert radius.level.tolist() == PANEL_Q and (radius.threshold == "trap radius").sum() == 1
    assert radius[radius.threshold == "trap radius"].level.item() == RADIUS_Q
    assert (np.diff(radius.value) >= 0).all() and radius.value.between(0, 2).all()  # quantiles of unit-vector distances
    delta = c[c.source == "independent passages"]
    assert delta.level.tolist() == DELTA_Q and (np.diff(delta.value) >= 0).all() and delta.value.between(0, 2).all()
    assert (delta["sample"] == 16 * 15 // 2).all() and (radius["sample"] == 16 * 4).all()  # 16 passages, 4 neighbours
    assert (out / "calibration.png").is_file()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_traps_tables(out):
    radius = pd.read_csv(out / "calibration.csv").query("threshold == 'trap radius'").value.item()
    traps = pd.read_csv(out / "traps.csv")
    assert list(traps.columns[:9]) == ["kind", "temperature", "start_passage", "seed", "chain", "start_step",
                                       "end_step", "dwell", "escaped"]
    assert "entry_text" in traps.columns
    if len(traps):
        assert (traps.dwell == traps.end_step - traps.start_step).all() and (traps.dwell >= MIN_DWELL).all()
        assert traps.end_step.le(STEPS).all() and traps.chain.between(0, 2 * PAIRS - 1).all()
        assert (traps.kind == np.where(traps.chain < PAIRS, "low τ", "control")).all()
        assert (~traps.escaped == (traps.end_step == STEPS)).all()
    counts = pd.read_csv(out / "trap_counts.csv")
    assert counts.kind.tolist() == ["low τ", "control"] and counts.temperature.tolist() == [0.1, 2.0]
    assert (counts.chains == PAIRS).all() and np.allclose(counts.radius, radius) and (counts.radius_quantile == RADIUS_Q).all()
    for _, row in counts.iterrows():
        mine = traps[traps.kind == row.kind]
        assert row.ci_low <= row.traps_per_chain <= row.ci_high
        assert row.traps_per_chain == pytest.approx(len(mine) / PAIRS)
        assert row.time_trapped == pytest.approx(mine.dwell.sum() / (PAIRS * STEPS))
        assert 0 <= row.time_trapped <= 1 and row.escaped + row.censored == len(mine)
        if len(mine):  # Kaplan–Meier median of the dwell: censored traps count as still going, never as observed
            assert row.median_dwell_ci_low <= row.median_dwell <= row.median_dwell_ci_high
            if row.escaped == 0:
                assert np.isinf(row.median_dwell) and row.median_dwell_ci_low == mine.dwell.max()
    by_chain = pd.read_csv(out / "time_trapped_by_chain.csv")
    assert len(by_chain) == PAIRS and np.isclose(by_chain.time_trapped_low.mean(), counts.time_trapped[0])
    assert (out / "traps.png").is_file()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_sensitivity_panel_and_criterion(out):
    sens = pd.read_csv(out / "trap_sensitivity.csv")
    assert sorted(set(sens.radius_quantile)) == PANEL_Q and len(sens) == 2 * len(PANEL_Q)
    for _, g in sens.groupby("kind"):  # radii in the order of their quantile levels
        g = g.sort_values("radius_quantile")
        assert (np.diff(g.radius) >= 0).all() and g.time_trapped.between(0, 1).all()
    counts = pd.read_csv(out / "trap_counts.csv")
    at_r = sens[sens.radius_quantile == RADIUS_Q].reset_index(drop=True)
    assert np.allclose(at_r.time_trapped, counts.time_trapped) and np.allclose(at_r.traps_per_chain, counts.traps_per_chain)
    crit = pd.read_csv(out / "trap_criterion.csv")
    assert crit.radius_quantile.tolist() == PANEL_Q and crit.primary.sum() == 1
    assert crit[crit.primary].radius_quantile.item() == RADIUS_Q
    assert np.allclose(crit.difference, crit.time_trapped_low - crit.time_trapped_control)
    assert ((crit.ci_low <= crit.difference) & (crit.difference <= crit.ci_high)).all()
    assert (crit.separates == (crit.ci_low > 0)).all() and (crit.pairs == PAIRS).all()
    # the criterion itself (low τ against its basin-free twins) at every radius: the panel check counts these
    assert ((crit.excess_ci_low <= crit.spread_excess) & (crit.spread_excess <= crit.excess_ci_high)).all()
    assert (crit.beats_twins == ((crit.permutation_p < 0.05) & (crit.spread_excess >= 0.5))).all()
    assert crit.permutation_p.between(0, 1).all()
    m = pd.read_csv(out / "twins.csv")
    primary = crit[crit.primary].iloc[0]
    assert primary.time_trapped_twins == pytest.approx(m.time_trapped_twins.mean())
    assert primary.spread_excess == pytest.approx(m.excess_in_r2.mean())
    checks = pd.read_csv(out / "checks.csv")
    panel = checks[checks.check.str.contains("more than half of the panel")].iloc[0]
    assert panel.value == f"{int(crit.beats_twins.sum())} of {len(crit)}"
    assert (out / "trap_sensitivity.png").is_file()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_every_mlm_check_is_calibrated_and_only_decisive_ones_decide(out):
    checks = pd.read_csv(out / "checks.csv", keep_default_na=False)
    side = checks.check.str.contains("hot control")          # the one side check no planted law can calibrate
    assert (checks[~side].replicates == 100).all()           # every calibrated check: 100 replicates of each law
    core = checks[checks.core.astype(str) == "True"]
    assert core.check.str.contains("basin-free twins").all() and len(core) == 1   # the escape checks are side checks
    assert (checks[side].replicates == 0).all()
    for _, c in checks[~side].iterrows():
        if c.outcome != "inconclusive":
            assert c.outcome == c.rule_says, c.to_dict()
    cal = pd.read_csv(out / "trap_calibration.csv")
    assert cal.power.between(0, 1).all() and cal["size"].between(0, 1).all() and (cal.replicates == 100).all()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_escape_slope_table(out):
    s = pd.read_csv(out / "escape_slope.csv").iloc[0]
    assert s.delta_quantile == sorted(DELTA_Q)[len(DELTA_Q) // 2] and s.chains == len(TEMPS) * CHAINS and s.starts == PAIRS
    assert 0 <= s.censored <= s.chains
    if np.isfinite(s.slope):  # a finite censored fit: its interval holds it
        assert s.slope_low <= s.slope <= s.slope_high
    else:                     # escapes at fewer than two temperatures: no finite maximum, and the check says so
        assert np.isnan(s.slope_low) and np.isnan(s.slope_high)
        check = pd.read_csv(out / "checks.csv").query("check.str.contains('escape time grows')").iloc[0]
        assert check.rule_says == "not computable" and check.outcome == "inconclusive"
    e = pd.read_csv(out / "escape_fraction.csv").query("delta_quantile == @s.delta_quantile")
    assert s.censored == (e.chains - e.reached).sum()         # a chain that never reaches δ is censored
    assert (out / "escape_time.png").is_file() and len(pd.read_csv(out / "escape_calibration.csv")) == 2


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_escape_fraction_table(out):
    e = pd.read_csv(out / "escape_fraction.csv")
    assert list(e.columns[:7]) == ["temperature", "chains", "reached", "fraction", "ci_low", "ci_high", "delta"]
    assert sorted(set(e.temperature)) == TEMPS and sorted(set(e.delta_quantile)) == DELTA_Q and len(e) == 6
    calibrated = pd.read_csv(out / "calibration.csv").query("source == 'independent passages'")
    assert np.allclose(sorted(set(e.delta)), calibrated.value)
    assert (e.chains == CHAINS).all() and e.reached.between(0, CHAINS).all()
    assert np.allclose(e.fraction, e.reached / e.chains)
    assert ((0 <= e.ci_low) & (e.ci_low <= e.fraction) & (e.fraction <= e.ci_high) & (e.ci_high <= 1)).all()
    # a larger δ is never reached by more chains than a smaller one
    for _, g in e.groupby("temperature"):
        assert (np.diff(g.sort_values("delta").reached.to_numpy()) <= 0).all()
    # Kaplan–Meier median escape step: finite exactly when at least half the chains escaped (censoring at the end only)
    assert ((e.median_ci_low <= e.median_escape_step) & (e.median_escape_step <= e.median_ci_high)).all()
    assert (np.isfinite(e.median_escape_step) == (e.reached >= e.chains / 2)).all()
    assert e.median_escape_step[np.isfinite(e.median_escape_step)].between(0, e.steps.max()).all()
    assert (out / "escape_survival.png").is_file()


@needs_model
@pytest.mark.parametrize("params, expected", [
    (dict(length=10000), "length=10000 tokens is more than"),
    (dict(delta_quantiles=[1.5]), "delta_quantiles are quantile levels"),
    (dict(radius_quantile=1.5), "radius_quantile are quantile levels"),
    (dict(control_temperature=0.05), "must be above temperature"),
    (dict(steps=5, record_every=10), "steps must be an integer ≥ 20"),
])
def test_bad_parameters_stop_the_first_cell(tmp_path, params, expected):
    err = first_cell_error(NAME, tmp_path, **params)
    assert err is not None, "the first cell after the parameters ran through"
    assert expected in str(err), repr(err)


@pytest.mark.parametrize("starts, expected", [(0, "parameter starts must be > 0"),
                                               ([0, 1], "parameter starts must be one value like 2, not a list")])
def test_starts_is_a_count_of_documents(tmp_path, starts, expected):
    with pytest.raises(BookError, match=expected):
        first_cell_error(NAME, tmp_path, starts=starts)


def test_a_missing_embedder_folder_is_refused_before_any_kernel(tmp_path):
    with pytest.raises(BookError, match="no model folder at /no/such/embedder"):
        execute(NAME, tmp_path, embedder="/no/such/embedder")
