"""Notebook 06 (has my chain mixed?) runs in the smoke profile, saves tables that agree with each other and with its
stated rule, and refuses bad parameters in its first cell."""
import json

import numpy as np
import pytest

from glauber_mlm.diagnostics import RHAT_MAX, coupling_regime
from glauber_mlm.models.hf import DEFAULT_MODEL
from glauber_mlm.stats import km_median
from notebook_runner import execute, first_cell_error, read_table

NAME = "06_has_my_chain_mixed"
TEMPS, CHAINS, STEPS, PAIRS, MH_CHAINS, MH_PAIRS, N, MH_LENGTHS = [0.25, 8.0], 4, 40, 2, 2, 2, 4, [4, 6]  # smoke
SAMPLERS = ["Glauber", "MH (PLL target)"]
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb06"))


@pytest.mark.slow
def test_rhat_table_has_both_summaries_read_on_the_second_half(out):
    r = read_table(out, "rhat")
    assert list(r.columns) == ["temperature", "summary", "chains", "draws", "mean", "rhat", "ess_bulk", "ess_tail",
                               "mcse_mean", "n_stuck", "status"]
    assert sorted(set(r.temperature)) == TEMPS and (r.chains == CHAINS).all()
    pll, hamming = r[r.summary == "PLL energy"], r[r.summary == "Hamming to start"]
    assert len(pll) == len(hamming) == len(TEMPS)
    readings = STEPS // 4 + 1  # pll_every = 4
    assert (pll.draws == readings - readings // 2).all() and (hamming.draws == STEPS + 1 - (STEPS + 1) // 2).all()
    assert hamming["mean"].between(0, N).all()
    assert set(r.status) <= {"mixed", "not mixed", "stuck"}
    assert ((r.n_stuck > 0) == (r.status == "stuck")).all()


@pytest.mark.slow
def test_coupling_tables_are_censored_at_the_budget_and_summarised_by_the_rule(out):
    t = read_table(out, "coupling_times")
    assert list(t.columns) == ["sampler", "temperature", "pair", "time", "met", "budget"]
    assert sorted(set(t.sampler)) == SAMPLERS and (t.budget == STEPS).all()
    counts = t.groupby(["sampler", "temperature"]).size()
    assert (counts["Glauber"] == PAIRS).all() and (counts["MH (PLL target)"] == MH_PAIRS).all()
    assert ((t.time >= 1) & (t.time <= STEPS)).all()  # pairs start from different passages
    assert (t.time[~t.met] == STEPS).all() and t.met[t.time < STEPS].all()
    cells = read_table(out, "coupling_by_sampler")
    for row in cells.itertuples():
        g = t[(t.sampler == row.sampler) & (t.temperature == row.temperature)]
        assert row.p_late == pytest.approx((~g.met).mean()) and row.p_late_low <= row.p_late <= row.p_late_high
        assert row.median_time == km_median(g.time, g.met)[0]
        assert row.regime == coupling_regime(g.time, g.met, STEPS)


@pytest.mark.slow
def test_the_agreement_table_follows_the_stated_rule(out):
    views = read_table(out, "rhat_and_coupling")
    r = read_table(out, "rhat")
    assert list(views.temperature) == TEMPS
    for row in views.itertuples():
        pll = r[(r.temperature == row.temperature) & (r.summary == "PLL energy")].rhat
        assert row.pll_rhat == pytest.approx(pll.iloc[0])
    for h in (RHAT_MAX, 1.05):
        flagged = views[f"flagged_at_{h:g}"]
        assert (flagged == (views.pll_rhat >= h)).all()
        agree = views[f"agree_at_{h:g}"]
        assert agree[views.regime == "between"].isna().all()
        decided = views.regime != "between"
        assert (agree[decided].astype(bool) == (flagged[decided] == (views.regime[decided] == "slow"))).all()
    result = json.loads((out / "result.json").read_text())
    checks = [v for k, v in result["checks"].items() if k.startswith("R̂ and coupling agree")]
    assert len(checks) == 2 and result["checks_verdict"] in ("passes", "fails", "inconclusive at this scale")
    assert result["verdict"] == "smoke test, not a result"  # a smoke page claims no verdict (issue 34)
    cal = read_table(out, "calibration")
    assert set(cal.threshold) == {RHAT_MAX, 1.05} and cal.power.between(0, 1).all() and cal["size"].between(0, 1).all()
    # calibrated on the page's own design: as many slow and fast cells as the coupling regimes name (issue 36)
    n_slow, n_fast = max(1, int((views.regime == "slow").sum())), max(1, int((views.regime == "fast").sum()))
    assert cal.calibrated_on.str.contains(f"{n_slow} slow and {n_fast} fast cell").all()


@pytest.mark.slow
def test_mh_acceptance_check_pairs_chains_and_is_calibrated(out):
    every, chains = read_table(out, "mh_acceptance"), read_table(out, "mh_acceptance_chains")
    assert list(chains.columns) == ["length", "temperature", "start", "acceptance"]
    assert len(chains) == len(MH_LENGTHS) * len(TEMPS) * MH_CHAINS
    means = chains.groupby(["length", "temperature"]).acceptance.mean().to_numpy()
    assert np.allclose(means, every.acceptance)  # the table's rate is the mean over chains
    wide = chains.pivot_table(index=["length", "start"], columns="temperature", values="acceptance").dropna()
    checks = read_table(out, "checks")
    mh = checks[checks.check.str.startswith("MH's acceptance rate")].iloc[0]
    diff = (wide[TEMPS[-1]] - wide[TEMPS[0]]).mean()
    assert mh.value.startswith(f"{diff:+.2f} [") and mh.value.endswith(f"over {len(wide)} chains")
    assert mh.replicates > 0 and mh.rule_says == ("pass" if float(mh.value.split("[")[1].split(",")[0]) > 0 else "fail")


@pytest.mark.slow
def test_mh_acceptance_and_forward_rows(out):
    every = read_table(out, "mh_acceptance")
    assert list(every.columns) == ["length", "temperature", "chains", "steps", "changing_share", "acceptance", "acceptance_low",
                               "acceptance_high", "rows_per_step"]
    assert list(every.length) == [L for L in MH_LENGTHS for _ in TEMPS] and list(every.temperature) == TEMPS * 2
    assert (every.chains == MH_CHAINS).all() and (every.steps == STEPS).all()
    assert every.changing_share.between(0, 1).all() and every.acceptance.between(0, 1).all()
    assert (every.acceptance_low <= every.acceptance).all() and (every.acceptance <= every.acceptance_high).all()
    assert np.allclose(every.rows_per_step, 1 + every.length * every.changing_share)
    a = every[every.length == N]  # the chains whose forward rows the cost table counts
    cost = read_table(out, "forward_rows").set_index(["sampler", "run"])
    assert list(cost.columns) == ["forward_rows", "chain_steps", "rows_per_chain_step"]
    # metropolis: one proposal row per chain-step, n PLL rows for each start and each proposal that changed a token
    chains = MH_CHAINS * len(TEMPS)
    tested = (a.changing_share * MH_CHAINS * STEPS).round().sum()
    assert cost.loc[("MH (PLL target)", "chains"), "forward_rows"] == chains * STEPS + N * (chains + tested)
    t = read_table(out, "coupling_times")
    for sampler in SAMPLERS:
        assert cost.loc[(sampler, "coupled pairs"), "chain_steps"] == 2 * t[t.sampler == sampler].time.sum()
    assert cost.loc[("Glauber", "coupled pairs"), "rows_per_chain_step"] == 1.0  # one conditional per chain-step
    assert cost.loc[("MH (PLL target)", "coupled pairs"), "rows_per_chain_step"] > 1.0
    for figure in ("pll_traces", "rhat_and_coupling", "glauber_vs_mh"):
        assert (out / f"{figure}.png").is_file()
    assert (out / "provenance.json").is_file()


@pytest.mark.parametrize("params, message", [
    (dict(length=10000), "length must be an integer"),
    (dict(mh_pairs=3), "mh_pairs must be an integer ≥ 1 and ≤ 2"),
    (dict(pll_every=6), "pll_every must be an integer ≥ 1 and ≤ 5"),
    (dict(mh_lengths=[6, 8]), "that include length = 4"),
])
def test_bad_parameters_stop_the_first_cell(tmp_path, params, message):
    err = first_cell_error(NAME, tmp_path, **params)
    assert isinstance(err, ValueError) and message in str(err), repr(err)
