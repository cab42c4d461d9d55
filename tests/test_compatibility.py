"""The Arnold–Press residual: zero on compatible conditionals, a direct enumeration on the incompatible toy,
|ρ|/4 for k = 2, 1/τ under tempering, and refusals before any forward pass."""
import itertools

import numpy as np
import pytest
import torch

from glauber_mlm import Rectangles, exact, load_mlm, random_rectangles, rectangle_statistic
from glauber_mlm.measures.compatibility import CandidatePairs, compatibility_test, top_k_candidates
from tiny_models import save_tiny


def random_pairs(model: exact.PairwiseModel, T: int, k: int, seed: int) -> CandidatePairs:
    """T random contexts, sites i ≠ j and k distinct random candidates per site."""
    g = torch.Generator().manual_seed(seed)
    n, q = model.n, model.vocab_size
    i = torch.randint(n, (T,), generator=g)
    j = (i + 1 + torch.randint(n - 1, (T,), generator=g)) % n
    A, B = (torch.rand(T, q, generator=g).argsort(1)[:, :k] for _ in range(2))
    return CandidatePairs(torch.randint(q, (T, n), generator=g), i, j, A, B)


def enumerated_rms(model: exact.PairwiseModel, pairs: CandidatePairs) -> np.ndarray:
    """The statistic in numpy, straight from the model's W and h: ℓ_i(v|x) = h_i(v) + Σ_m W_im(v, x_m)."""
    W, h = model.W.numpy(), model.h.numpy()

    def log_q(x, site):
        logits = h[site] + sum(W[site, m][:, x[m]] for m in range(model.n))  # W_ii = 0 hides x_i
        return logits - np.log(np.exp(logits).sum())

    out = []
    for x, i, j, A, B in zip(*(t.numpy() for t in (pairs.contexts, pairs.i, pairs.j, pairs.A, pairs.B))):
        P = np.empty((len(A), len(B)))
        Q = np.empty_like(P)
        for (ra, a), (cb, b) in itertools.product(enumerate(A), enumerate(B)):
            xb, xa = x.copy(), x.copy()
            xb[j], xa[i] = b, a
            P[ra, cb], Q[ra, cb] = np.exp(log_q(xb, i)[a]), np.exp(log_q(xa, j)[b])
        D = np.log(P / P.sum(0, keepdims=True)) - np.log(Q / Q.sum(1, keepdims=True))
        E = D - D.mean(1, keepdims=True) - D.mean(0, keepdims=True) + D.mean()
        out.append(np.sqrt((E ** 2).mean()))
    return np.array(out)


@pytest.mark.parametrize("model", [exact.compatible_pairwise(6, 7, logit_std=3.0, seed=0),
                                   exact.potts_chain(6, q=4, coupling=1.5, field=torch.tensor([0.3, -0.2, 0.0, 0.5]))],
                         ids=["compatible_pairwise", "potts_chain"])
def test_compatible_conditionals_give_zero_at_float_noise(model):
    assert model.compatible
    res = compatibility_test(model, random_pairs(model, 200, k=4, seed=1))
    assert res.rms.shape == (200,) and res.residual.shape == (200, 4, 4)
    assert res.rms.max() < 1e-5  # fp32 logits of size ~3: rounding ~1e-6


def test_compromise_joint_is_the_exact_pair_law_on_a_compatible_model():
    model = exact.compatible_pairwise(4, 3, logit_std=2.0, seed=2)
    states, prob = model.joint()
    pairs = random_pairs(model, 10, k=2, seed=3)
    res = compatibility_test(model, pairs)
    for t in range(10):
        x, i, j, A, B = pairs.contexts[t], int(pairs.i[t]), int(pairs.j[t]), pairs.A[t], pairs.B[t]
        others = [m for m in range(4) if m not in (i, j)]
        context = (states[:, others] == x[others]).all(1)
        truth = torch.stack([torch.stack([prob[context & (states[:, i] == a) & (states[:, j] == b)].sum() for b in B])
                             for a in A])
        assert torch.allclose(res.log_joint[t].exp(), truth / truth.sum(), atol=1e-5)


def test_incompatible_toy_matches_a_direct_enumeration():
    model = exact.incompatible_pairwise(5, 6, seed=4)
    assert not model.compatible
    pairs = random_pairs(model, 60, k=3, seed=5)
    rms = compatibility_test(model, pairs, chunk=7).rms  # chunks that do not divide the batch
    assert np.allclose(rms.numpy(), enumerated_rms(model, pairs), atol=1e-5)
    assert (rms > 0.05).all()  # strictly positive, far above float noise


def test_two_candidates_give_a_quarter_of_the_rectangles_rho():
    model = exact.incompatible_pairwise(6, 8, seed=6)
    passages = torch.randint(8, (20, 6), generator=torch.Generator().manual_seed(7))
    rects = random_rectangles(model, passages, per_passage=3, top_k=5, seed=8)
    pairs = CandidatePairs(rects.contexts, rects.i, rects.j, torch.stack([rects.a, rects.a2], 1),
                           torch.stack([rects.b, rects.b2], 1))
    rho = rectangle_statistic(model, rects)
    assert torch.allclose(compatibility_test(model, pairs).rms, rho.abs() / 4, atol=1e-6)


def test_rms_is_the_rectangles_rms_rho_times_k_minus_one_over_2k():
    k = 4
    model = exact.incompatible_pairwise(5, 6, seed=9)
    pairs = random_pairs(model, 20, k=k, seed=10)
    ranks = torch.tensor([[*r, *c] for r, c in itertools.product(itertools.combinations(range(k), 2), repeat=2)])
    T, R = len(pairs.i), len(ranks)  # the C(k,2)² rectangles {a,a'}×{b,b'} of A×B, as candidate ranks
    a, a2, b, b2 = (tokens[:, r].flatten() for tokens, r in zip((pairs.A, pairs.A, pairs.B, pairs.B), ranks.T))
    rects = Rectangles(pairs.contexts.repeat_interleave(R, 0), pairs.i.repeat_interleave(R), pairs.j.repeat_interleave(R),
                       a, a2, b, b2)
    rho = rectangle_statistic(model, rects).view(T, R)
    expected = (k - 1) / (2 * k) * rho.pow(2).mean(1).sqrt()
    assert torch.allclose(compatibility_test(model, pairs).rms, expected, atol=1e-5)


@pytest.mark.parametrize("tau", [0.25, 0.5, 2.0, 5.0])
def test_statistic_scales_as_one_over_temperature(tau):
    model = exact.incompatible_pairwise(5, 6, seed=11)
    pairs = random_pairs(model, 50, k=3, seed=12)
    rms1 = compatibility_test(model, pairs).rms
    assert torch.allclose(compatibility_test(model, pairs, temperature=tau).rms, rms1 / tau, atol=1e-5)


def test_top_k_candidates_contain_the_rectangles_tokens():
    model = exact.incompatible_pairwise(6, 8, seed=13)
    passages = torch.randint(8, (10, 6), generator=torch.Generator().manual_seed(14))
    rects = random_rectangles(model, passages, per_passage=4, top_k=4, seed=15)
    pairs = top_k_candidates(model, rects.contexts, rects.i, rects.j, k=4)
    for tokens, at in ((pairs.A, (rects.a, rects.a2)), (pairs.B, (rects.b, rects.b2))):
        assert all((tokens == t.unsqueeze(1)).any(1).all() for t in at)


class NoForward(exact.PairwiseModel):
    """An exact model whose forward pass must not run: bad input has to be refused before it."""

    def logits(self, states, sites, dtype=None):
        raise AssertionError("a forward pass ran before the input was checked")


@pytest.mark.parametrize("change, error, message", [
    (dict(A=[[0]] * 4, B=[[1]] * 4), ValueError, "k ≥ 2"),
    (dict(A=[list(range(6))] * 4, B=[list(range(6))] * 4), ValueError, "more than the model's support"),
    (dict(j=[0, 1, 2, 3]), ValueError, "two different sites"),
    (dict(A=[[0, 0]] * 4), ValueError, "repeats a token"),
    (dict(B=[[0, 9]] * 4), ValueError, "outside the model's support"),
    (dict(B=[[0, 1, 2]] * 4), ValueError, "same number k"),
    (dict(A=[[0.0, 1.0]] * 4), TypeError, "integer token ids"),
    (dict(A=[[0, 1]] * 3), ValueError, r"shape \(pairs, k\)"),
    (dict(i=[0, 1, 2, 7]), ValueError, r"i must lie in \[0, 4\)"),
])
def test_bad_input_is_refused_before_any_forward_pass(change, error, message):
    model = NoForward(torch.zeros(4, 4, 5, 5))
    good = dict(contexts=torch.zeros(4, 4, dtype=torch.long), i=[0, 1, 2, 3], j=[1, 2, 3, 0], A=[[0, 1]] * 4, B=[[2, 3]] * 4)
    pairs = CandidatePairs(**{k: torch.as_tensor(v) for k, v in {**good, **change}.items()})
    with pytest.raises(error, match=message):
        compatibility_test(model, pairs)


def test_bad_settings_are_refused_before_any_forward_pass():
    model = NoForward(torch.zeros(4, 4, 5, 5))
    contexts, i, j = torch.zeros(2, 4, dtype=torch.long), torch.tensor([0, 1]), torch.tensor([1, 2])
    pairs = CandidatePairs(contexts, i, j, torch.tensor([[0, 1]] * 2), torch.tensor([[2, 3]] * 2))
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        compatibility_test(model, pairs, temperature=0.0)
    with pytest.raises(ValueError, match="chunk must be an integer ≥ 1"):
        compatibility_test(model, pairs, chunk=0)
    with pytest.raises(ValueError, match=r"k must be an integer in \[2, 5\]"):
        top_k_candidates(model, contexts, i, j, k=6)
    with pytest.raises(ValueError, match=r"k must be an integer in \[2, 5\]"):
        top_k_candidates(model, contexts, i, j, k=1)
    with pytest.raises(ValueError, match="two different sites"):
        top_k_candidates(model, contexts, i, i, k=2)


def test_tiny_bert_gives_a_finite_nonnegative_statistic(tmp_path):
    mlm = load_mlm(save_tiny(tmp_path / "bert"), device="cpu", dtype=torch.float32)
    g = torch.Generator().manual_seed(16)
    contexts = torch.nonzero(mlm.support).flatten()[torch.randint(20, (6, 8), generator=g)]
    i = torch.randint(8, (6,), generator=g)
    j = (i + 1 + torch.randint(7, (6,), generator=g)) % 8
    res = compatibility_test(mlm, top_k_candidates(mlm, contexts, i, j, k=3))
    assert res.rms.shape == (6,) and torch.isfinite(res.rms).all() and (res.rms >= 0).all()
    assert torch.allclose(res.log_joint.exp().sum((1, 2)), torch.ones(6, dtype=torch.float64))
