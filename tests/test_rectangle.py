"""The rectangle statistic: zero on compatible conditionals, the closed form on the incompatible toy."""
import pytest
import torch

from glauber_mlm import Rectangles, exact, random_rectangles, rectangle_statistic


def random_specs(n: int, q: int, R: int, seed: int) -> Rectangles:
    g = torch.Generator().manual_seed(seed)
    i = torch.randint(n, (R,), generator=g)
    j = (i + 1 + torch.randint(n - 1, (R,), generator=g)) % n
    tok = lambda: torch.randint(q, (R,), generator=g)  # noqa: E731
    return Rectangles(torch.randint(q, (R, n), generator=g), i, j, tok(), tok(), tok(), tok())


def symmetric_pairwise(n: int, q: int, seed: int) -> exact.PairwiseModel:
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(n, n, q, q, generator=g, dtype=torch.float64)
    W = W + W.permute(1, 0, 3, 2)  # W_ji = W_ijᵀ: a joint law exists
    return exact.PairwiseModel(W, torch.randn(n, q, generator=g, dtype=torch.float64))


def test_compatible_conditionals_give_zero_at_float_noise():
    model = symmetric_pairwise(6, 5, seed=0)
    assert model.compatible
    rho = rectangle_statistic(model, random_specs(6, 5, 500, seed=1))
    assert rho.abs().max() < 1e-5  # fp32 logits of size ~10: rounding ~1e-6


def test_incompatible_toy_matches_closed_form():
    model = exact.incompatible_pairwise(6, 5, seed=3)
    assert not model.compatible
    specs = random_specs(6, 5, 500, seed=4)
    rho = rectangle_statistic(model, specs)
    truth = exact.exact_rectangle(model, specs.i, specs.j, specs.a, specs.a2, specs.b, specs.b2)
    assert torch.allclose(rho, truth, atol=1e-5)
    assert (truth.abs() > 0.1).float().mean() > 0.5  # the toy really is incompatible


@pytest.mark.parametrize("tau", [0.25, 0.5, 2.0, 5.0])
def test_statistic_scales_as_one_over_temperature(tau):
    model = exact.incompatible_pairwise(5, 4, seed=5)
    specs = random_specs(5, 4, 200, seed=6)
    rho1 = rectangle_statistic(model, specs)
    assert torch.allclose(rectangle_statistic(model, specs, temperature=tau), rho1 / tau, atol=1e-5)


def test_random_rectangles_draw_distinct_sites_and_tokens():
    model = exact.incompatible_pairwise(6, 8, seed=7)
    passages = torch.randint(8, (10, 6), generator=torch.Generator().manual_seed(8))
    specs = random_rectangles(model, passages, per_passage=5, top_k=4, seed=9)
    assert specs.contexts.shape == (50, 6)
    assert (specs.i != specs.j).all() and (specs.a != specs.a2).all() and (specs.b != specs.b2).all()
    assert rectangle_statistic(model, specs).shape == (50,)
