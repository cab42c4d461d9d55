"""Token-level influence beside ρ (rectangle_test), the compatible float-noise model, and the censored fits."""
import numpy as np
import pytest
import torch

from glauber_mlm import Rectangles, exact, load_mlm, random_rectangles, rectangle_statistic, rectangle_test
from glauber_mlm.measures.rectangle import float64_twin
from tiny_models import save_tiny
from glauber_mlm.stats import censored_median_ci, fit_scaling_ci


def random_specs(n: int, q: int, R: int, seed: int) -> Rectangles:
    g = torch.Generator().manual_seed(seed)
    i = torch.randint(n, (R,), generator=g)
    j = (i + 1 + torch.randint(n - 1, (R,), generator=g)) % n
    a = torch.randint(q, (R,), generator=g)
    b = torch.randint(q, (R,), generator=g)
    a2 = (a + 1 + torch.randint(q - 1, (R,), generator=g)) % q
    b2 = (b + 1 + torch.randint(q - 1, (R,), generator=g)) % q
    return Rectangles(torch.randint(q, (R, n), generator=g), i, j, a, a2, b, b2)


def reference_tv(model: exact.PairwiseModel, ctx, i, j, b, b2) -> float:
    """TV(q_i(·|x_j=b), q_i(·|x_j=b')) in float64 straight from h and W."""
    def q(at_j):
        x = ctx.clone()
        x[j] = at_j
        logit = model.h[i] + sum(model.W[i, k][:, x[k]] for k in range(model.n) if k != i)
        return torch.softmax(logit, 0)
    return 0.5 * (q(b) - q(b2)).abs().sum().item()


def test_influence_matches_direct_computation_and_rho_matches_closed_form():
    model = exact.incompatible_pairwise(5, 6, seed=11)
    specs = random_specs(5, 6, 60, seed=12)
    res = rectangle_test(model, specs, chunk=7)  # several chunks
    for r in range(60):
        args = (specs.contexts[r], specs.i[r].item(), specs.j[r].item())
        assert res.tv_i[r].item() == pytest.approx(reference_tv(model, *args, specs.b[r], specs.b2[r]), abs=1e-5)
        swapped = (specs.contexts[r], specs.j[r].item(), specs.i[r].item(), specs.a[r], specs.a2[r])
        assert res.tv_j[r].item() == pytest.approx(reference_tv(model, *swapped), abs=1e-5)
    truth = exact.exact_rectangle(model, specs.i, specs.j, specs.a, specs.a2, specs.b, specs.b2)
    assert torch.allclose(res.rho, truth, atol=1e-5)
    assert torch.allclose(res.rho, rectangle_statistic(model, specs, chunk=1000), atol=1e-9)
    assert torch.allclose(res.influence, (res.tv_i + res.tv_j) / 2)
    assert ((res.influence >= 0) & (res.influence <= 1)).all() and (res.influence > 0.01).float().mean() > 0.9


def test_influence_is_zero_between_sites_that_do_not_interact():
    model = exact.potts_chain(6, q=3, coupling=1.5)  # only neighbours interact
    specs = random_specs(6, 3, 200, seed=13)
    res = rectangle_test(model, specs)
    near = (specs.i - specs.j).abs() == 1
    assert res.influence[~near].abs().max() < 1e-6
    assert (res.influence[near] > 0.05).all()  # b ≠ b' always moves a neighbour of a Potts site
    assert res.rho.abs().max() < 1e-5  # a joint law exists


def test_compatible_pairwise_has_a_joint_and_the_asked_logit_scale():
    model = exact.compatible_pairwise(8, 40, logit_std=5.0, seed=1)
    assert model.compatible
    states = torch.randint(40, (400, 8), generator=torch.Generator().manual_seed(2))
    logits = model.logits(states, torch.randint(8, (400,)))
    assert 4.0 < logits.std().item() < 6.0
    assert rectangle_statistic(model, random_specs(8, 40, 300, seed=3)).abs().max() < 1e-4


def test_fit_scaling_ci_recovers_n_log_n_constant():
    rng = np.random.default_rng(0)
    n = np.repeat([4, 8, 16, 32], 300)
    T = 3.0 * n * np.log(n) * rng.exponential(1.0, n.size) / np.log(2)  # median of Exp(1) is log 2
    fits = fit_scaling_ci(n, T, n_boot=300)
    C, low, high, r2 = fits["n log n"]
    assert low < 3.0 < high and high - low < 1.0
    assert r2 > 0.97 and r2 > fits["n"][3] and r2 > fits["n^2"][3]


def test_censored_cells_give_infinite_constants_and_medians():
    n = np.repeat([4, 8], 4)
    T = np.array([5, 6, 7, 8, 100, 100, 100, 9])
    met = np.array([1, 1, 1, 1, 0, 0, 0, 1], bool)
    C, low, high, r2 = fit_scaling_ci(n, T, met, n_boot=50)["n log n"]
    assert np.isinf(C) and np.isinf(high) and np.isnan(r2)
    assert censored_median_ci(T[:4], met[:4]) == (6.5, pytest.approx(5.0, abs=1.5), pytest.approx(8.0, abs=0.6))
    with pytest.raises(ValueError, match="two lengths"):
        fit_scaling_ci([4, 4], [1, 2])


def test_float64_twin_rounds_once_and_leaves_the_model_alone(tmp_path):
    mlm = load_mlm(save_tiny(tmp_path / "bert"), device="cpu", dtype=torch.float32)
    twin = float64_twin(mlm)
    assert next(twin.model.parameters()).dtype == torch.float64
    assert next(mlm.model.parameters()).dtype == torch.float32
    g = torch.Generator().manual_seed(0)
    states = torch.nonzero(mlm.support).flatten()[torch.randint(20, (6, 8), generator=g)]
    sites = torch.arange(6)
    ours, ref = mlm.logits(states, sites, dtype=torch.float32), twin.logits(states, sites, dtype=torch.float32)
    finite = torch.isfinite(ours)
    assert torch.equal(finite, torch.isfinite(ref))
    assert 0 < (ours - ref)[finite].abs().max() < 1e-5  # fp32 rounding: small but not nothing
    specs = random_rectangles(mlm, states, per_passage=4, top_k=5, seed=1)
    assert (rectangle_statistic(mlm, specs) - rectangle_statistic(twin, specs)).abs().max() < 1e-4

