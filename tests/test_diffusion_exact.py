"""Exact twins of the masked-diffusion samplers against laws computed by hand and known joints."""
import itertools

import numpy as np
import pytest
import torch

from glauber_mlm import diffusion as d
from glauber_mlm import exact
from glauber_mlm.diffusion.partial_table import PartialTable, partial_index
from glauber_mlm.exact.scan_order import tv

pytestmark = pytest.mark.usefixtures("one_thread")


def joint_table(n, q, seed, std=2.0):
    model = exact.compatible_pairwise(n, q, logit_std=std, seed=seed)
    states, pi = model.joint()
    return d.partial_table(d.JointDenoiser(states, pi), n, q), pi.numpy()


def hand_table(seed=3):
    """Two sites, two values each, with arbitrary (incompatible) conditionals at every partial state."""
    g = torch.Generator().manual_seed(seed)
    return PartialTable(2.0 * torch.randn(9, 2, 2, generator=g, dtype=torch.float64))


def designed_table():
    """Two sites, three values: at the empty state p1 = (0.5, 0.25, 0.25), p2 = (0.48, 0.48, 0.04), so drawing token
    0 at both, site 1 is the more confident at τ = 1 (0.5 > 0.48) and site 2 at τ = 2 (0.414 < 0.437); the other
    partial states' logits are arbitrary."""
    g = torch.Generator().manual_seed(11)
    table = torch.randn(16, 2, 3, generator=g, dtype=torch.float64)
    table[0] = torch.tensor([[0.5, 0.25, 0.25], [0.48, 0.48, 0.04]], dtype=torch.float64).log()
    return PartialTable(table)


def conditionals(P, tau=1.0):
    """p1, p2 (empty state), p1|y2 ([y2, y1]), p2|y1 ([y1, y2]) read by hand from the table."""
    lp = P.log_probs(tau).exp().numpy()
    k = P.k
    at = lambda z: lp[int(partial_index(torch.tensor(z), k))]  # noqa: E731
    p1, p2 = at([-1, -1])[0], at([-1, -1])[1]
    p1_given = np.array([at([-1, b])[0] for b in range(k)])
    p2_given = np.array([at([a, -1])[1] for a in range(k)])
    return p1, p2, p1_given, p2_given


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
def test_mdlm_on_a_known_joint_is_the_joint_but_for_simultaneous_unmasking(steps):
    """Two sites unmask in one step with probability 1/T and then draw from the marginals' product:
    law_T = (1/T) p1⊗p2 + (1 − 1/T) π."""
    P, pi = joint_table(2, 3, seed=1)
    p1, p2 = pi.reshape(3, 3).sum(1), pi.reshape(3, 3).sum(0)
    expected = np.outer(p1, p2).ravel() / steps + (1 - 1 / steps) * pi
    assert np.abs(d.plan_law(P, d.mdlm(steps)) - expected).max() < 1e-12


@pytest.mark.parametrize("n", [2, 3])
def test_one_commit_per_step_and_the_reference_laws_recover_a_known_joint(n):
    P, pi = joint_table(n, 2, seed=n)
    for law in (d.plan_law(P, d.llada(n, n, "random")), d.any_order_law(P), d.chain_rule_law(P, range(n)),
                d.chain_rule_law(P, reversed(range(n))), d.glauber_law(P)):
        assert np.abs(law - pi).max() < 1e-10
    # the PLL field is another law even for compatible conditionals, and MDLM approaches π as T grows
    assert tv(d.pll_law(P), pi) > 1e-3
    gaps = [tv(d.plan_law(P, d.mdlm(T)), pi) for T in (2, 4, 8, 16, 32)]
    assert all(a > b for a, b in zip(gaps, gaps[1:])) and gaps[-1] < 0.1 * gaps[0]


def test_exact_laws_match_hand_computed_laws_on_an_incompatible_two_site_model():
    P = hand_table()
    tau = 0.8
    p1, p2, p1_given, p2_given = conditionals(P, tau)
    l2r = np.array([p1[a] * p2_given[a, b] for a, b in itertools.product(range(2), repeat=2)])
    r2l = np.array([p2[b] * p1_given[b, a] for a, b in itertools.product(range(2), repeat=2)])
    assert np.abs(d.chain_rule_law(P, [0, 1], tau) - l2r).max() < 1e-12
    assert np.abs(d.chain_rule_law(P, [1, 0], tau) - r2l).max() < 1e-12
    assert tv(l2r, r2l) > 0.01  # incompatible: the two orders disagree
    assert np.abs(d.any_order_law(P, tau) - (l2r + r2l) / 2).max() < 1e-12
    product = np.outer(p1, p2).ravel()
    for T in (1, 2, 4):
        assert np.abs(d.plan_law(P, d.mdlm(T), tau) - (product / T + (1 - 1 / T) * (l2r + r2l) / 2)).max() < 1e-12
    pll = np.array([p1_given[b, a] * p2_given[a, b] for a, b in itertools.product(range(2), repeat=2)])
    assert np.abs(d.pll_law(P, tau) - pll / pll.sum()).max() < 1e-12
    # random-scan Glauber by hand: a 4 × 4 kernel, its stationary law by power iteration
    K = np.zeros((4, 4))
    for a, b in itertools.product(range(2), repeat=2):
        for v in range(2):
            K[2 * a + b, 2 * v + b] += p1_given[b, v] / 2
            K[2 * a + b, 2 * a + v] += p2_given[a, v] / 2
    pi_g = np.linalg.matrix_power(K, 4096)[0]
    assert np.abs(d.glauber_law(P, tau) - pi_g).max() < 1e-10
    assert np.abs(d.remask_kernel(P, 1, tau) - K).max() < 1e-12


@pytest.mark.parametrize("tau", [1.0, 2.0])
@pytest.mark.parametrize("confidence", ["low_confidence", "tempered"])
def test_confidence_remasking_matches_the_hand_law(confidence, tau):
    """T = 2 on two sites: draw d1 ~ p1, d2 ~ p2; commit the site whose drawn token is more confident (site 1 on a
    tie), then the other from its conditional."""
    P = designed_table()
    k = P.k
    p1, p2, p1_given, p2_given = conditionals(P, tau)
    c1, c2 = (conditionals(P, 1.0)[:2] if confidence == "low_confidence" else (p1, p2))
    law = np.zeros(k * k)
    for d1, d2 in itertools.product(range(k), repeat=2):
        w = p1[d1] * p2[d2]
        if c1[d1] >= c2[d2]:
            law[k * d1 + np.arange(k)] += w * p2_given[d1]
        else:
            law[k * np.arange(k) + d2] += w * p1_given[d2]
    assert np.abs(d.plan_law(P, d.llada(2, 2, confidence), tau) - law).max() < 1e-12


def test_untempered_and_tempered_confidence_differ_away_from_tau_one():
    """ML-GSAI/LLaDA#37: ranking by the untempered p^1 or the tempered p^τ of the drawn token is one rule at τ = 1
    and two at τ = 2 on the designed table, where the ranking of (token 0, token 0) flips."""
    P = designed_table()
    low, tempered = (d.plan_law(P, d.llada(2, 2, c), 2.0) for c in ("low_confidence", "tempered"))
    same = [d.plan_law(P, d.llada(2, 2, c), 1.0) for c in ("low_confidence", "tempered")]
    assert tv(low, tempered) > 1e-3
    assert np.abs(same[0] - same[1]).max() == 0.0


def test_remdm_kernels_are_stochastic_and_the_product_step_matches_its_definition():
    P = hand_table(seed=2)
    rates = d.remdm(6, "cap", eta=0.3)
    assert any(step.rates.remask > 0 for step in rates)
    K = d.product_kernel(P, 0.4, 0.3, 1.5)
    assert np.abs(K.sum(1) - 1).max() < 1e-12
    # from z = (MASK, 1): site 1 stays masked w.p. 0.6 or unmasks to c w.p. 0.4 p1(c | z); site 2 remasks w.p. 0.3
    lp = P.log_probs(1.5).exp().numpy()[int(partial_index(torch.tensor([-1, 1]), 2)), 0]
    row = K[int(partial_index(torch.tensor([-1, 1]), 2))]
    for a, b in itertools.product(range(-1, 2), repeat=2):
        first = 0.6 if a < 0 else 0.4 * lp[a]
        second = 0.3 if b < 0 else (0.7 if b == 1 else 0.0)
        assert abs(row[int(partial_index(torch.tensor([a, b]), 2))] - first * second) < 1e-12
    # the sparse propagation of `plan_law` is the dense kernel's product, from any law on the partial states
    law = np.random.default_rng(0).dirichlet(np.ones(9))
    assert np.abs(d.exact_laws.product_step_law(P, law, 0.4, 0.3, P.log_probs(1.5).numpy()) - law @ K).max() < 1e-14
    for schedule in ("cap", "rescale", "loop"):
        law = d.plan_law(P, d.remdm(16, schedule, eta=0.05))
        assert abs(law.sum() - 1) < 1e-12
    assert np.abs(d.loop_phase_kernel(P, 0.9, 0.02).sum(1) - 1).max() < 1e-12
    with pytest.raises(ValueError, match="σ_max"):
        d.loop_phase_kernel(P, 0.9, 0.5)


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="steps ≤ n"):
        d.llada(3, 4)
    with pytest.raises(ValueError, match="schedule must be one of"):
        d.remdm(4, "loops")
    with pytest.raises(ValueError, match="t_off < t_on"):
        d.remdm(4, "loop", t_on=0.05, t_off=0.5)
    with pytest.raises(ValueError, match="confidence must be one of"):
        d.llada(3, 3, "gumbel")
