"""Metropolis–Hastings with MLM proposals against exact answers: transition matrices built by enumeration."""
import itertools

import pytest
import torch
from scipy.stats import chi2

from glauber_mlm import acceptance_counts, coupled_metropolis, exact, glauber, load_mlm, metropolis, mh_coupling_times
from glauber_mlm.book.plan import CountingModel
from glauber_mlm.conditionals import log_conditionals
from glauber_mlm.samplers.metropolis import choose_block, pseudo_log_likelihood
from glauber_mlm.samplers.sampling import choose_sites

N, Q = 3, 3
STATES = torch.tensor(list(itertools.product(range(Q), repeat=N)))
BASE = Q ** torch.arange(N - 1, -1, -1)


def index(states: torch.Tensor) -> torch.Tensor:
    return (states * BASE).sum(-1)


@pytest.fixture(scope="module")
def model():
    return exact.incompatible_pairwise(N, Q, scale=1.0, seed=3)


def pll_law(model, tau: float) -> torch.Tensor:
    """π_PLL^τ(x) ∝ exp(PLL(x)/τ) over all q^n states, from the module's PLL."""
    return torch.softmax(pseudo_log_likelihood(model, STATES) / tau, 0)


def mh_kernel(model, tau: float, orders: list[tuple[int, ...]], log_target: torch.Tensor | None) -> torch.Tensor:
    """Exact transition matrix of one MH step, site orders uniform over `orders`, by enumerating every proposal path.

    A path from x visits sites s_1, …, s_k, drawing each token from q_{s_m}^τ given the path so far; its reverse
    (order reversed, from x') has the same contexts. `log_target` None: every proposal accepted (Glauber)."""
    P = torch.zeros(len(STATES), len(STATES), dtype=torch.float64)
    for order in orders:
        z, origin = STATES.clone(), torch.arange(len(STATES))
        log_fwd = log_rev = torch.zeros(len(STATES), dtype=torch.float64)
        for site in order:
            M = z.shape[0]
            log_q = log_conditionals(model, z, torch.full((M,), site), torch.full((M,), tau)).double()
            log_fwd = log_fwd.repeat_interleave(Q) + log_q.flatten()
            log_rev = log_rev.repeat_interleave(Q) + log_q.gather(1, z[:, site : site + 1]).repeat_interleave(Q)
            z, origin = z.repeat_interleave(Q, 0), origin.repeat_interleave(Q)
            z[:, site] = torch.arange(Q).repeat(M)
        end = index(z)
        log_alpha = 0.0 if log_target is None else log_target[end] - log_target[origin] + log_rev - log_fwd
        accept = torch.exp(torch.as_tensor(log_alpha).clamp_max(0))
        P.index_put_((origin, end), log_fwd.exp() * accept / len(orders), accumulate=True)
    P[torch.arange(len(STATES)), torch.arange(len(STATES))] += 1 - P.sum(1)
    return P


def chi_square_ok(states: torch.Tensor, law: torch.Tensor, level: float = 1e-4) -> bool:
    """Chi-square fit of sampled states to `law` (expected counts < 5 pooled); zero-law cells must stay empty."""
    counts = torch.bincount(index(states), minlength=len(law)).double()
    if counts[law == 0].sum() > 0:
        return False
    expected = law * counts.sum()
    small = (expected < 5) & (law > 0)
    obs = torch.cat([counts[expected >= 5], counts[small].sum().unsqueeze(0)])
    exp_ = torch.cat([expected[expected >= 5], expected[small].sum().unsqueeze(0)])
    keep = exp_ > 0
    stat = float(((obs[keep] - exp_[keep]) ** 2 / exp_[keep]).sum())
    return stat < chi2.ppf(1 - level, df=int(keep.sum()) - 1)


# ---------------------------------------------------------------------------------------- exact log-joint energy
@pytest.mark.parametrize("block", [1, 2, 3])
@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_compatible_model_accepts_every_proposal(block, tau):
    """On a compatible model with E = −log π, q(x'|x)/q(x|x') = π(x')^{1/τ}/π(x)^{1/τ}: α = 1, any block."""
    model = exact.compatible_pairwise(5, 3, logit_std=2.0, seed=1)
    init = torch.randint(0, 3, (40, 5), generator=torch.Generator().manual_seed(0))
    traj = metropolis(model, init, 60, temperature=tau, seed=11, energy="joint", block=block)
    assert traj.accepted.all()
    assert float(traj.accept_prob.min()) > 1 - 1e-5
    assert traj.forward_rows == 40 * 60 * block  # a log-joint energy costs no forward
    again = metropolis(model, init, 60, temperature=tau, seed=11, energy=lambda s: -model.energy(s), block=block)
    assert torch.equal(traj.states, again.states)


def test_block_one_with_exact_energy_is_glauber():
    """With k = 1 the site and proposal uniforms are Glauber's: every proposal accepted gives Glauber's path."""
    model = exact.potts_chain(6, q=3, coupling=0.7)
    init = torch.zeros(10, 6, dtype=torch.long)
    for scan in ("random", "systematic"):
        mh = metropolis(model, init, 80, temperature=0.8, seed=5, energy="joint", scan=scan)
        gl = glauber(model, init, 80, temperature=0.8, seed=5, scan=scan)
        assert torch.equal(mh.states, gl.states) and torch.equal(mh.changed, gl.changed)
        assert torch.equal(mh.sites.long(), gl.sites.long())


def test_blocks_are_distinct_sites_and_block_one_matches_glauber_sites():
    seeds = torch.arange(500)
    for scan in ("random", "systematic"):
        assert torch.equal(choose_block(seeds, 7, 9, 1, scan)[:, 0], choose_sites(seeds, 7, 9, scan))
    sites = choose_block(seeds, 3, 5, 4, "random")
    assert all(len(set(row)) == 4 for row in sites.tolist())
    window = choose_block(seeds, 3, 5, 3, "systematic")  # sites {9, 10, 11} mod 5, in a random order
    assert (window.sort(1).values == torch.tensor([0, 1, 4])).all()
    assert len({tuple(r) for r in window.tolist()}) == 6  # all 3! orders occur


# ------------------------------------------------------------------------------------ PLL target, by enumeration
def test_pll_matches_a_float64_computation(model):
    """PLL(x) = Σ_i log softmax(h_i + Σ_j W_ij(·, x_j))[x_i], from W and h in float64."""
    logits = model.h.unsqueeze(0) + torch.stack(
        [model.W[i][torch.arange(N), :, STATES].sum(1) for i in range(N)], 1)  # (S, n, q)
    ref = torch.log_softmax(logits, -1).gather(2, STATES.unsqueeze(2)).squeeze(2).sum(1)
    assert torch.allclose(pseudo_log_likelihood(model, STATES), ref, atol=1e-5)
    assert torch.equal(pseudo_log_likelihood(model, STATES, chunk=4), pseudo_log_likelihood(model, STATES))


@pytest.mark.parametrize("block", [1, 2, 3])
@pytest.mark.parametrize("tau", [1.0, 0.75])
def test_pll_target_is_stationary_for_the_exact_kernel(model, block, tau):
    """π_PLL P = π_PLL to 1e-10 (random scan, every order of k distinct sites), and Glauber's law is another one."""
    law = pll_law(model, tau)
    orders = list(itertools.permutations(range(N), block))
    P = mh_kernel(model, tau, orders, law.log())
    assert (P >= 0).all() and torch.allclose(P.sum(1), torch.ones(len(law), dtype=torch.float64))
    assert float((law @ P - law).abs().max()) < 1e-10
    gibbs = mh_kernel(model, tau, orders, None)
    assert float((law @ gibbs - law).abs().max()) > 1e-3  # the test has power: Glauber does not keep π_PLL


@pytest.mark.parametrize("block", [1, 2])
def test_systematic_scan_steps_each_keep_the_pll_target(model, block):
    """Systematic scan: each step's kernel (its window of sites in a random order) keeps π_PLL."""
    law = pll_law(model, 1.0)
    for start in range(N):
        window = [(start + j) % N for j in range(block)]
        P = mh_kernel(model, 1.0, list(itertools.permutations(window)), law.log())
        assert float((law @ P - law).abs().max()) < 1e-10


@pytest.mark.parametrize("block", [1, 2])
def test_sampled_law_matches_the_exact_kernel(model, block):
    """Many chains from one state: the law after t steps is row x0 of P^t (t = 2 transient, t = 30 ≈ π_PLL)."""
    tau, chains = 0.75, 20_000
    law = pll_law(model, tau)
    P = mh_kernel(model, tau, list(itertools.permutations(range(N), block)), law.log())
    traj = metropolis(model, torch.zeros(chains, N, dtype=torch.long), 30, temperature=tau, seed=0, block=block,
                      record_every=2)
    start = torch.zeros(len(law), dtype=torch.float64)
    start[0] = 1.0
    for t in (2, 30):
        assert chi_square_ok(traj.states[t // 2], start @ torch.linalg.matrix_power(P, t))
    assert not chi_square_ok(traj.final, torch.softmax(law.log() * 1.5, 0))  # power: a sharper law is rejected
    # the cached energy is the state's energy, and acceptance is the mean of min(1, α) up to noise
    assert torch.allclose(traj.energy[-1], -pseudo_log_likelihood(model, traj.final))
    assert abs(float(traj.accepted.double().mean() - traj.accept_prob.double().mean())) < 0.01


def test_forward_rows_are_counted(model):
    """Proposals cost k rows per chain-step, a PLL n rows per evaluated state; chunks change no number."""
    counter = CountingModel(model)
    traj = metropolis(counter, torch.zeros(30, N, dtype=torch.long), 25, seed=2, block=2, pll_rows=5)
    assert traj.forward_rows == counter.rows
    assert 30 * 25 * 2 + N * 30 < traj.forward_rows <= 30 * 25 * 2 + N * 30 * 26
    plain = metropolis(model, torch.zeros(30, N, dtype=torch.long), 25, seed=2, block=2)
    assert torch.equal(plain.states, traj.states) and torch.equal(plain.energy, traj.energy)


def test_acceptance_counts_the_tested_proposals(model):
    """Tested proposals are the ones that differ from the state: each costs one PLL (n rows) after the start's."""
    traj = metropolis(model, torch.zeros(30, N, dtype=torch.long), 40, temperature=0.7, seed=4)
    accepted, tested = acceptance_counts(traj)
    assert accepted.shape == tested.shape == (30,) and (accepted <= tested).all() and (tested <= 40).all()
    assert torch.equal(accepted, traj.changed.sum(0))
    assert torch.equal(40 - tested, (traj.accepted & ~traj.changed).sum(0))  # untested: equal to the state
    assert traj.forward_rows == 30 * 40 + N * (30 + int(tested.sum()))
    assert 0 < int(accepted.sum()) < int(tested.sum())  # an incompatible model: some proposals are rejected


# ------------------------------------------------------------------------------------------------ coupled MH
def test_coupled_marginals_are_mh_chains(model):
    """Each chain of a coupled pair has law row x0 (resp. y0) of P^t; the pair meets more than independent chains."""
    tau, pairs, t = 1.0, 20_000, 6
    law = pll_law(model, tau)
    Pt = torch.linalg.matrix_power(mh_kernel(model, tau, [(0,), (1,), (2,)], law.log()), t)
    x0, y0 = torch.zeros(pairs, N, dtype=torch.long), torch.tensor([[2, 1, 2]]).repeat(pairs, 1)
    x, y = coupled_metropolis(model, x0, y0, t, temperature=tau, seed=0)
    assert chi_square_ok(x.final, Pt[0]) and chi_square_ok(y.final, Pt[int(index(y0[0]))])
    independent = float(Pt[0] @ Pt[int(index(y0[0]))])
    assert float((x.final == y.final).all(1).double().mean()) > 2 * independent


@pytest.mark.parametrize("block", [1, 2])
def test_met_pairs_stay_met_and_times_agree(model, block):
    x0, y0 = torch.zeros(300, N, dtype=torch.long), torch.full((300, N), 2)
    x, y = coupled_metropolis(model, x0, y0, 60, seed=100, block=block)
    agree = (x.states == y.states).all(-1)  # (T + 1, pairs)
    assert (agree[1:] >= agree[:-1]).all() and agree[-1].float().mean() > 0.9
    first = torch.where(agree.any(0), agree.int().argmax(0), 60)
    res = mh_coupling_times(model, x0, y0, 60, seed=100, block=block)
    assert torch.equal(res.times, first) and torch.equal(res.met, agree[-1])
    some = mh_coupling_times(model, x0[7:9], y0[7:9], 60, seed=torch.arange(107, 109), block=block)
    assert torch.equal(some.times, first[7:9])  # a pair's time depends on its seed only
    assert res.forward_rows < 2 * 300 * (block + N) * 60  # met pairs leave the batch


def test_pairs_that_start_equal_follow_metropolis(model):
    init = torch.randint(0, Q, (20, N), generator=torch.Generator().manual_seed(4))
    x, y = coupled_metropolis(model, init, init.clone(), 40, temperature=0.75, seed=9, block=2)
    alone = metropolis(model, init, 40, temperature=0.75, seed=9, block=2)
    assert torch.equal(x.states, alone.states) and torch.equal(y.states, alone.states)
    assert torch.equal(x.accepted, alone.accepted) and x.forward_rows == alone.forward_rows
    assert mh_coupling_times(model, init, init, 5).times.eq(0).all()


def test_budget_censors(model):
    res = mh_coupling_times(model, torch.zeros(10, N, dtype=torch.long), torch.full((10, N), 2), 1, seed=0)
    assert not res.met.any() and (res.times == 1).all()  # one site per step: three sites cannot all meet in one


# --------------------------------------------------------------------------------------------------- refusals
def test_bad_inputs_are_refused(model):
    init = torch.zeros(4, N, dtype=torch.long)
    with pytest.raises(ValueError, match="energy must be"):
        metropolis(model, init, 2, energy="likelihood")
    with pytest.raises(TypeError, match="energy must be"):
        metropolis(model, init, 2, energy=3.0)
    with pytest.raises(ValueError, match="one real number per state"):
        metropolis(model, init, 2, energy=lambda s: torch.zeros(s.shape[0], 2))
    with pytest.raises(ValueError, match="non-finite"):
        metropolis(model, init, 2, energy=lambda s: torch.full((s.shape[0],), float("nan")))
    with pytest.raises(ValueError, match="block"):
        metropolis(model, init, 2, block=N + 1)
    with pytest.raises(ValueError, match="block"):
        metropolis(model, init, 2, block=0)
    with pytest.raises(TypeError, match="block"):
        metropolis(model, init, 2, block=1.0)
    with pytest.raises(ValueError, match="pll_rows"):
        metropolis(model, init, 2, pll_rows=0)
    with pytest.raises(ValueError, match="scan"):
        metropolis(model, init, 2, scan="sweep")
    with pytest.raises(ValueError, match="temperature"):
        metropolis(model, init, 2, temperature=0.0)
    with pytest.raises(ValueError, match="seeds"):
        metropolis(model, init, 2, seed=[1, 2])
    with pytest.raises(ValueError, match="one shape"):
        mh_coupling_times(model, init, init[:2], 5)
    with pytest.raises(ValueError, match="integer"):
        coupled_metropolis(model, init, init, -1)


def test_joint_energy_needs_a_log_joint(tmp_path):
    from tiny_models import save_tiny

    mlm = load_mlm(save_tiny(tmp_path / "bert"), device="cpu", dtype=torch.float32)
    states, _ = mlm.encode(["the cat sat on the mat and the dog ran fast"], 6)
    with pytest.raises(ValueError, match="log-joint"):
        metropolis(mlm, states, 2, energy="joint")
    # on a neural model the PLL is the same in one forward or in chunks of one row, up to float rounding
    assert torch.allclose(pseudo_log_likelihood(mlm, states.repeat(3, 1), chunk=1),
                          pseudo_log_likelihood(mlm, states.repeat(3, 1)), atol=1e-4)
    counter = CountingModel(mlm)
    traj = metropolis(counter, states.repeat(4, 1), 5, seed=0, block=2)
    assert traj.forward_rows == counter.rows > 4 * 5 * 2 + 6 * 4
