"""Notebook 08 (exact answers on the real model) runs in the smoke profile, its tables agree with the exact tools
and with each other, its forwards match its plan, and it refuses bad parameters in its first cell."""
import json

import numpy as np
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.book.plan import CountingModel, plan, resolved_parameters
from glauber_mlm.models.hf import DEFAULT_MODEL, load_mlm
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.rng import stream
from notebook_runner import execute, first_cell_error, read_table

NAME = "08_exact_answers"
SIZES, TEMPS, DOCUMENTS, COUPLING_SIZE, PAIRS, BUDGET, REPLICATES = [2, 3, 4], [0.25, 1.0, 4.0], 4, 3, 64, 300, 40
GROWTH_TEMPS, GROWTH_PAIRS, GROWTH_RUNS = [4.0], 8, 10
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb08"))


@pytest.mark.slow
def test_exact_answers_cover_the_grid_and_obey_the_theorems(out):
    chains = read_table(out, "chains")
    assert sorted(set(chains.n)) == SIZES and (chains.states == 2**chains.n).all()
    assert (chains.forward_rows == chains.n + chains.n * 2 ** (chains.n - 1)).all()
    t = read_table(out, "exact_answers")
    assert len(t) == DOCUMENTS * len(SIZES) * len(TEMPS) and t.passage.nunique() == DOCUMENTS
    assert (t.t_mix >= 1).all() and (t.t_rel >= 1 - 1e-9).all()
    below = t[t.total_influence < 1]
    assert len(below) and (below.t_mix <= below.dobrushin_bound).all()  # the theorem where its hypothesis holds
    assert np.isinf(t[t.total_influence >= 1].dobrushin_bound).all()
    assert t.scan_tv.between(0, 1).all() and t.pll_tv.between(0, 1).all() and (t.max_abs_rho >= 0).all()
    # the model is incompatible on every passage; one rectangle (n = 2) may round to exactly 0 in a bf16 forward
    assert (t.groupby("passage").max_abs_rho.max() > 0).all()
    # two sites: one rectangle per context-free pair, ρ_τ = ρ_1 / τ
    two = t[t.n == 2].pivot(index="passage", columns="temperature", values="max_abs_rho")
    assert np.allclose(two[0.25], 4 * two[1.0], rtol=1e-5) and np.allclose(two[4.0], two[1.0] / 4, rtol=1e-5)
    growth = read_table(out, "growth")
    assert sorted(growth.temperature) == TEMPS and (growth.ci_low <= growth.ci_high).all()


@pytest.mark.slow
def test_coupling_curves_are_survivals_above_the_exact_distance(out):
    curves = read_table(out, "coupling_curves")
    assert len(curves) == DOCUMENTS * len(TEMPS) * BUDGET
    for _, g in curves.groupby(["passage", "temperature"]):
        assert g.exact_tv.iloc[0] == pytest.approx(1.0) and g.survival.iloc[0] == 1.0  # two distinct starts
        assert (np.diff(g.exact_tv) <= 1e-12).all() and (np.diff(g.survival) <= 0).all()
    summary = read_table(out, "coupling_check")
    checks = read_table(out, "checks")
    assert len(checks) == 3 and checks.core.tolist() == [True, False, False]  # 02's growth rule is a side check
    assert checks.replicates.tolist() == [REPLICATES, GROWTH_RUNS, REPLICATES]
    assert checks.rule_says.iloc[0] == ("pass" if (summary.slack >= 0).all() else "fail")
    # the L-lag side check reads its own table with notebook 07's rule
    lag = read_table(out, "lag_bounds")
    read = lag[lag.exact_tv >= 0.02]
    assert lag.passage.nunique() == DOCUMENTS and (lag.bound_high >= lag.bound - 1e-12).all()
    assert checks.rule_says.iloc[2] == ("pass" if (read.bound_high >= read.exact_tv).all() else "fail")
    assert (summary.pairs == PAIRS).all() and (summary.met <= PAIRS).all()
    result = json.loads((out / "result.json").read_text())
    assert result["question"] == "book" and any(k.startswith("exact t_mix") for k in result["numbers"])


@pytest.mark.slow
def test_02s_growth_rule_is_judged_against_the_exact_exponent_of_the_same_chains(out):
    from glauber_mlm.pages.planted.growth import RATE_POWER_MIN, RATE_SIZE_MAX
    from glauber_mlm.stats import clopper_pearson

    rule = read_table(out, "growth_rule_rate")
    assert rule.temperature.tolist() == GROWTH_TEMPS and (rule.runs == GROWTH_RUNS).all()
    assert (rule.pairs == GROWTH_PAIRS).all() and (rule.lengths == "2–3–4").all()
    # the exact exponent is the slope of the first passage's exact t_mix on n over the three largest sizes
    answers = read_table(out, "exact_answers")
    first = answers[(answers.passage == answers.passage.iloc[0]) & (answers.temperature == GROWTH_TEMPS[0])]
    slope = np.polyfit(np.log(first.n), np.log(first.t_mix.astype(float)), 1)[0]
    assert rule.exact_exponent.iloc[0] == pytest.approx(slope) and rule.exact_below.iloc[0] == (slope < 1.5)
    for r in rule.itertuples():
        assert 0 <= r.truth_passes <= r.runs and r.power == pytest.approx(r.truth_passes / r.runs)
        assert r.power_low == pytest.approx(clopper_pearson(r.truth_passes, r.runs, 0.90)[1])
        if not np.isnan(r.size_high):
            assert r.passes == (r.power_low >= RATE_POWER_MIN and r.size_high <= RATE_SIZE_MAX)
    checks = read_table(out, "checks")
    read = rule[rule.exact_below]
    says = "not computable" if read.empty or read.passes.isna().any() else ("pass" if read.passes.all() else "fail")
    assert checks.rule_says.iloc[1] == says


def test_the_chains_forwards_match_the_plan():
    p = resolved_parameters(NAME, "smoke", None, {})
    works = {w.part: w for w in plan([NAME], "smoke")[NAME]}
    mlm = load_mlm(device="cpu")
    contexts, _ = sample_passages(mlm, load_passages(p["passages"]), p["length"], p["documents"],
                                  seed=stream(p["seed"], "starts", n=p["length"]))
    picked, built = CountingModel(mlm), CountingModel(mlm)
    for context in contexts:
        for n in sorted(set(p["sizes"]) | {p["coupling_size"]}):
            sites = torch.arange(1, n + 1)
            exact.restricted(built, context, sites, exact.candidate_sets(picked, context, sites, p["candidates"]))
    candidates, tables = works["candidate sets (top-k, site masked)"], works["restricted chains: every conditional"]
    assert (picked.rows, picked.calls) == (candidates.rows, candidates.calls)
    assert (built.rows, built.calls) == (tables.rows, tables.calls)


@pytest.mark.parametrize("params, message", [(dict(sizes=[2, 20]), "sizes"), (dict(sizes=[13]), "sizes"),
                                             (dict(sizes=[2, 3]), "three"),
                                             (dict(growth_temperatures=[3.0]), "growth_temperatures"),
                                             (dict(coupling_size=13), "coupling_size"), (dict(eps=1.5), "eps")])
def test_bad_parameters_stop_in_the_first_cell(tmp_path, params, message):
    err = first_cell_error(NAME, tmp_path, **params)
    assert isinstance(err, ValueError) and message in str(err)


def test_the_coupling_rule_passes_the_tightest_coupling_and_fails_a_faster_one():
    from glauber_mlm.pages import coupling_inequality as ci

    # a censored pair counts as not met at every step below the budget
    assert ci.survival([0, 2, 5], [True, True, False], 5).tolist() == [2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3]
    assert ci.dkw_margin(200, 0.05) == pytest.approx(np.sqrt(np.log(20) / 400))
    curves = [0.9 ** np.arange(300), 0.97 ** np.arange(300)]
    times, met = ci.draw_times(curves[0], 20_000, 300, np.random.default_rng(0))
    assert np.abs(ci.survival(times, met, 300) - curves[0]).max() < 0.02  # P(T > t) = TV_t
    cal = ci.calibration(curves, 400, 300, 100, seed=1)
    assert cal.power >= 0.9 and cal.size <= 0.05
    # the L-lag rule reads only where the exact distance is at least the floor
    assert ci.covers([0.5, 0.2, 0.0], [0.4, 0.1, 0.01], 0.02) is True
    assert ci.covers([0.5, 0.05, 0.0], [0.4, 0.1, 0.01], 0.02) is False
    assert ci.covers([0.5], [0.01], 0.02) is None
