"""L-lag coupling bounds (Biswas, Jacob & Vanetti 2019) against exact answers on enumerable models.

Truths: the exact d_TV(π_t, π) from the enumerated Glauber kernel (`scan_order.laws_over_time`), and the exact
expected bound E[max(0, ⌈(τ_L − L − t)/L⌉)] from the enumerated coupled pair chain (`exact_lag_bound`)."""
import math
import warnings

import numpy as np
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.samplers.lag_coupling import LagCoupling, exact_lag_bound, lag_coupling, lag_terms, tv_bound
from glauber_mlm.samplers.metropolis import pseudo_log_likelihood
from glauber_mlm.exact.scan_order import all_states, laws_over_time, neighbours, site_conditionals

N, Q = 4, 2
RUNS, BUDGET = 3000, 3000


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def ising():
    return exact.potts_chain(N, Q, coupling=1.2)


def point_mass(q: int, n: int, index: int = 0) -> np.ndarray:
    law = np.zeros(q**n)
    law[index] = 1.0
    return law


@pytest.fixture(scope="module")
def runs(ising):
    """Monte Carlo L-lag runs from the all-zero state (π_0 a point mass, so X_0 = Y_0 = 0), L = 1 and 8."""
    x0 = torch.zeros(RUNS, N, dtype=torch.int64)
    return {L: lag_coupling(ising, x0, x0.clone(), L, BUDGET, seed=100 * L) for L in (1, 8)}


# ------------------------------------------------------------------------------------------------ the formula
def reference_bound(meeting_times, L, t) -> float:
    """The estimator written out: mean over runs of max(0, ceil((τ_L − L − t)/L)), with exact fractions."""
    from fractions import Fraction
    return float(sum(max(0, math.ceil(Fraction(int(tau) - L - t, L))) for tau in meeting_times) / len(meeting_times))


@pytest.mark.parametrize("L", [1, 3, 7])
def test_formula_matches_reference_on_planted_times(L):
    rng = np.random.default_rng(L)
    taus = L + rng.geometric(0.05, size=257) - 1  # τ_L ≥ L, including τ_L = L (met at the lag)
    result = LagCoupling(taus, np.ones(taus.size, bool), L, 10_000, 0)
    grid = np.array([0, 1, 2, 5, 13, 40, 99, 500])
    got = tv_bound(result, grid)
    assert got.bound == pytest.approx([reference_bound(taus, L, t) for t in grid], abs=1e-12)
    # hand-checked values: one run with τ_L = L + 10: ⌈(10 − t)/L⌉⁺
    assert lag_terms([L + 10], L, [0, 10, 11])[0].tolist() == [math.ceil(10 / L), 0, 0]
    se = np.array([np.std([max(0, math.ceil((int(tau) - L - t) / L)) for tau in taus], ddof=1) for t in grid])
    assert got.high - got.bound == pytest.approx(1.959964 * se / math.sqrt(taus.size), rel=1e-5)
    assert (got.contributing == (lag_terms(taus, L, grid) > 0).sum(0)).all()


def test_steps_below_reads_the_upper_end():
    taus = np.array([5] * 900 + [30] * 100)  # L = 5: terms ⌈(τ − 5 − t)/5⌉⁺
    result = tv_bound(LagCoupling(taus, np.ones(1000, bool), 5, 100, 0), np.arange(40))
    # only the τ = 30 runs contribute, ⌈(25 − t)/5⌉ each: at t = 15 the mean is 0.2, se 0.6/√1000, upper end 0.237;
    # at t = 14 it is 0.3
    assert result.steps_below(0.25) == 15
    assert result.steps_below(0.01) == 25  # from t = 25 every term is 0
    assert math.isnan(result.steps_below(0.001))  # 1000 runs cannot resolve 0.001


# ------------------------------------------------------------------------------------------------ the theorem
@pytest.mark.parametrize("L", [1, 2, 8, 32])
def test_exact_bound_dominates_exact_tv(ising, L):
    """The theorem on enumeration: the exact expected bound ≥ the exact TV at every t (random scan)."""
    out = exact_lag_bound(ising, point_mass(Q, N), L, 150)
    assert (out["bound"] >= out["tv"] - 1e-12).all()
    assert out["tv"][0] == pytest.approx(1 - ising.joint()[1][0].item())


def test_exact_bound_on_incompatible_and_systematic():
    """No joint law: π is the enumerated stationary law; systematic scan with L = n compares phase by phase."""
    model = exact.incompatible_pairwise(3, 3, scale=1.5, seed=2)
    for scan, L in (("random", 1), ("random", 5), ("systematic", 3), ("systematic", 6)):
        out = exact_lag_bound(model, point_mass(3, 3), L, 60, scan=scan)
        assert (out["bound"] >= out["tv"] - 1e-12).all(), (scan, L)
        assert out["tv"][0] > 0.5


def test_bound_tightens_as_the_lag_grows(ising, runs):
    exact_bounds = {L: exact_lag_bound(ising, point_mass(Q, N), L, 120)["bound"] for L in (1, 8, 32)}
    # not a theorem at every t: far out all lags share the same geometric tail, equal to ~1e-6 relative
    assert (exact_bounds[8] <= exact_bounds[1] * (1 + 1e-4)).all()
    assert (exact_bounds[32] <= exact_bounds[8] * (1 + 1e-4)).all()
    assert (exact_bounds[32][:8] < exact_bounds[1][:8] - 0.03).all()
    assert exact_bounds[32][0] < exact_bounds[1][0] - 0.3
    # Monte Carlo: the L = 8 estimate's upper end lies below the exact L = 1 bound where the bound is informative,
    # and its standard error is less than half L = 1's (small lags give heavy-tailed terms, Biswas et al. §3)
    grid = np.array([0, 2, 4])
    lo, hi = (tv_bound(runs[L], grid) for L in (1, 8))
    assert (hi.high < exact_bounds[1][grid]).all()
    assert (hi.high - hi.bound < (lo.high - lo.bound) / 2).all()


# ------------------------------------------------------------------------------------------------ Monte Carlo
@pytest.mark.parametrize("L", [1, 8])
def test_monte_carlo_bound_covers_exact_tv(ising, runs, L):
    """At every t where the exact TV is ≥ 0.02, the estimate's upper end is ≥ the exact TV; and the estimate is
    unbiased: within 4.5 standard errors of the exact expected bound wherever ≥ 50 runs contribute."""
    grid = np.arange(0, 120, 3)
    out = exact_lag_bound(ising, point_mass(Q, N), L, 120)
    est = tv_bound(runs[L], grid)
    assert not np.isnan(est.bound).any() and est.complete
    tv, truth = out["tv"][grid], out["bound"][grid]
    tested = tv >= 0.02
    assert tested.sum() >= 8
    assert (est.high[tested] >= tv[tested]).all(), np.c_[grid, tv, est.bound, est.high][tested]
    se = (est.high - est.bound) / 1.959964
    resolved = est.contributing >= 50
    assert resolved.sum() >= 5
    assert (np.abs(est.bound - truth)[resolved] <= 4.5 * se[resolved]).all(), np.c_[grid, truth, est.bound, se]


def test_mh_sampler_on_a_compatible_model_gives_the_glauber_bound(ising):
    """Coupled MH with the exact log-joint accepts every proposal on a compatible model: it is coupled Glauber, so
    its estimate estimates `exact_lag_bound`'s."""
    x0 = torch.zeros(1500, N, dtype=torch.int64)
    res = lag_coupling(ising, x0, x0.clone(), 4, BUDGET, seed=9, sampler="mh", energy="joint")
    grid = np.array([0, 4, 10, 20])
    est, truth = tv_bound(res, grid), exact_lag_bound(ising, point_mass(Q, N), 4, 21)["bound"][grid]
    se = (est.high - est.bound) / 1.959964
    assert (np.abs(est.bound - truth) <= 4.5 * se).all(), (est.bound, truth, se)
    assert res.forward_rows > 0


def mh_kernel_single_site(model, log_target: np.ndarray, tau: float) -> np.ndarray:
    """Exact one-site MH kernel, random scan: propose v ~ q_i^τ(·|x_{−i}), accept with
    min(1, π(x') q_i(x_i|x'_{−i}) / (π(x) q_i(v|x_{−i}))) (x and x' share x_{−i}, so one conditional serves both)."""
    n, q = model.n, model.vocab_size
    S = q**n
    states = all_states(n, q).numpy()
    K = np.zeros((S, S))
    for i in range(n):
        p, to = site_conditionals(model, i, tau), neighbours(n, q, i)
        own = p[np.arange(S), states[:, i]]
        for v in range(q):
            accept = np.minimum(1.0, np.exp(log_target[to[:, v]] - log_target) * own / p[:, v])
            K[np.arange(S), to[:, v]] += p[:, v] * accept / n
    K[np.arange(S), np.arange(S)] += 1 - K.sum(1)
    return K


def test_mh_bound_covers_the_exact_tv_of_mh_on_an_incompatible_model():
    """Coupled MH towards π ∝ exp(PLL/τ), where MH is not Glauber: the bound's upper end is ≥ the exact TV of the MH
    chain (kernel by enumeration) at every t (coupled MH meets slowly here: the bound is valid and loose)."""
    model = exact.incompatible_pairwise(3, 3, scale=1.5, seed=2)
    log_target = pseudo_log_likelihood(model, all_states(3, 3)).numpy()
    pi = np.exp(log_target - log_target.max())
    pi /= pi.sum()
    K = mh_kernel_single_site(model, log_target, 1.0)
    assert np.abs(pi @ K - pi).sum() < 1e-6  # the enumerated kernel leaves the PLL target invariant
    laws = [point_mass(3, 3)]
    for _ in range(80):
        laws.append(laws[-1] @ K)
    tv = 0.5 * np.abs(np.array(laws) - pi).sum(1)
    x0 = torch.zeros(2000, 3, dtype=torch.int64)
    res = lag_coupling(model, x0, x0.clone(), 8, BUDGET, seed=3, sampler="mh", energy="pll")
    grid = np.arange(0, 81, 8)
    est = tv_bound(res, grid)
    assert est.complete and (est.bound >= tv[grid]).all() and (est.high >= tv[grid]).all()


def test_random_initial_law(ising):
    """π_0 uniform: X_0, Y_0 independent uniform states; the estimate covers the exact TV from that start."""
    g = torch.Generator().manual_seed(5)
    x0, y0 = (torch.randint(0, Q, (2000, N), generator=g) for _ in range(2))
    res = lag_coupling(ising, x0, y0, 4, BUDGET, seed=1)
    out = exact_lag_bound(ising, np.full(Q**N, 1 / Q**N), 4, 40)
    grid = np.arange(0, 40, 4)
    est = tv_bound(res, grid)
    tested = out["tv"][grid] >= 0.02
    assert tested.any() and (est.high[tested] >= out["tv"][grid][tested]).all()


def test_a_run_depends_on_its_seed_only(ising):
    """Exact models: a pair run alone meets when it does in the batch (lag phase and coupled phase both seeded)."""
    g = torch.Generator().manual_seed(0)
    x0, y0 = (torch.randint(0, Q, (40, N), generator=g) for _ in range(2))
    full = lag_coupling(ising, x0, y0, 3, 500, seed=list(range(40)))
    part = lag_coupling(ising, x0[7:9], y0[7:9], 3, 500, seed=[7, 8])
    assert (full.meeting_times[7:9] == part.meeting_times).all()
    assert (full.meeting_times >= 3).all()


def test_laws_over_time_match_the_closed_form_limit(ising):
    laws = laws_over_time(ising, point_mass(Q, N), 400)
    assert np.abs(laws[-1] - ising.joint()[1].numpy()).sum() < 1e-6


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_input_is_refused_with_the_fix(ising):
    x0 = torch.zeros(4, N, dtype=torch.int64)
    with pytest.raises(ValueError, match="lag must be an integer ≥ 1"):
        lag_coupling(ising, x0, x0, 0, 10)
    with pytest.raises(ValueError, match="multiple of n"):
        lag_coupling(ising, x0, x0, 3, 10, scan="systematic")
    with pytest.raises(ValueError, match="applies to sampler='mh' only"):
        lag_coupling(ising, x0, x0, 3, 10, block=2)
    with pytest.raises(ValueError, match="sampler must be one of"):
        lag_coupling(ising, x0, x0, 3, 10, sampler="gibbs")
    with pytest.raises(ValueError, match="one shape"):
        lag_coupling(ising, x0, x0[:2], 3, 10)
    with pytest.raises(ValueError, match="integer steps"):
        tv_bound(LagCoupling(np.array([3, 4]), np.ones(2, bool), 1, 10, 0), t=[-1, 2])
    censored = LagCoupling(np.array([3, 11]), np.array([True, False]), 1, 10, 0)
    with pytest.warns(UserWarning, match="raise the budget"):
        b = tv_bound(censored, [0, 1])
    assert not b.complete and math.isnan(b.steps_below(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tv_bound(LagCoupling(np.array([3, 11]), np.array([True, True]), 1, 10, 0), [0])
