"""Trap radius and escape distances calibrated before any chain runs: one-token neighbours, jitter and
passage distances, quantile thresholds, and per-chain trap summaries, on planted data with known answers."""
import numpy as np
import pandas as pd
import pytest
import torch

from glauber_mlm import exact
from glauber_mlm.measures import semantic


def test_one_token_neighbours_differ_at_exactly_one_site_and_are_seeded():
    model = exact.compatible_pairwise(n=5, q=4, seed=1)
    states = torch.tensor([[0, 1, 2, 3, 0], [3, 3, 3, 3, 3]])
    nb, parent = semantic.one_token_neighbours(model, states, per_state=50, seed=3)
    assert nb.shape == (100, 5) and parent.tolist() == [0] * 50 + [1] * 50
    diff = (nb != states[torch.as_tensor(parent)]).sum(1)
    assert (diff == 1).all()                                  # one site, never the state itself
    again, _ = semantic.one_token_neighbours(model, states, per_state=50, seed=3)
    assert torch.equal(nb, again)
    other, _ = semantic.one_token_neighbours(model, states, per_state=50, seed=4)
    assert not torch.equal(nb, other)


def test_one_token_neighbours_follow_the_conditional_without_the_current_token():
    # one site that matters: h makes token 2 likely, token 0 (the current one) is excluded
    n, q = 1, 4
    h = torch.log(torch.tensor([[0.7, 0.05, 0.2, 0.05]]))
    model = exact.PairwiseModel(torch.zeros(n, n, q, q), h)
    nb, _ = semantic.one_token_neighbours(model, torch.zeros(1, 1, dtype=torch.long), per_state=6000, seed=0)
    freq = np.bincount(nb[:, 0].numpy(), minlength=q) / 6000
    assert freq[0] == 0
    assert np.allclose(freq[1:], [0.05 / 0.3, 0.2 / 0.3, 0.05 / 0.3], atol=0.03)
    # a lower temperature sharpens the draw towards the best other token
    cold, _ = semantic.one_token_neighbours(model, torch.zeros(1, 1, dtype=torch.long), per_state=500, temperature=0.05)
    assert (cold[:, 0] == 2).all()


def test_one_token_neighbours_refuse_bad_input():
    model = exact.potts_chain(3, q=2)
    with pytest.raises(ValueError, match="per_state"):
        semantic.one_token_neighbours(model, torch.zeros(1, 3, dtype=torch.long), per_state=0)
    with pytest.raises(ValueError, match="temperature"):
        semantic.one_token_neighbours(model, torch.zeros(1, 3, dtype=torch.long), temperature=0.0)
    with pytest.raises(ValueError, match="token ids must lie"):
        semantic.one_token_neighbours(model, torch.full((1, 3), 7))
    class OneToken(exact.PairwiseModel):  # every site may hold token 0 only
        def logits(self, states, sites, dtype=None):
            out = super().logits(states, sites, dtype)
            out[:, 1:] = float("-inf")
            return out

    single = OneToken(torch.zeros(2, 2, 2, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="no one-token neighbour"):
        semantic.one_token_neighbours(single, torch.zeros(1, 2, dtype=torch.long))


def test_jitter_and_passage_distances_on_planted_embeddings():
    e = np.eye(3)                                             # three orthogonal unit vectors: all distances √2
    assert np.allclose(semantic.passage_distances(e), np.sqrt(2)) and semantic.passage_distances(e).size == 3
    nb = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1]])
    jit = semantic.one_token_jitter(e, nb, [0, 0, 2])
    assert np.allclose(jit, [0, np.sqrt(0.4 ** 2 + 0.8 ** 2), 0])
    with pytest.raises(ValueError, match="parent"):
        semantic.one_token_jitter(e, nb, [0, 5, 2])
    with pytest.raises(ValueError, match="at least two"):
        semantic.passage_distances(e[:1])


def test_calibrated_thresholds_are_quantiles_and_levels_are_checked():
    d = np.arange(101) / 100                                  # 0, 0.01, ..., 1: the q-quantile is q
    assert np.allclose(semantic.calibrated_thresholds(d, [0.1, 0.5, 0.9]), [0.1, 0.5, 0.9])
    assert np.allclose(semantic.calibrated_thresholds(d, 0.25), [0.25])
    for bad in ([], [0.0], [1.0], [0.5, 1.2], ["a"], [True]):
        with pytest.raises(ValueError, match="quantile levels"):
            semantic.quantile_levels(bad, "radius_quantiles")
    with pytest.raises(ValueError, match="finite distances"):
        semantic.calibrated_thresholds([np.nan, 1.0], [0.5])


def test_radius_from_jitter_finds_a_planted_trap_and_not_a_random_walk():
    """A basin whose records move less than one token change typically does is found at the jitter's 90th
    percentile, a walk of passage-sized steps is not. (Records moving at the jitter scale itself would leave
    the radius at one record in ten: the rule reads a trap as staying within a typical one-token change.)"""
    rng = np.random.default_rng(0)
    d = 16
    unit = lambda X: X / np.linalg.norm(X, axis=-1, keepdims=True)
    centre = unit(rng.normal(size=d))
    jitter_sample = unit(centre + rng.normal(0, 0.03, (400, d)))
    radius = float(semantic.calibrated_thresholds(semantic.one_token_jitter(centre[None], jitter_sample,
                                                                           np.zeros(400, int)), [0.9])[0])
    trap = unit(centre + rng.normal(0, 0.015, (40, d)))       # the chain sits in the basin for 40 records
    walk = unit(rng.normal(size=(40, d)))                     # independent passages: far apart
    emb = np.stack([np.concatenate([trap, walk]), np.concatenate([walk, trap])], 1)  # (80, 2, d)
    steps = np.arange(80) * 10
    traps = semantic.chain_traps(emb, steps, radius, min_dwell=100)
    assert traps.chain.tolist() == [0, 1]
    assert traps.start_index.tolist() == [0, 40] and traps.end_index.tolist() == [39, 79]
    assert traps.escaped.tolist() == [True, False]
    assert np.allclose(semantic.time_trapped(traps, 2, 800), [390 / 800, 390 / 800])
    walks = semantic.chain_traps(walk[:, None], steps[:40], radius, min_dwell=10)
    assert walks.empty and semantic.time_trapped(walks, 1, 400).tolist() == [0.0]


def test_time_trapped_counts_chains_without_traps():
    t = pd.DataFrame(dict(chain=[0, 0, 2], dwell=[100, 50, 300]))
    assert semantic.time_trapped(t, 4, 1000).tolist() == [0.15, 0.0, 0.3, 0.0]
    with pytest.raises(ValueError, match="need emb"):
        semantic.chain_traps(np.zeros((5, 3)), np.arange(5), 0.1, 1)
