"""Glauber dynamics against exact stationary laws."""
import pytest
import torch
from scipy.stats import chi2

from glauber_mlm import exact, glauber

BASE = torch.tensor([27, 9, 3, 1])  # state → index for 4 sites, q = 3


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.fixture(scope="module")
def potts():
    return exact.potts_chain(4, q=3, coupling=0.8, field=torch.tensor([0.3, 0.0, -0.2]))


@pytest.mark.parametrize("scan", ["random", "systematic"])
@pytest.mark.parametrize("tau", [1.0, 0.7])
def test_chain_law_matches_exact_joint(potts, scan, tau):
    """Independent chains after a long burn-in are draws from π_τ; chi-square at the 1e-4 level (80 dof)."""
    chains = 6000
    traj = glauber(potts, torch.zeros(chains, 4, dtype=torch.long), steps=80, temperature=tau, seed=0, scan=scan)
    counts = torch.bincount((traj.final * BASE).sum(1), minlength=81).double()
    _, pi = potts.joint(tau)
    limit = chi2.ppf(1 - 1e-4, df=80)
    assert chi_square(counts, pi) < limit
    # the test has power: the law at another temperature is rejected by far
    _, wrong = potts.joint(tau * 1.5)
    assert chi_square(counts, wrong) > 3 * limit


def test_temperature_grid_in_one_batch(potts):
    """Per-chain temperatures: each half of the batch follows its own law."""
    taus = torch.tensor([0.5] * 3000 + [2.0] * 3000)
    final = glauber(potts, torch.zeros(6000, 4, dtype=torch.long), steps=80, temperature=taus, seed=7).final
    limit = chi2.ppf(1 - 1e-4, df=80)
    for half, tau in ((final[:3000], 0.5), (final[3000:], 2.0)):
        counts = torch.bincount((half * BASE).sum(1), minlength=81).double()
        assert chi_square(counts, potts.joint(tau)[1]) < limit


def test_same_seed_same_trajectory_whatever_the_batch(potts):
    init = torch.randint(0, 3, (8, 4), generator=torch.Generator().manual_seed(0))
    seeds = torch.arange(100, 108)
    full = glauber(potts, init, steps=50, seed=seeds, record_every=10)
    again = glauber(potts, init, steps=50, seed=seeds, record_every=10)
    alone = glauber(potts, init[3:4], steps=50, seed=seeds[3:4], record_every=10)
    assert torch.equal(full.states, again.states)
    assert torch.equal(full.states[:, 3], alone.states[:, 0])
    assert full.states.shape == (6, 8, 4) and full.steps.tolist() == [0, 10, 20, 30, 40, 50]


def test_changed_flags_and_sites_describe_the_path(potts):
    traj = glauber(potts, torch.zeros(5, 4, dtype=torch.long), steps=40, seed=3, scan="systematic")
    assert (traj.sites.long() == torch.arange(40).remainder(4).unsqueeze(1)).all()
    # the number of recorded changes equals the Hamming moves between consecutive recorded states
    moves = (traj.states[1:] != traj.states[:-1]).sum((0, 2))
    assert torch.equal(moves, traj.changed.sum(0))
