"""The two conditions of the theorems, measured: Dobrushin influence and local margins.

Influence of site j on site i: α_ij = sup_{x, y differing only at j} TV(q_i^τ(·|x_{-i}), q_i^τ(·|y_{-i})).
If max_i Σ_j α_ij ≤ 1 − δ, path coupling gives mixing in O(n log n). The sup is over all of V^n,
so a maximum over sampled contexts and replacement tokens is a LOWER bound on α_ij. An UPPER bound holds for
every context at once where the head ends in LayerNorm → Linear: the logit change at site i when anything else
changes has oscillation ≤ osc (`head_oscillation_bound`), and TV of two softmaxes whose logits differ by h is
≤ tanh(osc(h)/4τ), so Σ_j α_ij ≤ (n−1)·tanh(osc/4τ) and the true crossing τ* ≤ osc / (4·artanh(1/(n−1))).

Local margin at site i of x: top-1 minus top-2 logit of ℓ_i(·|x_{-i}); a basin whose sites all sit at
their argmax with margin ≥ m is left only through tokens of probability ≤ (V−1)e^{−m/τ}.
"""
from __future__ import annotations

import math

import torch

from ..conditionals import ConditionalModel, checked_logits, total_variation
from ..validate import check_dtype, check_int, check_states, check_temperatures
from ..rng import check_seed
from ..samplers.driver import counted


def _all_site_logits(model: ConditionalModel, states: torch.Tensor, dtype: torch.dtype | None, chunk: int) -> torch.Tensor:
    """ℓ_i(·|x_{-i}) for every site of every state: (B, n, V), in chunks of `chunk` rows."""
    B, n = states.shape
    rows = states.repeat_interleave(n, 0)
    sites = torch.arange(n, device=states.device).repeat(B)
    out = [checked_logits(model, rows[k : k + chunk], sites[k : k + chunk], dtype) for k in range(0, B * n, chunk)]
    return torch.cat(out).view(B, n, -1)


@torch.inference_mode()
def influence_matrix(
    model: ConditionalModel,
    contexts: torch.Tensor,
    temperatures: list[float] | torch.Tensor,
    replacements: int = 4,
    top_k: int = 50,
    seed: int = 0,
    dtype: torch.dtype | str | None = torch.float32,
    chunk: int = 256,
    progress: bool = False,
) -> torch.Tensor:
    """Lower bound on α_ij per context: α[c, t, i, j] = max over sampled y_j of TV(q_i^τ(·|x), q_i^τ(·|x with x_j=y_j)).

    Replacement tokens y_j ≠ x_j come from the top-k of ℓ_j(·|x) (the tokens a chain would
    actually move to). `temperatures` is a grid: every τ applies to every context (index t of α).
    Logits do not depend on τ, so one pass serves every temperature. Take the
    max over contexts for the sup, or keep contexts apart for intervals (see `stats`).
    Cost: C · n · (1 + replacements · n) conditionals.
    """
    contexts = check_states(model, contexts)
    replacements, seed, chunk = check_int("replacements", replacements, 1), check_seed(seed), check_int("chunk", chunk, 1)
    top_k = check_int("top_k", top_k, 1, int(model.support.sum()) - 1)  # candidates y_j ≠ x_j within the support
    taus, dtype = check_temperatures(temperatures).to(contexts.device), check_dtype(dtype)
    C, n = contexts.shape
    g = torch.Generator().manual_seed(seed)
    alpha = torch.zeros(C, taus.numel(), n, n)
    for c in counted(range(C), "influence", progress):
        x = contexts[c : c + 1]
        base = _all_site_logits(model, x, dtype, chunk)[0]  # (n, V)
        top = base.topk(top_k + 1, dim=-1).indices.cpu()  # candidates for y_j, per j
        base_logq = [torch.log_softmax(base / tau, -1) for tau in taus]
        for j in range(n):
            cand = top[j][top[j] != x[0, j].item()][:top_k]
            ys = cand[torch.randperm(cand.numel(), generator=g)[:replacements]]
            perturbed = x.repeat(ys.numel(), 1)
            perturbed[:, j] = ys.to(x.device)
            pert = _all_site_logits(model, perturbed, dtype, chunk)  # (r, n, V)
            for t, tau in enumerate(taus):
                tv = total_variation(base_logq[t], torch.log_softmax(pert / tau, -1))  # (r, n)
                alpha[c, t, :, j] = tv.max(0).values.cpu()
    return alpha


def head_oscillation_bound(model: object) -> float | None:
    """sup over contexts x, x' and tokens v, w of (ℓ_v(x) − ℓ_v(x')) − (ℓ_w(x) − ℓ_w(x')) for a head ℓ = W(γ⊙z + β) + b
    with z a LayerNorm output (mean 0, ‖z‖ < √d): ≤ 4√d · max_v ‖P(W_v⊙γ) − mean‖ over the support (P removes the
    mean of a row); None for a model whose head is not LayerNorm → Linear (no bound known here)."""
    from ..models.hf import ROBERTA_LIKE

    inner = getattr(model, "model", None)
    kind = getattr(getattr(inner, "config", None), "model_type", None)
    if kind == "bert":
        norm, out = inner.cls.predictions.transform.LayerNorm, inner.cls.predictions.decoder
    elif kind in ROBERTA_LIKE:
        norm, out = inner.lm_head.layer_norm, inner.lm_head.decoder
    elif kind == "distilbert":
        norm, out = inner.vocab_layer_norm, inner.vocab_projector
    else:
        return None
    with torch.no_grad():
        a = (out.weight.float() * norm.weight.float())[model.support.to(out.weight.device)]
        a = a - a.mean(1, keepdim=True)  # z ⟂ 1: only the part of each row orthogonal to 1 moves a logit
        radius = (a - a.mean(0)).norm(dim=1).max().item()  # every pair of rows lies within 2·radius
    return 4.0 * math.sqrt(a.shape[1]) * radius


def crossing_upper_bound(oscillation: float | None, n: int) -> float:
    """τ above which (n−1)·tanh(osc/4τ) < 1, so Dobrushin's sum is below 1 in every context: osc / (4 artanh(1/(n−1)));
    0 at n = 2 (one neighbour: α < 1 at any τ), inf when no oscillation bound is known."""
    if oscillation is None or not math.isfinite(oscillation):
        return math.inf
    if n < 2:
        raise ValueError(f"a crossing needs at least two sites, got n = {n}.")
    return 0.0 if n == 2 else oscillation / (4.0 * math.atanh(1.0 / (n - 1)))


def total_influence(alpha: torch.Tensor) -> torch.Tensor:
    """Dobrushin's total influence max_i Σ_{j≠i} α_ij over the last two dimensions."""
    return alpha.sum(-1).max(-1).values


@torch.inference_mode()
def local_margins(model: ConditionalModel, states: torch.Tensor, dtype: torch.dtype | str | None = torch.float32,
                  chunk: int = 256) -> torch.Tensor:
    """Top-1 minus top-2 logit of ℓ_i(·|x_{-i}) at every site: (B, n), at τ = 1 (the margin at τ is m/τ)."""
    states, dtype = check_states(model, states), check_dtype(dtype)
    per = max(1, check_int("chunk", chunk, 1) // states.shape[1])
    margins = []
    for k in range(0, states.shape[0], per):
        top2 = _all_site_logits(model, states[k : k + per], dtype, chunk).topk(2, dim=-1).values
        margins.append((top2[..., 0] - top2[..., 1]).cpu())
    return torch.cat(margins)
