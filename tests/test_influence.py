"""Influence and margins against the Ising chain's closed forms."""
import itertools
import math

import pytest
import torch

from glauber_mlm import exact, influence_matrix, local_margins, total_influence


@pytest.mark.parametrize("J", [0.4, 1.0])
def test_ising_influence_closed_form(J):
    """Interior: α_{i,i±1} = tanh(J/τ)/2; ends: tanh(J/2τ); total influence tanh(J/τ)."""
    n, taus = 5, [0.5, 1.0, 2.0]
    ising = exact.potts_chain(n, q=2, coupling=J)
    every_state = torch.tensor(list(itertools.product([0, 1], repeat=n)))
    alpha = influence_matrix(ising, every_state, taus, replacements=1, top_k=1).amax(0)  # sup over all x
    for t, tau in enumerate(taus):
        expected = torch.zeros(n, n)
        for i in range(n):
            for j in (i - 1, i + 1):
                if 0 <= j < n:
                    expected[i, j] = math.tanh(J / (2 * tau)) if i in (0, n - 1) else math.tanh(J / tau) / 2
        assert torch.allclose(alpha[t], expected, atol=1e-5)
        assert total_influence(alpha[t]).item() == pytest.approx(math.tanh(J / tau), abs=1e-5)


def test_sampled_contexts_give_a_lower_bound():
    ising = exact.potts_chain(6, q=2, coupling=0.7)
    few = torch.zeros(1, 6, dtype=torch.long)
    alpha = influence_matrix(ising, few, [1.0], replacements=1, top_k=1)[0, 0]
    assert (alpha <= math.tanh(0.7 / 2) + 1e-6).all()
    assert total_influence(alpha) <= math.tanh(0.7) + 1e-6


def test_margins_of_the_ground_state():
    J = 1.3
    ising = exact.potts_chain(5, q=3, coupling=J)
    m = local_margins(ising, torch.zeros(2, 5, dtype=torch.long), chunk=3)
    assert torch.allclose(m, torch.tensor([[J, 2 * J, 2 * J, 2 * J, J]] * 2))
