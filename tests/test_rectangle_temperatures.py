"""A list of temperatures gives one τ per item (rectangle, pair, chain), checked against per-item calls and the
closed forms of the exact models: ρ_τ = ρ_1/τ (`exact.exact_rectangle`), and rms = |ρ|/4 for k = 2 candidates."""
import pytest
import torch

from glauber_mlm import (CandidatePairs, Rectangles, compatibility_test, coupling_times, exact, glauber,
                         influence_matrix, metropolis, rectangle_statistic, rectangle_test)

TOY = exact.incompatible_pairwise(5, 4, scale=0.8, seed=3)
TAUS = [1.0, 2.0, 3.0, 4.0]


def rectangles(i, j, a, a2, b, b2, contexts=None) -> Rectangles:
    fields = [torch.as_tensor(f) for f in (i, j, a, a2, b, b2)]
    if contexts is None:
        contexts = torch.zeros(len(fields[0]), TOY.n, dtype=torch.long)
    return Rectangles(contexts, *fields)


DISTINCT = rectangles([0, 1, 2, 0], [1, 2, 3, 4], [0, 1, 2, 3], [1, 2, 3, 0], [0, 0, 1, 2], [3, 2, 0, 1])


def one(r: Rectangles, k: int) -> Rectangles:
    return Rectangles(*(t[k : k + 1] for t in (r.contexts, r.i, r.j, r.a, r.a2, r.b, r.b2)))


def closed_form(r: Rectangles) -> torch.Tensor:
    return exact.exact_rectangle(TOY, r.i, r.j, r.a, r.a2, r.b, r.b2)


def test_one_temperature_per_rectangle_matches_per_item_calls_and_closed_form():
    res = rectangle_test(TOY, DISTINCT, temperature=TAUS)
    for k, tau in enumerate(TAUS):
        alone = rectangle_test(TOY, one(DISTINCT, k), temperature=tau)
        assert torch.equal(res.rho[k : k + 1], alone.rho)
        assert torch.equal(res.tv_i[k : k + 1], alone.tv_i) and torch.equal(res.tv_j[k : k + 1], alone.tv_j)
    assert torch.allclose(res.rho, closed_form(DISTINCT) / torch.tensor(TAUS, dtype=torch.float64), atol=1e-5)
    assert torch.equal(rectangle_statistic(TOY, DISTINCT, temperature=torch.tensor(TAUS)), res.rho)


def test_identical_rectangles_at_different_temperatures_give_rho_over_tau():
    """Equal queries at different τ must not share one log q^τ (they used to: one value four times)."""
    same = rectangles([0] * 4, [1] * 4, [0] * 4, [1] * 4, [0] * 4, [1] * 4)
    rho1 = closed_form(one(same, 0))
    rho = rectangle_statistic(TOY, same, temperature=TAUS)
    assert rho.unique().numel() == 4
    assert torch.allclose(rho, rho1 / torch.tensor(TAUS, dtype=torch.float64), atol=1e-5)


def test_chunks_keep_each_rectangle_with_its_temperature():
    taus = [0.5, 1.0, 2.0, 4.0]
    assert torch.equal(rectangle_statistic(TOY, DISTINCT, temperature=taus, chunk=3),
                       rectangle_statistic(TOY, DISTINCT, temperature=taus))


def test_a_scalar_applies_to_every_rectangle():
    assert torch.equal(rectangle_statistic(TOY, DISTINCT, temperature=2.0),
                       rectangle_statistic(TOY, DISTINCT, temperature=[2.0] * 4))


@pytest.mark.parametrize("r, taus, count", [(one(DISTINCT, 0), TAUS, "4 temperatures for 1 rectangle:"),
                                            (DISTINCT, [1.0, 2.0], "2 temperatures for 4 rectangles:")])
def test_a_list_of_the_wrong_length_is_refused(r, taus, count):
    with pytest.raises(ValueError, match=f"{count} pass one, or one per rectangle"):
        rectangle_statistic(TOY, r, temperature=taus)


def test_compatibility_test_takes_one_temperature_per_pair():
    """k = 2 candidates hold one rectangle, so rms = |ρ|/4 = |ρ_1|/(4τ)."""
    r = DISTINCT
    pairs = CandidatePairs(r.contexts, r.i, r.j, torch.stack([r.a, r.a2], 1), torch.stack([r.b, r.b2], 1))
    res = compatibility_test(TOY, pairs, temperature=TAUS, chunk=3)
    for k, tau in enumerate(TAUS):
        alone = CandidatePairs(*(t[k : k + 1] for t in (pairs.contexts, pairs.i, pairs.j, pairs.A, pairs.B)))
        assert torch.equal(res.rms[k : k + 1], compatibility_test(TOY, alone, temperature=tau).rms)
    expected = closed_form(r).abs() / 4 / torch.tensor(TAUS, dtype=torch.float64)
    assert torch.allclose(res.rms, expected, atol=1e-5)
    with pytest.raises(ValueError, match="got 3 temperatures for 4 pairs: pass one, or one per pair"):
        compatibility_test(TOY, pairs, temperature=[1.0, 2.0, 3.0])


def test_influence_matrix_takes_a_grid_every_temperature_for_every_context():
    potts = exact.potts_chain(4, q=3, coupling=1.2)
    contexts = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])
    grid = influence_matrix(potts, contexts, [0.5, 2.0], replacements=2, top_k=2)
    for t, tau in enumerate([0.5, 2.0]):
        assert torch.equal(grid[:, t], influence_matrix(potts, contexts, [tau], replacements=2, top_k=2)[:, 0])


def test_chains_and_pairs_take_one_temperature_each():
    """glauber, metropolis and coupling_times on an exact model: a chain run alone follows the same path."""
    potts = exact.potts_chain(4, q=3, coupling=0.9)
    init = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0], [1, 0, 0, 2]])
    taus, seeds = [0.4, 1.0, 3.0], [5, 6, 7]
    batch = glauber(potts, init, 40, temperature=taus, seed=seeds).states
    mh = metropolis(potts, init, 40, temperature=taus, seed=seeds, energy="joint")
    pairs = coupling_times(potts, init, init.flip(1), 200, temperature=taus, seed=seeds)
    for c in range(3):
        assert torch.equal(batch[:, c], glauber(potts, init[c : c + 1], 40, temperature=taus[c], seed=seeds[c]).states[:, 0])
        alone = metropolis(potts, init[c : c + 1], 40, temperature=taus[c], seed=seeds[c], energy="joint")
        assert torch.equal(mh.states[:, c], alone.states[:, 0])
        assert pairs.times[c] == coupling_times(potts, init[c : c + 1], init[c : c + 1].flip(1), 200,
                                                temperature=taus[c], seed=seeds[c]).times[0]
    with pytest.raises(ValueError, match="got 2 temperatures for 3 pairs"):
        coupling_times(potts, init, init.flip(1), 200, temperature=[1.0, 2.0])
