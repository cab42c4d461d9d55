"""Maximal coupling and coupling times against known answers."""
import math

import numpy as np
import torch
from scipy.stats import chi2

from glauber_mlm import coupling_times, exact, maximal_coupling


def test_maximal_coupling_marginals_and_meeting_probability():
    g = torch.Generator().manual_seed(0)
    p = torch.tensor([0.5, 0.2, 0.15, 0.1, 0.05, 0.0])
    q = torch.tensor([0.1, 0.1, 0.2, 0.3, 0.0, 0.3])
    N = 200_000
    x, y = maximal_coupling(p.expand(N, -1), q.expand(N, -1), generator=g)
    limit = chi2.ppf(1 - 1e-4, df=4)
    for draws, law in ((x, p), (y, q)):
        counts = torch.bincount(draws, minlength=6).double()
        assert counts[law == 0].sum() == 0  # never a zero-probability token
        pos = law > 0
        expected = law[pos].double() * N
        assert float(((counts[pos] - expected) ** 2 / expected).sum()) < limit
    tv = 0.5 * float((p - q).abs().sum())
    meet = float((x == y).double().mean())
    assert abs(meet - (1 - tv)) < 5 * math.sqrt(tv * (1 - tv) / N)


def test_identical_laws_always_meet():
    g = torch.Generator().manual_seed(1)
    p = torch.softmax(torch.randn(1000, 50, generator=g), -1)
    x, y = maximal_coupling(p, p.clone(), generator=g)
    assert torch.equal(x, y)


def test_disjoint_laws_never_meet():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0]]).expand(1000, -1)
    q = torch.tensor([[0.0, 0.0, 0.5, 0.5]]).expand(1000, -1)
    x, y = maximal_coupling(p, q, generator=torch.Generator().manual_seed(2))
    assert (x < 2).all() and (y >= 2).all()


def test_met_pairs_stay_met_and_censoring():
    ising = exact.potts_chain(6, q=2, coupling=0.3)
    x0 = torch.zeros(50, 6, dtype=torch.long)
    y0 = torch.ones(50, 6, dtype=torch.long)
    y0[0] = 0  # already equal: T = 0
    res = coupling_times(ising, x0, y0, budget=2000, seed=0)
    assert res.times[0] == 0 and res.met.all()
    short = coupling_times(ising, x0, y0, budget=3, seed=0)  # 6 sites cannot all be hit in 3 steps
    assert not short.met[1:].any() and (short.times[1:] == 3).all()
    # dropping met pairs: far fewer conditionals than 2 · pairs · max T
    assert res.forward_rows < 2 * 50 * int(res.times.max())


def test_coupling_time_is_a_pure_function_of_the_pair_seed():
    ising = exact.potts_chain(8, q=2, coupling=0.3)
    x0, y0 = torch.zeros(20, 8, dtype=torch.long), torch.ones(20, 8, dtype=torch.long)
    seeds = torch.arange(500, 520)
    all_pairs = coupling_times(ising, x0, y0, budget=2000, seed=seeds)
    some = coupling_times(ising, x0[5:9], y0[5:9], budget=2000, seed=seeds[5:9])
    assert torch.equal(all_pairs.times[5:9], some.times)


def test_high_temperature_ising_couples_in_n_log_n():
    """At high temperature T ≈ C n log n: T/(n log n) is flat in n while T/n grows and T/n² falls."""
    sizes, means = [8, 16, 32, 64], []
    for n in sizes:
        model = exact.potts_chain(n, q=2, coupling=0.3)
        res = coupling_times(model, torch.zeros(300, n, dtype=torch.long), torch.ones(300, n, dtype=torch.long),
                             budget=20_000, seed=n)
        assert res.met.all()
        means.append(res.times.double().mean().item())
    n = np.array(sizes, float)
    T = np.array(means)
    ratio = T / (n * np.log(n))
    assert ratio.max() / ratio.min() < 1.6
    assert (np.diff(T / n) > 0).all() and (np.diff(T / n**2) < 0).all()
