"""Notebook 02 (high-temperature mixing) runs in the smoke profile, saves sane tables, and refuses bad lengths early."""
import json

import numpy as np
import pandas as pd
import pytest

from glauber_mlm.models.hf import DEFAULT_MODEL
from glauber_mlm.stats import censored_median, law_exponent
from notebook_runner import execute, first_cell_error

NAME = "02_high_temperature_mixing"
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


# two models: the embedded one by None and by its folder: two names for one network, each with its own rows
MODELS = [None, str(DEFAULT_MODEL)]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb02"), models=MODELS)


@pytest.mark.slow
def test_coupling_times_are_censored_at_the_budget(out):
    both = pd.read_csv(out / "coupling_times.csv")
    assert list(both.columns) == ["model", "temperature", "length", "pair", "seed", "time", "met", "budget"]
    assert list(both.model.unique()) == [DEFAULT_MODEL.name, str(DEFAULT_MODEL)]
    first, second = (g.drop(columns="model").reset_index(drop=True) for _, g in both.groupby("model", sort=False))
    # one network under two names: same grid, passages and seeds, and the same times (the adaptive speculation width
    # comes from the model's shape, not a clock, so both runs batch, and round, alike)
    pd.testing.assert_frame_equal(first, second)
    t = first
    assert set(t.temperature) == {1.0, 8.0} and set(t.length) == {3, 5}
    assert len(t) == 2 * 2 * 2  # temperatures × lengths × pairs (one replicate)
    assert ((t.time >= 1) & (t.time <= t.budget)).all()  # pairs start from different passages
    assert (t.time[~t.met] == t.budget[~t.met]).all()
    assert t.met[t.time < t.budget].all()


@pytest.mark.slow
def test_phase_diagram_has_the_columns_notebook_05_reads(out):
    t = pd.read_csv(out / "coupling_times.csv")
    t = t[t.model == DEFAULT_MODEL.name]
    both = pd.read_csv(out / "phase_diagram.csv")
    assert list(both.columns) == ["model", "temperature", "length", "median_time", "met_fraction", "pairs", "budget"]
    assert len(both) == 8
    phase = both[both.model == DEFAULT_MODEL.name]
    assert len(phase) == 4 and (phase.pairs == 2).all() and (phase.budget == 60).all()
    assert phase.met_fraction.between(0, 1).all()
    for _, row in phase.iterrows():
        cell = t[(t.temperature == row.temperature) & (t.length == row.length)]
        assert row.met_fraction == pytest.approx(cell.met.mean())
        assert row.median_time == censored_median(cell.time, cell.met)  # inf where half or more never met
        assert np.isinf(row.median_time) or row.median_time <= row.budget
    # at τ = 8 the conditionals are nearly flat: every pair couples, within a few sweeps
    hot = phase[phase.temperature == 8.0]
    assert (hot.met_fraction == 1).all() and (hot.median_time <= 10 * hot.length).all()


@pytest.mark.slow
def test_scaling_study_times_are_censored_at_its_budget(out):
    t = pd.read_csv(out / "scaling_times.csv")
    assert list(t.columns) == ["model", "temperature", "length", "pair", "time", "met", "budget"]
    assert (t.model == DEFAULT_MODEL.name).all()  # the first model's: notebook 05 reads the rows of its own model
    assert set(t.temperature) == {8.0} and set(t.length) == {3, 5, 8, 12} and len(t) == 4 * 4
    assert ((t.time >= 1) & (t.time <= t.budget)).all() and (t.budget == 200).all()
    assert (t.time[~t.met] == t.budget[~t.met]).all()


@pytest.mark.slow
def test_exponent_fit_and_verdicts(out):
    exp = pd.read_csv(out / "exponent_fit.csv")
    assert list(exp.columns) == ["temperature", "lengths", "pairs", "beta", "ci_low", "ci_high", "C", "r2",
                                 "dropped_resamples", "trend_slope", "trend_low", "trend_high", "kendall", "trend_p"]
    row = exp.iloc[0]
    assert row.temperature == 8.0 and row.lengths == "3–5–8–12" and row.pairs == 4
    assert row.ci_low <= row.beta <= row.ci_high and 0 <= row.trend_p <= 1
    assert row.trend_slope == pytest.approx(row.beta - law_exponent("n log n", [3, 5, 8, 12]))
    v = pd.read_csv(out / "law_verdicts.csv")
    assert list(v.law) == ["n", "n log n", "n^1.5", "n^2"]
    for r in v.itertuples():  # the stated rule: rejected iff β's interval excludes the local exponent (or, for n log n, p < 0.05)
        outside = not r.low <= r.exponent <= r.high
        assert r.rejected == (outside or (r.law == "n log n" and r.trend_p < 0.05))
    apart = pd.read_csv(out / "laws_told_apart.csv")
    assert len(apart) == 6 and set(apart.verdict) <= {"told apart", "cannot tell apart", "neither fits"}


@pytest.mark.slow
def test_the_growth_check_is_the_local_exponent_rule_with_its_calibration(out):
    from glauber_mlm.pages.checks import COLUMNS

    growth = pd.read_csv(out / "growth_test.csv")
    assert list(growth.temperature) == [8.0] and list(growth.lengths) == ["5–8–12"]
    for r in growth.itertuples():  # the stated rule: passes iff the one-sided upper bound of the exponent is below 1.5
        assert r.limit == 1.5 and r.passes == (r.upper_one_sided < 1.5)
        assert r.upper_one_sided >= r.exponent and r.nlogn_exponent == pytest.approx(law_exponent("n log n", [5, 8, 12]))
    checks = pd.read_csv(out / "checks.csv")
    assert list(checks.columns) == COLUMNS and len(checks) == 2  # the growth check and the censored-share trend
    cal = pd.read_csv(out / "calibration.csv")
    assert list(cal.design) == ["4 pairs per length", "8 pairs per length"] and list(cal.replicates) == [400, 200]
    assert "replanted as n log n / as n^1.5" in cal.calibrated_on[0]
    assert checks.power[0] == cal.power[0] and checks["size"][0] == cal["size"][0]
    assert checks.rule_says[0] == {True: "pass", False: "fail"}[bool(growth.passes[0])]
    decisive = bool(checks.false_pass_upper[0] <= 0.10 if growth.passes[0] else checks.false_fail_upper[0] <= 0.20)
    assert checks.outcome[0] == (checks.rule_says[0] if decisive else "inconclusive")


@pytest.mark.slow
def test_the_slow_half_of_the_claim_has_its_own_calibrated_trend_check(out):
    """"At low temperature mixing is slow" is decided by the censored share's trend over the grid (one-sided
    Kendall), calibrated at the grid's design against the same censoring level at every τ."""
    from glauber_mlm.pages.planted.censoring import censoring_trend

    coupling = pd.read_csv(out / "coupling_times.csv")
    first = coupling[coupling.model == coupling.model.iloc[0]]
    checks = pd.read_csv(out / "checks.csv")
    row = checks[checks.check.str.startswith("at low temperature mixing is slow")].iloc[0]
    trend = censoring_trend(first.temperature, ~first.met.astype(bool))
    assert row.core and row.value.startswith(f"τ_b = {trend['kendall']:.2f}")
    assert row.rule_says == {True: "pass", False: "fail", None: "not computable"}[trend["passes"]]
    assert "the same at every τ" in row.calibrated_on and row.replicates == 400
    claim = json.loads((out / "result.json").read_text())["claim"]
    assert "rises as τ falls" in claim and "O(n log n) steps" not in claim


@pytest.mark.slow
def test_scaling_fit_rows(out):
    fit = pd.read_csv(out / "scaling_fit.csv")
    assert list(fit.columns) == ["temperature", "law", "C", "ci_low", "ci_high", "r2"]
    assert 8.0 in set(fit.temperature)
    for _, g in fit.groupby("temperature"):
        assert sorted(g.law) == ["n", "n log n", "n^2"]
    finite = fit[np.isfinite(fit.C)]
    assert (finite.C > 0).all() and (finite.ci_low <= finite.C).all() and (finite.C <= finite.ci_high).all()
    assert (finite.r2 <= 1).all()
    assert (out / "phase_diagram.png").is_file() and (out / "scaling.png").is_file()
    assert (out / "provenance.json").is_file()


def test_a_length_the_model_cannot_take_stops_the_first_cell(tmp_path):
    err = first_cell_error(NAME, tmp_path, lengths=[10000])
    assert err is not None, "the first cell after the parameters ran through"
    assert isinstance(err, ValueError) and "lengths must be whole numbers of tokens" in str(err), repr(err)


def test_a_scaling_study_needs_two_lengths(tmp_path):
    err = first_cell_error(NAME, tmp_path, scaling_lengths=[8])
    assert err is not None, "the first cell after the parameters ran through"
    assert "scaling_lengths must be whole numbers of tokens" in str(err), repr(err)


def test_one_model_named_twice_is_refused(tmp_path):
    err = first_cell_error(NAME, tmp_path, models=[None, None])
    assert err is not None and "models name one model twice" in str(err), repr(err)
