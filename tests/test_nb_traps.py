"""Notebook 03 (metastability traps) runs in the smoke profile, saves sane tables, and refuses bad parameters early."""
import numpy as np
import pandas as pd
import pytest

from glauber_mlm.book import NotebookFailed
from glauber_mlm.hf import DEFAULT_MODEL
from notebook_runner import execute

NAME = "03_metastability_traps"
needs_model = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                 reason="the embedded default model is not built yet")
# smoke profile: seeds=2 chains of steps=60 recorded every 4; temperatures [0.1, 1.0] × chains=4; deltas [0.5, 1.0]
SEEDS, STEPS, EVERY, TEMPS, CHAINS, DELTAS = 2, 60, 4, [0.1, 1.0], 4, [0.5, 1.0]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb03"))


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


@needs_model
def test_traps_tables(out):
    traps = pd.read_csv(out / "traps.csv")
    assert list(traps.columns[:5]) == ["seed", "start_step", "end_step", "dwell", "escaped"]
    assert "entry_text" in traps.columns
    if len(traps):
        assert (traps.dwell == traps.end_step - traps.start_step).all() and (traps.dwell >= 12).all()
        assert traps.end_step.le(STEPS).all() and traps.seed.isin([0, 1]).all()
        assert (~traps.escaped == (traps.end_step == STEPS)).all()
    counts = pd.read_csv(out / "trap_counts.csv").iloc[0]
    assert counts.seeds == SEEDS and counts.ci_low <= counts.traps_per_chain <= counts.ci_high
    assert counts.traps_per_chain == pytest.approx(len(traps) / SEEDS)
    assert 0 <= counts.time_trapped <= 1 and counts.escaped + counts.censored == len(traps)
    if len(traps):  # Kaplan–Meier median of the dwell: censored traps count as still going, never as observed
        assert counts.median_dwell_ci_low <= counts.median_dwell <= counts.median_dwell_ci_high
        if counts.escaped == 0:
            assert np.isinf(counts.median_dwell) and counts.median_dwell_ci_low == traps.dwell.max()
    assert (out / "traps.png").is_file()


@needs_model
def test_escape_fraction_table(out):
    e = pd.read_csv(out / "escape_fraction.csv")
    assert list(e.columns[:7]) == ["temperature", "chains", "reached", "fraction", "ci_low", "ci_high", "delta"]
    assert sorted(set(e.temperature)) == TEMPS and sorted(set(e.delta)) == DELTAS and len(e) == 4
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
    (dict(deltas=[3.0]), "deltas and radius are distances between unit vectors"),
    (dict(steps=5, record_every=10), "steps must be an integer ≥ 20"),
    (dict(embedder="/no/such/embedder"), "no sentence-transformers folder"),
])
def test_bad_parameters_stop_the_first_cell(tmp_path, params, expected):
    with pytest.raises(NotebookFailed) as err:
        execute(NAME, tmp_path, **params)
    assert "first cell after the parameters" in str(err.value)
    assert expected in str(err.value)
