"""Notebook 04 (political basins) runs in the smoke profile, saves sane tables, and refuses bad parameters early."""
import numpy as np
import pandas as pd
import pytest

from glauber_mlm.book import NotebookFailed
from glauber_mlm.hf import DEFAULT_MODEL
from notebook_runner import execute

NAME = "04_political_basins"
needs_model = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                 reason="the embedded default model is not built yet")
# smoke profile: starts=3 per type, seeds=1, temperatures [0.1, 1.0], steps=40
STARTS, TEMPS, STEPS = 3, [0.1, 1.0], 40


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb04"))


@needs_model
def test_score_accuracy(out):
    a = pd.read_csv(out / "score_accuracy.csv").set_index("subset")
    assert list(a.index) == ["all", "political", "not political"]
    assert a.loc["all", "n"] == a.loc["political", "n"] + a.loc["not political", "n"]
    assert ((a.ci_low <= a.accuracy) & (a.accuracy <= a.ci_high)).all()
    # even 200 labelled texts give a score far better than chance on held-out documents
    assert a.loc["all", "accuracy"] > 0.75 and a.loc["all", "ci_low"] > 0.5


@needs_model
def test_time_in_region(out):
    t = pd.read_csv(out / "time_in_region.csv")
    assert list(t.columns[:6]) == ["temperature", "start", "chains", "fraction", "ci_low", "ci_high"]
    assert sorted(set(t.temperature)) == TEMPS and set(t.start) == {"political", "not political"}
    assert len(t) == 4 and (t.chains == STARTS).all()
    assert ((0 <= t.ci_low) & (t.ci_low <= t.fraction + 1e-12) & (t.fraction <= t.ci_high + 1e-12) & (t.ci_high <= 1)).all()


@needs_model
def test_escape_times(out):
    e = pd.read_csv(out / "escape_times.csv")
    assert list(e.columns[:6]) == ["temperature", "chains", "escaped", "escape_fraction", "ci_low", "ci_high"]
    chains = pd.read_csv(out / "escape_chains.csv")
    assert (chains.start == "political").all() and (chains.start_score >= 0.5).all()
    assert chains.escape_step.between(0, STEPS).all()
    assert (chains[~chains.escaped].escape_step == STEPS).all()  # censored at the run length
    assert e.chains.sum() == len(chains) and e.escaped.sum() == chains.escaped.sum()
    assert np.allclose(e.escape_fraction, e.escaped / e.chains)
    assert (e.median_escape_step.isin([np.inf]) | e.median_escape_step.between(1, STEPS)).all()
    # Kaplan–Meier median: reached exactly when half the chains escaped (censoring at the run length only)
    assert (np.isfinite(e.median_escape_step) == (e.escaped >= e.chains / 2)).all()
    assert ((e.median_ci_low <= e.median_escape_step) & (e.median_escape_step <= e.median_ci_high)).all()
    for fig in ("time_in_region", "escape_times"):
        assert (out / f"{fig}.png").is_file()


@needs_model
@pytest.mark.parametrize("params, expected", [
    (dict(method="svm"), "method must be one of"),
    (dict(temperatures=[0.5, -1.0]), "temperatures must be a list of at least 1 finite temperatures > 0"),
    (dict(starts=100000), "passages from distinct documents have"),
])
def test_bad_parameters_stop_the_first_cell(tmp_path, params, expected):
    with pytest.raises(NotebookFailed) as err:
        execute(NAME, tmp_path, **params)
    assert "first cell after the parameters" in str(err.value)
    assert expected in str(err.value)
