"""The rectangle test: a certificate that conditionals q_i, q_j come from no joint law.

Around the rectangle (a,b) → (a',b) → (a',b') → (a,b') → (a,b) with context z fixed,
ρ = log R = log q_i(a'|b)/q_i(a|b) + log q_j(b'|a')/q_j(b|a') + log q_i(a|b')/q_i(a'|b') + log q_j(b|a)/q_j(b'|a).
Any positive joint gives ρ = 0; |ρ| > tol certifies incompatibility. At temperature τ, ρ_τ = ρ_1/τ.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .conditionals import ConditionalModel, as_temperatures, check_states, log_conditionals


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
    fields = [torch.as_tensor(t, device=contexts.device).long().flatten() for t in (r.i, r.j, r.a, r.a2, r.b, r.b2)]
    if any(f.numel() != R for f in fields):
        raise ValueError(f"every rectangle field needs one entry per context ({R}); got {[f.numel() for f in fields]}.")
    i, j, a, a2, b, b2 = fields
    if ((i < 0) | (i >= n) | (j < 0) | (j >= n)).any():
        raise ValueError(f"sites i, j must lie in [0, {n}).")
    if (i == j).any():
        raise ValueError("a rectangle needs two different sites: found i == j; draw j from the other sites.")
    support = model.support.to(contexts.device)
    for name, tok in (("a", a), ("a'", a2), ("b", b), ("b'", b2)):
        if ((tok < 0) | (tok >= model.vocab_size)).any() or not support[tok.clamp(0, model.vocab_size - 1)].all():
            raise ValueError(f"token {name} lies outside the model's support (vocabulary minus special/unused ids).")
    return contexts, i, j, a, a2, b, b2


@torch.inference_mode()
def rectangle_statistic(
    model: ConditionalModel,
    rects: Rectangles,
    temperature: float = 1.0,
    dtype: torch.dtype | None = torch.float32,
) -> torch.Tensor:
    """ρ = log R for each rectangle (float64, shape (R,)).

    The four conditionals are q_i(·|x_j=b), q_i(·|x_j=b'), q_j(·|x_i=a), q_j(·|x_i=a'); identical
    (state, site) queries, e.g. rectangles sharing (context, i, j, b), share one forward pass.
    Defaults to fp32 forwards: ρ can be smaller than bf16 rounding.
    """
    contexts, i, j, a, a2, b, b2 = _check(model, rects)
    R = contexts.shape[0]
    rows = torch.arange(R, device=contexts.device)

    def state(at_i: torch.Tensor, at_j: torch.Tensor) -> torch.Tensor:
        s = contexts.clone()
        s[rows, i], s[rows, j] = at_i, at_j
        return s

    # the queried site's own token is masked; fixing it lets equal queries dedupe
    states = torch.cat([state(a, b), state(a, b2), state(a, b), state(a2, b)])
    sites = torch.cat([i, i, j, j])
    queries, inverse = torch.unique(torch.cat([states, sites.unsqueeze(1)], 1), dim=0, return_inverse=True)
    tau = as_temperatures(temperature, queries.shape[0], contexts.device)
    logq = log_conditionals(model, queries[:, :-1], queries[:, -1], tau, dtype).to(torch.float64)[inverse]
    qi_b, qi_b2, qj_a, qj_a2 = logq.split(R)
    return (
        (qi_b[rows, a2] - qi_b[rows, a])
        + (qj_a2[rows, b2] - qj_a2[rows, b])
        + (qi_b2[rows, a] - qi_b2[rows, a2])
        + (qj_a[rows, b] - qj_a[rows, b2])
    )


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
    if n < 2 or top_k < 2 or per_passage < 1:
        raise ValueError(f"need length ≥ 2, top_k ≥ 2 and per_passage ≥ 1; got n={n}, top_k={top_k}, per_passage={per_passage}.")
    g = torch.Generator().manual_seed(seed)
    contexts = passages.repeat_interleave(per_passage, 0)
    R = contexts.shape[0]
    i = torch.randint(n, (R,), generator=g)
    j = (i + 1 + torch.randint(n - 1, (R,), generator=g)) % n
    logits = model.logits(torch.cat([contexts, contexts]), torch.cat([i, j]).to(contexts.device), dtype=torch.float32)
    top = logits.topk(top_k, dim=-1).indices.cpu()  # (2R, k)
    pick = torch.rand(2 * R, top_k, generator=g).argsort(-1)[:, :2]  # two distinct ranks per site
    tokens = top.gather(1, pick)
    (a, a2), (b, b2) = tokens[:R].T, tokens[R:].T
    return Rectangles(contexts.cpu(), i, j, a, a2, b, b2)
