"""Convergence diagnostics: known answers on i.i.d. draws, stuck chains, and exact Ising chains."""
import numpy as np
import pytest
import torch

from glauber_mlm import (chain_draw, convergence, coupling_regime, diagnose, exact, glauber, hamming_between,
                         hamming_to_start)
from glauber_mlm.diagnostics import ESS_MIN, RHAT_MAX


def opposite_starts(chains: int, n: int) -> torch.Tensor:
    """Half the chains at all-0, half at all-1 (the two ground states of a ferromagnetic Ising chain)."""
    init = torch.zeros(chains, n, dtype=torch.long)
    init[chains // 2:] = 1
    return init


def test_hamming_summaries_known_answers():
    # records × chains × n: chain 0 = 000 → 100 → 110, chain 1 = 111 → 111 → 011, chain 2 = 000 → 001 → 001
    states = torch.tensor([
        [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
        [[1, 0, 0], [1, 1, 1], [0, 0, 1]],
        [[1, 1, 0], [0, 1, 1], [0, 0, 1]],
    ])
    assert hamming_to_start(states).tolist() == [[0, 1, 2], [0, 0, 1], [0, 1, 1]]
    assert hamming_to_start(states, reference=0).tolist() == [[0, 1, 2], [3, 3, 2], [0, 1, 1]]
    assert hamming_to_start(states, reference=[1, 1, 1]).tolist() == [[3, 2, 1], [0, 0, 1], [3, 2, 2]]
    # pairs (0,1), (0,2), (1,2)
    assert hamming_between(states).tolist() == [[3, 2, 2], [0, 2, 3], [3, 2, 1]]
    assert hamming_between(states, pairs=[[2, 0]]).tolist() == [[0, 2, 3]]


def test_iid_normal_draws_mix():
    """Independent N(0,1) draws: R̂ ≈ 1 and ESS ≈ chains × draws (bulk and tail)."""
    draws = np.random.default_rng(0).normal(size=(4, 1000))
    row = convergence({"x": draws}).loc["x"]
    assert abs(row.rhat - 1) < 0.01
    assert 0.85 * 4000 < row.ess_bulk < 1.15 * 4000
    assert 0.85 * 4000 < row.ess_tail < 1.15 * 4000
    assert row.mcse_mean == pytest.approx(1 / np.sqrt(4000), rel=0.15)
    assert row.status == "mixed" and row.n_stuck == 0 and row.stuck_chains == ()


def test_layout_draw_chain_is_the_transpose():
    draws = np.random.default_rng(1).normal(size=(4, 500))
    a = convergence(draws)
    b = convergence(draws.T, layout="draw_chain")
    assert np.allclose(a[["rhat", "ess_bulk", "ess_tail", "mcse_mean"]], b[["rhat", "ess_bulk", "ess_tail", "mcse_mean"]])


def test_ties_iid_integers_mix_without_nan():
    """Heavily tied i.i.d. integers (3 values): average ranks keep R̂ ≈ 1 and a finite ESS near the sample size."""
    draws = np.random.default_rng(2).integers(0, 3, size=(4, 1000))
    row = convergence(draws).iloc[0]
    assert abs(row.rhat - 1) < 0.01 and 0.8 * 4000 < row.ess_bulk < 1.2 * 4000
    assert row.status == "mixed"


def test_chains_stuck_at_different_constants_are_stuck_not_nan():
    draws = np.zeros((4, 200))
    draws[1], draws[3] = 5.0, 7.0
    row = convergence({"h": draws}).loc["h"]
    assert row.status == "stuck" and row.n_stuck == 4 and row.stuck_chains == (0, 1, 2, 3)
    assert row.rhat == np.inf  # chains disagree and none moves
    assert np.isnan(row.ess_bulk)  # not chains × draws, which ArviZ alone reports for a constant array


def test_one_frozen_chain_among_moving_ones_is_named():
    draws = np.random.default_rng(3).normal(size=(4, 500))
    draws[2] = 0.3
    row = convergence(draws).iloc[0]
    assert row.status == "stuck" and row.stuck_chains == (2,)
    assert np.isfinite(row.rhat)


def test_all_chains_at_one_constant():
    row = convergence(np.ones((3, 50))).iloc[0]
    assert row.status == "stuck" and np.isnan(row.rhat) and np.isnan(row.ess_bulk)


@pytest.mark.parametrize("values, match", [
    (np.zeros(100), "values\\[None, :\\]"),
    (np.zeros((1, 100)), "≥ 2 chains"),
    (np.zeros((100, 1)), "layout"),
    (np.zeros((2, 3, 4)), "2-D"),
    (np.array([[0.0, 1.0, np.nan, 2.0], [1.0, 2.0, 3.0, 4.0]]), "NaN"),
])
def test_bad_shapes_name_the_fix(values, match):
    with pytest.raises(ValueError, match=match):
        chain_draw(values)


def test_bad_inputs_elsewhere():
    with pytest.raises(ValueError, match="layout must be"):
        chain_draw(np.zeros((2, 10)), layout="chains")
    with pytest.raises(ValueError, match=r"\(records, chains, n\)"):
        hamming_to_start(torch.zeros(10, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="reference must be"):
        hamming_to_start(torch.zeros(10, 2, 4, dtype=torch.long), reference=[0, 1])
    with pytest.raises(ValueError, match="at least 2 chains"):
        hamming_between(torch.zeros(10, 1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="discard"):
        convergence(np.zeros((2, 10)), discard=8)


def test_ising_high_temperature_opposite_starts_mix():
    """n = 8 Ising chain at τ = 4 (J/τ = 0.25): chains from all-0 and all-1 agree, R̂ < 1.01, ESS ≥ 400."""
    n = 8
    traj = glauber(exact.potts_chain(n, q=2, coupling=1.0), opposite_starts(32, n), steps=200 * 2 * n,
                   temperature=4.0, seed=0, record_every=2 * n)
    df = diagnose(traj, discard=5)
    assert list(df.index) == ["hamming_to_start", "hamming_to_reference", "hamming_between"]
    assert df.loc["hamming_between", "chains"] == 16  # the disjoint pairs (c, c + 16)
    assert (df.rhat < RHAT_MAX).all() and (df.ess_bulk >= ESS_MIN).all(), df
    assert (df.status == "mixed").all() and (df.n_stuck == 0).all()
    # the magnetisation (Hamming to all-0) is the reference summary here
    assert convergence(hamming_to_start(traj, 0)[:, 5:]).iloc[0].rhat < RHAT_MAX


def test_ising_low_temperature_opposite_starts_not_mixed():
    """n = 16 Ising chain at τ = 1/3 (J/τ = 3): chains stay in the mode they started in, R̂ ≫ 1.01."""
    n = 16
    traj = glauber(exact.potts_chain(n, q=2, coupling=1.0), opposite_starts(8, n), steps=100 * n,
                   temperature=1 / 3, seed=0, record_every=n)
    df = diagnose(traj, discard=10)
    assert df.loc["hamming_to_reference", "rhat"] > 1.5, df
    assert (df.status == "not mixed").all() and (df.n_stuck == 0).all(), df
    assert df.loc["hamming_between", "mean"] > n / 2  # pairs (c, c + 4) started opposite and stay far apart


def test_coupling_regime_reads_the_budget():
    assert coupling_regime([40, 40, 3], [False, False, True], 40) == "slow"
    assert coupling_regime([20, 3], [True, True], 40) == "fast"  # every pair met within half the budget
    assert coupling_regime([21, 3], [True, True], 40) == "between"
    assert coupling_regime([40, 3], [False, True], 40) == "between"  # half censored is not more than half
    with pytest.raises(ValueError, match="one entry per pair"):
        coupling_regime([], [], 40)


def test_paired_difference_is_the_t_interval():
    from scipy.stats import ttest_rel

    from glauber_mlm.diagnostics import paired_difference

    high, low = np.array([0.7, 0.72, 0.69, 0.75]), np.array([0.3, 0.35, 0.33, 0.31])
    r = paired_difference(high, low)
    ci = ttest_rel(high, low).confidence_interval(0.95)
    assert r["units"] == 4 and r["above"] and r["ci_low"] < r["difference"] < r["ci_high"]
    np.testing.assert_allclose([r["ci_low"], r["ci_high"]], [ci.low, ci.high])
    assert not paired_difference(low, high)["above"]
    with pytest.raises(ValueError, match="two units"):
        paired_difference([0.5], [0.4])


def test_paired_difference_calibration_power_and_size():
    from glauber_mlm.pages.planted.mixing import paired_difference_calibration

    cal = paired_difference_calibration(12, 0.05, 0.1, replicates=400)
    assert cal.power >= 0.95 and cal.size <= 0.05, cal  # a two-sided 95 % interval: size 0.025 in theory
    assert paired_difference_calibration(4, 0.2, 0.1, replicates=400).power < 0.5  # too noisy to find it
