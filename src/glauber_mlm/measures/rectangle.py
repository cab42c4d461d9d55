"""The rectangle test: a certificate that conditionals q_i, q_j come from no joint law.

Around the rectangle (a,b) → (a',b) → (a',b') → (a,b') → (a,b) with context z fixed,
ρ = log R = log q_i(a'|b)/q_i(a|b) + log q_j(b'|a')/q_j(b|a') + log q_i(a|b')/q_i(a'|b') + log q_j(b|a)/q_j(b'|a).
Any positive joint gives ρ = 0; |ρ| > tol certifies incompatibility. At temperature τ, ρ_τ = ρ_1/τ.
The same four conditionals give the token-level influence between the sites (`rectangle_test`):
tv_i = TV(q_i(·|b), q_i(·|b')), tv_j = TV(q_j(·|a), q_j(·|a')).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..conditionals import ConditionalModel, checked_logits, log_conditionals, total_variation
from ..validate import as_temperatures, check_dtype, check_int, check_sites, check_states
from ..rng import check_seed


@dataclass
class Rectangles:
    """A batch of R rectangles: contexts (R, n), sites i ≠ j, tokens a, a' at i and b, b' at j."""

    contexts: torch.Tensor
    i: torch.Tensor
    j: torch.Tensor
    a: torch.Tensor
    a2: torch.Tensor
    b: torch.Tensor
    b2: torch.Tensor


def _check(model: ConditionalModel, r: Rectangles) -> tuple[torch.Tensor, ...]:
    contexts = check_states(model, r.contexts)
    R, n = contexts.shape
    fields = [torch.as_tensor(t) for t in (r.i, r.j, r.a, r.a2, r.b, r.b2)]
    if any(f.numel() != R for f in fields):
        raise ValueError(f"every rectangle field needs one entry per context ({R}); got {[f.numel() for f in fields]}.")
    for name, f in zip(("i", "j", "a", "a'", "b", "b'"), fields):
        if f.dtype == torch.bool or f.is_floating_point() or f.is_complex():
            raise TypeError(f"rectangle field {name} must hold integers, got dtype {f.dtype}.")
    i, j = (check_sites(f, R, n, name).to(contexts.device) for f, name in ((fields[0], "i"), (fields[1], "j")))
    a, a2, b, b2 = (f.to(contexts.device).long().flatten() for f in fields[2:])
    if (i == j).any():
        raise ValueError("a rectangle needs two different sites: found i == j; draw j from the other sites.")
    support = model.support.to(contexts.device)
    for name, tok in (("a", a), ("a'", a2), ("b", b), ("b'", b2)):
        if ((tok < 0) | (tok >= model.vocab_size)).any() or not support[tok.clamp(0, model.vocab_size - 1)].all():
            raise ValueError(f"token {name} lies outside the model's support (vocabulary minus special/unused ids).")
    return contexts, i, j, a, a2, b, b2


@dataclass
class RectangleTest:
    """ρ and the token-level influence between the two sites of each rectangle, from one set of conditionals.

    tv_i = TV(q_i(·|x_j=b), q_i(·|x_j=b')): how much switching site j moves site i; tv_j likewise
    with a, a' at i. `influence` is their mean, the symmetric token-level influence of the pair.
    """

    rho: torch.Tensor  # (R,) float64
    tv_i: torch.Tensor  # (R,) float64
    tv_j: torch.Tensor  # (R,) float64

    @property
    def influence(self) -> torch.Tensor:
        return 0.5 * (self.tv_i + self.tv_j)


@torch.inference_mode()
def rectangle_test(
    model: ConditionalModel,
    rects: Rectangles,
    temperature: float | list[float] | torch.Tensor = 1.0,
    dtype: torch.dtype | str | None = torch.float32,
    chunk: int = 256,
) -> RectangleTest:
    """ρ = log R and the token-level influences tv_i, tv_j for each rectangle, `chunk` rectangles per batch.

    `temperature`: one τ for every rectangle, or one per rectangle. The four conditionals are q_i(·|x_j=b),
    q_i(·|x_j=b'), q_j(·|x_i=a), q_j(·|x_i=a'); identical (state, site, τ) queries, e.g. rectangles sharing
    (context, i, j, b) and τ, share one forward pass. Defaults to fp32 forwards: ρ can be smaller than bf16 rounding.
    """
    chunk, dtype = check_int("chunk", chunk, 1), check_dtype(dtype)
    contexts, i, j, a, a2, b, b2 = _check(model, rects)
    tau = as_temperatures(temperature, contexts.shape[0], contexts.device, "rectangle")
    parts = [_rectangle_chunk(model, contexts[k : k + chunk], *(t[k : k + chunk] for t in (i, j, a, a2, b, b2, tau)),
                              dtype=dtype) for k in range(0, contexts.shape[0], chunk)]
    return RectangleTest(*(torch.cat([p[m] for p in parts]).cpu() for m in range(3)))


def refuse_zero_probability(terms: torch.Tensor) -> None:
    """Refuse the eight log q of each rectangle (8 × R) when one is −inf: the model gives a token of its support
    probability 0, so ρ = log R is ±inf or NaN there. `require_finite` checks only each row's maximum."""
    bad = ~torch.isfinite(terms).all(0)
    if bad.any():
        rows = torch.nonzero(bad).flatten()[:5].tolist()
        raise ValueError(f"the model gives a token probability 0 (logit −inf) inside the support in rectangles {rows} "
                         "(indices within their chunk), so ρ = log R is not defined there: a model's logits are −inf "
                         "only outside its support; check its weights, or restrict the support (`model.support`) to "
                         "the tokens it can give.")


def _rectangle_chunk(model, contexts, i, j, a, a2, b, b2, tau, dtype):
    R = contexts.shape[0]
    rows = torch.arange(R, device=contexts.device)

    def state(at_i: torch.Tensor, at_j: torch.Tensor) -> torch.Tensor:
        s = contexts.clone()
        s[rows, i], s[rows, j] = at_i, at_j
        return s

    # the queried site's own token is masked; fixing it lets equal queries dedupe
    states = torch.cat([state(a, b), state(a, b2), state(a, b), state(a2, b)])
    sites = torch.cat([i, i, j, j])
    # each query carries its rectangle's τ (as an index into the distinct τ), so equal queries dedupe only at equal τ
    taus, tau_index = torch.unique(tau.repeat(4), return_inverse=True)
    key = torch.cat([states, sites.unsqueeze(1), tau_index.unsqueeze(1)], 1)
    queries, inverse = torch.unique(key, dim=0, return_inverse=True)
    logq = log_conditionals(model, queries[:, :-2], queries[:, -2], taus[queries[:, -1]], dtype)  # (unique, V) float32
    qi_b, qi_b2, qj_a, qj_a2 = inverse.split(R)

    def at(q: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
        return logq[q, tok].to(torch.float64)

    terms = torch.stack([at(qi_b, a2), at(qi_b, a), at(qj_a2, b2), at(qj_a2, b), at(qi_b2, a), at(qi_b2, a2),
                         at(qj_a, b), at(qj_a, b2)])
    refuse_zero_probability(terms)
    rho = (terms[0] - terms[1]) + (terms[2] - terms[3]) + (terms[4] - terms[5]) + (terms[6] - terms[7])
    tv_i = total_variation(logq[qi_b], logq[qi_b2]).to(torch.float64)
    tv_j = total_variation(logq[qj_a], logq[qj_a2]).to(torch.float64)
    return rho, tv_i, tv_j


def rectangle_statistic(
    model: ConditionalModel,
    rects: Rectangles,
    temperature: float | list[float] | torch.Tensor = 1.0,
    dtype: torch.dtype | str | None = torch.float32,
    chunk: int = 256,
) -> torch.Tensor:
    """ρ = log R for each rectangle (float64, shape (R,)), at one τ or one τ per rectangle; see `rectangle_test`
    for ρ with the influences."""
    return rectangle_test(model, rects, temperature, dtype, chunk).rho


@torch.inference_mode()
def random_rectangles(
    model: ConditionalModel,
    passages: torch.Tensor,
    per_passage: int,
    top_k: int = 10,
    seed: int = 0,
) -> Rectangles:
    """Rectangles on real contexts: sites i ≠ j at random, a ≠ a' from the top-k of q_i(·|x), b ≠ b' from that of q_j."""
    passages = check_states(model, passages)
    P, n = passages.shape
    per_passage, seed = check_int("per_passage", per_passage, 1), check_seed(seed)
    top_k = check_int("top_k", top_k, 2, int(model.support.sum()))  # a top-k beyond the support would pick −inf ids
    if n < 2:
        raise ValueError(f"a rectangle needs two sites: passages must hold ≥ 2 tokens, got {n}.")
    g = torch.Generator().manual_seed(seed)
    contexts = passages.repeat_interleave(per_passage, 0)
    R = contexts.shape[0]
    i = torch.randint(n, (R,), generator=g)
    j = (i + 1 + torch.randint(n - 1, (R,), generator=g)) % n
    logits = checked_logits(model, torch.cat([contexts, contexts]), torch.cat([i, j]).to(contexts.device), torch.float32)
    top = logits.topk(top_k, dim=-1).indices.cpu()  # (2R, k)
    pick = torch.rand(2 * R, top_k, generator=g).argsort(-1)[:, :2]  # two distinct ranks per site
    tokens = top.gather(1, pick)
    (a, a2), (b, b2) = tokens[:R].T, tokens[R:].T
    return Rectangles(contexts.cpu(), i, j, a, a2, b, b2)


def float64_twin(mlm):
    """A float64 copy of an `MLMAdapter`, to measure the fp32 forward's own rounding in ρ.

    Its `logits(..., dtype=torch.float32)` run the whole network in float64 and round the result once to
    float32 — as an exact model's logits are — so |ρ_fp32 − ρ_twin| is the rounding the fp32 forward adds.
    """
    import copy

    from ..models.hf import _site_head

    twin = copy.copy(mlm)
    twin.model = copy.deepcopy(mlm.model).double()
    twin.head = None if mlm.head is None else _site_head(twin.model)
    twin._lowp, twin.cast_weights = {}, False  # never build low-precision copies of the twin
    twin.name = f"{mlm.name} (float64)"
    return twin


def noise_tolerance(compatible_max: float, forward_noise: float = 0.0, safety: float = 10.0) -> float:
    """The certification threshold of notebooks 00 and 01, for ρ and for the Arnold–Press residual alike:
    tol = safety · max(largest value on a compatible model, largest |fp32 − float64| change of the model's forward).

    An exact model's logits are float64 rounded once to float32, so its forward adds nothing (forward_noise = 0);
    an MLM's fp32 forward also carries the rounding of every layer, measured with `float64_twin`."""
    if not safety >= 1:
        raise ValueError(f"safety must be ≥ 1 (a multiple of the noise), got {safety!r}.")
    if not (0 <= compatible_max < float("inf") and 0 <= forward_noise < float("inf")):
        raise ValueError(f"noise levels must be finite and ≥ 0, got {compatible_max!r}, {forward_noise!r}.")
    return float(safety * max(compatible_max, forward_noise))
