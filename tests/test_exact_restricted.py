"""The restricted chain as an exact model: a Potts model restricted to all its states is itself, the MLM's restricted
logits are its own forwards, and every exact tool and sampler runs on it."""
import numpy as np
import pytest
import torch

from glauber_mlm import coupling_times, exact, glauber, metropolis
from glauber_mlm.exact.scan_order import all_states, glauber_kernel, laws_over_time, stationary_law
from glauber_mlm.samplers.lag_coupling import exact_lag_bound, lag_coupling

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("model", [exact.potts_chain(4, 3, 1.2, field=torch.tensor([0.5, 0.0, -0.3])),
                                   exact.incompatible_pairwise(3, 3, scale=0.8, seed=2)], ids=["potts", "incompatible"])
def test_restricting_to_every_state_gives_the_model_back(model):
    n, q = model.n, model.vocab_size
    context = torch.zeros(n, dtype=torch.int64)
    R = exact.restricted(model, context, torch.arange(n), torch.arange(q).repeat(n, 1))
    assert (R.n, R.vocab_size) == (n, q)
    states = all_states(n, q)
    for i in range(n):
        sites = torch.full((states.shape[0],), i)
        assert torch.equal(R.logits(states, sites), model.logits(states, sites))
    assert torch.equal(R.tokens(states), states)
    for tau in (0.7, 2.0):
        assert np.array_equal(glauber_kernel(R, tau), glauber_kernel(model, tau))
        assert np.array_equal(glauber_kernel(R, tau, "systematic"), glauber_kernel(model, tau, "systematic"))
        if model.compatible:
            assert np.abs(stationary_law(glauber_kernel(R, tau)) - model.joint(tau)[1].numpy()).sum() < 1e-6


def test_a_restriction_reads_the_model_at_the_candidates():
    """Two free sites of five, two candidates each (in a scrambled order): ℓ^R_i(v | y) = ℓ_{s_i}(C_iv | tokens(y))."""
    model = exact.incompatible_pairwise(5, 4, scale=1.0, seed=7)
    context, sites = torch.tensor([3, 1, 0, 2, 1]), torch.tensor([3, 1])
    candidates = torch.tensor([[2, 0], [3, 1]])
    R = exact.restricted(model, context, sites, candidates)
    states = all_states(2, 2)
    assert R.tokens(states).tolist() == [[3, 3, 0, 2, 1], [3, 1, 0, 2, 1], [3, 3, 0, 0, 1], [3, 1, 0, 0, 1]]
    for i in range(2):
        full = model.logits(R.tokens(states), sites[i].repeat(4))[:, candidates[i]]
        assert torch.equal(R.logits(states, torch.full((4,), i)), full)


def test_candidate_sets_are_the_top_k_with_the_site_masked():
    model = exact.incompatible_pairwise(4, 5, scale=1.0, seed=3)
    context, sites = torch.tensor([0, 4, 2, 1]), torch.tensor([0, 2])
    C = exact.candidate_sets(model, context, sites, 3)
    for row, site in zip(C, sites):
        logits = model.logits(context.unsqueeze(0), site.view(1))[0]
        assert row.tolist() == logits.topk(3).indices.tolist()


def test_every_exact_tool_and_sampler_runs_on_a_restriction():
    model = exact.incompatible_pairwise(5, 3, scale=0.8, seed=1)
    R = exact.restricted(model, torch.tensor([0, 1, 2, 0, 1]), torch.tensor([0, 2, 4]),
                         exact.candidate_sets(model, torch.tensor([0, 1, 2, 0, 1]), torch.tensor([0, 2, 4]), 2))
    init = torch.zeros(4, 3, dtype=torch.int64)
    law0 = np.eye(8)[0]
    assert laws_over_time(R, law0, 5).shape == (6, 8)
    bound = exact_lag_bound(R, law0, lag=4, steps=10)
    assert (bound["bound"] >= bound["tv"] - 1e-9).all()
    assert glauber(R, init, 20, seed=1).final.shape == (4, 3)
    met = coupling_times(R, init, torch.ones(4, 3, dtype=torch.int64), 500, seed=2)
    assert met.met.all()
    assert lag_coupling(R, init, torch.ones(4, 3, dtype=torch.int64), 4, 500, seed=3).met.all()
    assert metropolis(R, init, 20, seed=4).final.shape == (4, 3)


def test_refusals_name_the_problem():
    model = exact.potts_chain(4, 3)
    context = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(ValueError, match="repeat a token id at sites \\[1\\]"):
        exact.restricted(model, context, torch.tensor([0, 1]), torch.tensor([[0, 1], [2, 2]]))
    with pytest.raises(ValueError, match="distinct positions"):
        exact.restricted(model, context, torch.tensor([0, 0]), torch.tensor([[0, 1], [1, 2]]))
    with pytest.raises(ValueError, match=r"\(n, k\)"):
        exact.restricted(model, context, torch.tensor([0, 1]), torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="one passage"):
        exact.restricted(model, context.unsqueeze(0), torch.tensor([0]), torch.tensor([[0, 1]]))


def test_a_table_too_large_for_memory_is_refused_before_any_forward(monkeypatch):
    import glauber_mlm.validate as validate

    model = exact.potts_chain(4, 3)
    calls = []
    monkeypatch.setattr(validate, "available_memory", lambda device: 1000)
    monkeypatch.setattr(model, "logits", lambda *a, **k: calls.append(1))
    with pytest.raises(MemoryError, match="fewer free sites or candidates"):
        exact.restricted(model, torch.zeros(4, dtype=torch.int64), torch.arange(4), torch.arange(3).repeat(4, 1))
    assert not calls


@pytest.fixture(scope="module")
def mlm():
    from glauber_mlm import load_mlm

    return load_mlm(device="cpu", dtype=torch.float32)


def test_the_embedded_mlm_restricted_logits_are_its_own_forwards(mlm):
    from glauber_mlm.models.passages import load_passages, sample_passages

    context = sample_passages(mlm, load_passages(), 10, 1, seed=0)[0][0]
    sites = torch.tensor([2, 5, 7])
    C = exact.candidate_sets(mlm, context, sites, 2)
    direct = mlm.logits(context.expand(3, -1), sites)
    assert torch.equal(C, direct.topk(2).indices)
    R = exact.restricted(mlm, context, sites, C)
    states = all_states(3, 2)
    tokens = R.tokens(states)
    assert torch.equal(tokens[:, [0, 1, 3, 4, 6, 8, 9]], context[[0, 1, 3, 4, 6, 8, 9]].expand(8, -1))
    for i in range(3):
        sites_i = sites[i].repeat(8)
        expected = mlm.logits(tokens, sites_i)[:, C[i]]
        assert torch.allclose(R.logits(states, torch.full((8,), i)), expected, atol=1e-4)
    # the chain's conditionals at a site do not depend on that site's own token (it is masked)
    t = R.table
    assert torch.equal(t[0, 0], t[4, 0]) and torch.equal(t[0, 2], t[1, 2])
