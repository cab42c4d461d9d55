"""Notebook 00 (calibration on exact models) and the `calibration` module it uses."""
import json

import numpy as np
import pytest
import torch

import glauber_mlm as gm
from glauber_mlm import exact
from glauber_mlm.exact import calibration
from glauber_mlm.stats import tv_null_test
from notebook_runner import read_table


def test_state_index_follows_the_joint_order():
    model = exact.potts_chain(3, q=3, coupling=0.5)
    states, _ = model.joint()
    assert calibration.state_index(states, 3).tolist() == list(range(27))


def test_iid_floor_shrinks_like_one_over_root_n():
    law = np.full(16, 1 / 16)
    small, big = calibration.iid_tv(law, 400), calibration.iid_tv(law, 6400)
    assert small / big == pytest.approx(4.0, rel=0.15)


def test_glauber_reaches_the_exact_law_and_not_a_wrong_one():
    potts = exact.potts_chain(3, q=3, coupling=1.0, field=torch.tensor([0.5, 0.0, 0.0]))
    _, law = potts.joint(1.0)
    _, wrong = potts.joint(2.0)
    init = torch.randint(3, (64, 3), generator=torch.Generator().manual_seed(0))
    traj = gm.glauber(potts, init, 3 * 200, 1.0, seed=5, record_every=3)
    counts = calibration.chain_counts(traj.states[101:], 3)
    right, other = tv_null_test(counts, law.numpy(), n_sim=500), tv_null_test(counts, wrong.numpy(), n_sim=500)
    assert right["p_value"] > 0.05 and right["tv"] < 3 * calibration.iid_tv(law.numpy(), right["effective_size"])
    assert other["p_value"] < 0.01 and other["tv"] > 5 * right["tv"]


@pytest.fixture(scope="module")
def smoke_output(tmp_path_factory):
    from notebook_runner import execute

    return execute("00_exact_models", tmp_path_factory.mktemp("nb00"))


def test_smoke_tables(smoke_output):
    out = smoke_output
    law = read_table(out, "stationary_law")
    assert list(law.columns) == ["scan", "states", "chains", "samples", "tv", "null_low", "null_median", "null_high",
                                 "p_value", "effective_samples", "iid_floor", "tv_to_wrong_law", "p_value_wrong_law"]
    assert set(law.scan) == {"random", "systematic"}
    assert (law.tv < 2.5 * law.iid_floor).all() and (law.tv < 0.15).all()
    # a distance to an exact law is tested against its null, not bootstrapped: the sampler passes, the wrong law fails
    assert ((law.null_low <= law.null_median) & (law.null_median <= law.null_high)).all()
    assert (law.p_value > 0.001).all() and (law.p_value_wrong_law < 0.01).all()
    assert (law.tv_to_wrong_law > law.tv).all() and (law.effective_samples >= 1).all()
    conv = read_table(out, "stationary_law_convergence")
    assert not {"ci_low", "ci_high"} & set(conv.columns) and set(conv.scan) == {"random", "systematic"}

    coupling = read_table(out, "ising_coupling")
    assert {"regime", "temperature", "length", "met_fraction", "median_time", "ci_low", "ci_high", "per_nlogn"} <= set(coupling.columns)
    assert (coupling.met_fraction == 1).all() and (coupling.ci_low <= coupling.median_time).all()
    fits = read_table(out, "ising_scaling_fit")
    r2 = fits.set_index("law").r2_log
    # at the smoke design (10 pairs, n ≤ 12) the medians cannot order n log n and n² (their local exponents over
    # n = 4…12 are 1.5 and 2, and which of the two R² is larger turns on the seeds); n is told apart
    assert r2["n log n"] > r2["n"]

    rect = read_table(out, "rectangle_calibration").set_index("model")
    compat = rect[rect.closed_form == "ρ = 0"]
    assert len(compat) == 3 and (compat.max_abs_error < 1e-4).all() and (compat.fraction_above_tol == 0).all()
    # one rule (rectangle.noise_tolerance): 10 × the reference's noise for exact models; the MLM's adds its forward's
    ref = rect.loc["symmetric pairwise (compatible, reference)"]
    assert np.allclose(compat.tolerance, 10 * ref.max_abs_error)
    inc = rect.loc["random pairwise (incompatible)"]
    assert inc.max_abs_error < 1e-4 and inc.fraction_above_tol == 1 and inc.closed_form == "−Δ²(Wᵢⱼ − Wⱼᵢᵀ)"
    mlm = rect[rect.index.str.startswith("MLM")].iloc[0]
    assert mlm.median_abs_rho > 100 * mlm.tolerance and mlm.tolerance >= ref.tolerance

    infl = read_table(out, "influence_calibration")
    assert not infl.quantity.str.contains("_").any()  # unicode, never raw subscripts
    ising = infl[infl.truth_source == "closed form"]
    assert (ising.abs_error < 1e-4).all()
    total = ising[ising.quantity == "total influence"]
    assert np.allclose(total.measured, np.tanh(1.0 / total.temperature), atol=1e-4)
    bound = infl[infl.truth_source != "closed form"]
    assert (bound.measured <= bound.truth + 1e-6).all()

    checks = read_table(out, "checks").set_index("check")
    decided = checks[checks.outcome != "inconclusive"]
    says_pass = decided.rule_says == "pass"  # issue 36: a pass is charged its false-pass bound, a fail its false-fail
    assert (decided.outcome == decided.rule_says).all()
    limit = np.where(says_pass, 0.10, 0.20)
    assert (decided.false_pass_upper.where(says_pass, decided.false_fail_upper) <= limit).all()
    # the exact identities are calibrated against a planted wrong closed form / J: no null passes, so they decide once
    # the null's replicates bound the size (0 of n: 1 − 0.05^(1/n) ≤ 0.10 from n = 29)
    for name in ("the incompatible toy matches its closed form within the tolerance",
                 "the measured Ising influence equals tanh(J/τ)/2 and tanh(J/τ) to within 1e-05"):
        row = checks.loc[name]
        assert row.rule_says == "pass" and row["size"] == 0
        assert row.outcome == ("pass" if row.null_replicates >= 29 else "inconclusive")
    assert checks.filter(like="slow-down", axis=0).replicates.iloc[0] == 30  # every core check: 30 replicates at least
    # notebook 02's growth rule, judged by its rate over independent Ising runs (smoke: 10), with exact intervals
    rate = read_table(out, "growth_rule_rate")
    assert list(rate.planted) == ["Ising chain (n log n)", "the same runs replanted as n^1.5"]
    assert (rate.runs == 10).all() and (rate.lengths == "8–12–16").all() and (rate.pairs == 8).all()
    assert ((rate.ci_low <= rate.rate) & (rate.rate <= rate.ci_high)).all()
    assert np.allclose(rate.rate, rate.passes / rate.runs)
    growth = checks.filter(like="notebook 02's growth rule", axis=0).iloc[0]
    assert growth.replicates == 10 and growth.power == rate.rate[0] and growth["size"] == rate.rate[1]

    prov = json.loads((out / "provenance.json").read_text())
    assert prov["profile"] == "smoke"


def test_bad_parameter_stops_in_the_first_cell(tmp_path):
    from notebook_runner import execute

    from glauber_mlm.book import NotebookFailed

    with pytest.raises(NotebookFailed, match=r"first cell after the parameters.*lengths"):
        execute("00_exact_models", tmp_path, lengths=[8])
