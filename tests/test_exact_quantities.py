"""Exact quantities against closed forms: an independent-sites model, a two-state chain, the Ising chain."""
import itertools
import math

import numpy as np
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.exact.scan_order import all_states, glauber_kernel, scan_footprint, stationary_law

pytestmark = pytest.mark.usefixtures("one_thread")


def independent(n: int = 3, q: int = 3, seed: int = 0) -> exact.PairwiseModel:
    """Sites that ignore each other: π = ⊗ p_i with p_i = softmax(h_i / τ)."""
    g = torch.Generator().manual_seed(seed)
    return exact.PairwiseModel(torch.zeros(n, n, q, q), torch.randn(n, q, generator=g, dtype=torch.float64))


def by_hand_law(model, tau: float, start, t: int) -> np.ndarray:
    """The law after t random-scan steps of independent sites from `start`: write δ_{x_i} = p_i + e_i and expand the
    product; Π_i kills e_i (it sums to 0), so the term with e_i at the sites C decays as (1 − |C|/n)^t:
    law_t = Σ_C (1 − |C|/n)^t ⊗_{i∈C} e_i ⊗_{i∉C} p_i (base-q order: np.kron)."""
    n, q = model.n, model.vocab_size
    p = [torch.softmax(model.h[i] / tau, 0).numpy() for i in range(n)]
    e = [np.eye(q)[start[i]] - p[i] for i in range(n)]
    law = np.zeros(q**n)
    for C in itertools.product((False, True), repeat=n):
        term = np.ones(1)
        for i in range(n):
            term = np.kron(term, e[i] if C[i] else p[i])
        law += (1 - sum(C) / n) ** t * term
    return law


def by_hand_distance(model, tau, start, t) -> float:
    return 0.5 * np.abs(by_hand_law(model, tau, start, t) - by_hand_law(model, tau, start, 10**6)).sum()


def two_state(p: float, q: float) -> np.ndarray:
    return np.array([[1 - p, p], [q, 1 - q]])


def test_independent_sites_gap_is_one_over_n():
    """P_R = (1/n) Σ_i (I ⊗ … ⊗ Π_i ⊗ … ⊗ I) has eigenvalues 1 − |A|/n, A ⊆ sites: gap 1/n, t_rel = n."""
    for n in (2, 3, 4):
        model = independent(n, 3, seed=n)
        gap = exact.spectral_gap(glauber_kernel(model, 0.7))
        assert gap.gap == pytest.approx(1 / n, abs=1e-6)
        assert gap.relaxation_time == pytest.approx(n, rel=1e-5)
        assert gap.reversible
    # past DENSE_EIGEN states the gap comes from ARPACK on the sparse kernel: 1,024 states, gap 1/10
    big = independent(10, 2, seed=3)
    assert exact.spectral_gap(exact.kernel(big, 0.7)).gap == pytest.approx(0.1, abs=1e-6)


def test_the_sparse_kernel_and_its_law_are_the_dense_ones():
    model = exact.incompatible_pairwise(4, 3, scale=0.9, seed=4)
    for tau in (0.5, 2.0):
        for scan in ("random", "systematic"):
            P = exact.kernel(model, tau, scan)
            assert np.allclose(P.toarray(), glauber_kernel(model, tau, scan), atol=1e-12)
            assert np.allclose(exact.stationary(P), stationary_law(glauber_kernel(model, tau, scan)), atol=1e-9)
        P = exact.kernel(model, tau)
        assert exact.mixing_time(P, 0.1) == exact.mixing_time(P.toarray(), 0.1)
        assert exact.mixing_time(P, 0.1, start=5) == exact.mixing_time(P.toarray(), 0.1, start=5)
        assert np.allclose(exact.mean_escape_time(P, [0, 1, 2]), exact.mean_escape_time(P.toarray(), [0, 1, 2]))
        assert exact.spectral_gap(P).gap == pytest.approx(exact.spectral_gap(P.toarray()).gap)
        assert not exact.spectral_gap(P).reversible


def test_two_state_chain_gap_distance_and_mixing_time():
    """λ = 1 − p − q; TV(P^t(0, ·), π) = p/(p+q)·|λ|^t; t_mix(ε) from the worst start max(p, q)/(p+q)·|λ|^t ≤ ε."""
    for p, q in ((0.1, 0.3), (0.02, 0.05), (0.7, 0.6)):
        P, lam = two_state(p, q), 1 - p - q
        gap = exact.spectral_gap(P)
        assert gap.gap == pytest.approx(1 - abs(lam), abs=1e-10) and gap.reversible
        curve = exact.distance_curve(P, 0, 50)
        assert np.allclose(curve, p / (p + q) * abs(lam) ** np.arange(51), atol=1e-12)
        for eps in (0.25, 0.1, 0.01):
            worst = next(t for t in itertools.count() if max(p, q) / (p + q) * abs(lam) ** t <= eps)
            from_one = next(t for t in itertools.count() if q / (p + q) * abs(lam) ** t <= eps)
            assert exact.mixing_time(P, eps) == worst
            assert exact.mixing_time(P, eps, start=1) == from_one
        # escape from {0}: geometric with success p
        assert exact.mean_escape_time(P, [0])[0] == pytest.approx(1 / p)
        assert exact.mean_escape_time(P, np.array([False, True]))[0] == pytest.approx(1 / q)


def test_independent_sites_distance_and_mixing_time_by_hand():
    model, tau = independent(3, 2, seed=1), 0.8
    P = glauber_kernel(model, tau)
    states = all_states(3, 2).tolist()
    for s, start in enumerate(states):
        curve = exact.distance_curve(P, s, 40)
        assert np.allclose(curve, [by_hand_distance(model, tau, start, t) for t in range(41)], atol=1e-6)
    for eps in (0.25, 0.05):
        times = [next(t for t in itertools.count() if by_hand_distance(model, tau, x, t) <= eps) for x in states]
        assert exact.mixing_time(P, eps) == max(times)
        assert exact.mixing_time(P, eps, start=2) == times[2]


def test_mean_escape_time_of_a_single_state_is_geometric():
    """From one state x the chain leaves at rate 1 − P(x, x) = 1 − (1/n) Σ_i p_i(x_i)."""
    model, tau = independent(3, 3, seed=2), 1.3
    P = glauber_kernel(model, tau)
    stay = np.mean([torch.softmax(model.h[i] / tau, 0)[0].item() for i in range(3)])
    assert exact.mean_escape_time(P, [0])[0] == pytest.approx(1 / (1 - stay), rel=1e-5)
    with pytest.raises(ValueError, match="basin must hold"):
        exact.mean_escape_time(P, np.ones(27, dtype=bool))


def test_dobrushin_matrix_of_the_ising_chain():
    """Interior α(i, i±1) = tanh(J/τ)/2, end α(0, 1) = tanh(J/2τ), others 0; total influence tanh(J/τ)."""
    J, n = 0.8, 5
    model = exact.potts_chain(n, 2, J)
    for tau in (0.5, 1.0, 3.0):
        alpha = exact.dobrushin_matrix(model, tau)
        truth = np.zeros((n, n))
        for i in range(n - 1):
            truth[i, i + 1] = truth[i + 1, i] = math.tanh(J / tau) / 2
        truth[0, 1] = truth[n - 1, n - 2] = math.tanh(J / (2 * tau))
        assert np.allclose(alpha, truth, atol=1e-6)
        assert exact.total_influence(alpha) == pytest.approx(math.tanh(J / tau), abs=1e-6)
    assert np.abs(exact.dobrushin_matrix(independent(3, 3), 1.0)).max() < 1e-7
    # the bound holds on the chain it is about: t_mix ≤ n log(n/ε) / (1 − α) where α < 1
    for tau in (1.0, 3.0):
        alpha = exact.total_influence(exact.dobrushin_matrix(model, tau))
        bound = exact.dobrushin_bound(n, alpha)
        assert bound == pytest.approx(n * math.log(4 * n) / (1 - math.tanh(J / tau)), rel=1e-5)
        assert exact.mixing_time(exact.kernel(model, tau)) <= bound
    assert exact.dobrushin_bound(n, 1.0) == math.inf


def test_rectangles_match_the_closed_form_and_vanish_on_compatible_models():
    n, q, tau = 4, 3, 0.5
    model = exact.incompatible_pairwise(n, q, scale=0.7, seed=3)
    rho = exact.rectangle_ratios(model, tau)
    assert rho.size == math.comb(n, 2) * q ** (n - 2) * math.comb(q, 2) ** 2
    pairs = [(i, j, a, a2, b, b2) for i, j in itertools.combinations(range(n), 2)
             for a, a2 in itertools.combinations(range(q), 2) for b, b2 in itertools.combinations(range(q), 2)]
    closed = exact.exact_rectangle(model, *map(list, zip(*pairs))).numpy() / tau
    result = exact.incompatibility(model, tau)
    assert result.max_abs_rho == pytest.approx(np.abs(closed).max(), abs=1e-4)
    # ρ of a pairwise model does not depend on the context: every context z gives the closed form
    per_pair = rho.reshape(math.comb(n, 2), q ** (n - 2), -1)
    assert np.allclose(per_pair, closed.reshape(math.comb(n, 2), 1, -1), atol=1e-4)
    assert result.scan_tv == pytest.approx(scan_footprint(model, tau)["sweep"])
    compatible = exact.incompatibility(exact.potts_chain(n, q, 1.1), tau)
    assert compatible.max_abs_rho < 1e-5 and compatible.scan_tv < 1e-6


def test_greedy_basin_of_an_ising_chain():
    """Field (0.1, 0), J = 1, n = 3, sweeps 0, 1, 2 from (a, b, c): x_0 ← b, x_1 ← b if b = c else 0, x_2 ← x_1,
    so 000 gathers every state with (b, c) ≠ (1, 1) and 111 the two others."""
    model = exact.potts_chain(3, 2, 1.0, field=torch.tensor([0.1, 0.0]))
    g, basin = exact.greedy_basin(model)
    states = all_states(3, 2).tolist()
    assert g == 0
    assert basin.tolist() == [not (b == 1 and c == 1) for _, b, c in states]
    g1, basin1 = exact.greedy_basin(model, start=7)
    assert g1 == 7 and basin1.sum() == 2
    ind = independent(3, 3, seed=5)
    g, basin = exact.greedy_basin(ind)
    assert basin.all() and all_states(3, 3)[g].tolist() == ind.h.argmax(1).tolist()


def test_pll_target_against_glauber_law():
    """Independent sites: PLL = log π_1, so exp(PLL/τ) is Glauber's law π_τ at every τ (TV 0). Two Ising sites:
    PLL = 2J[x_0 = x_1] − const, so P(equal) is σ(2J/τ) under the target and σ(J/τ) under Glauber."""
    for tau in (0.5, 1.0, 2.0):
        assert exact.pll_target_tv(independent(3, 3, seed=1), tau) < 1e-6
        J = 0.9
        sigma = lambda u: 1 / (1 + math.exp(-u))  # noqa: E731
        assert exact.pll_target_tv(exact.potts_chain(2, 2, J), tau) == pytest.approx(
            abs(sigma(2 * J / tau) - sigma(J / tau)), abs=1e-6)


def test_one_logit_table_serves_every_temperature():
    model = exact.incompatible_pairwise(3, 2, seed=1)
    table = exact.logit_table(model)
    for tau in (0.5, 2.0):
        assert np.allclose(exact.conditional_table(model, tau, table), exact.conditional_table(model, tau))
        assert np.allclose(exact.dobrushin_matrix(model, tau, table), exact.dobrushin_matrix(model, tau))
    law = stationary_law(glauber_kernel(model, 1.0))
    assert exact.pll_target_tv(model, 1.0, law=law, logits=table) == pytest.approx(exact.pll_target_tv(model, 1.0))


def test_refusals_name_the_fix():
    with pytest.raises(ValueError, match="stochastic"):
        exact.mixing_time(np.ones((2, 2)))
    with pytest.raises(ValueError, match="eps must lie"):
        exact.mixing_time(two_state(0.1, 0.1), 1.5)
    with pytest.raises(ValueError, match="max_steps"):
        exact.mixing_time(two_state(1e-4, 1e-4), 0.01, max_steps=100)
