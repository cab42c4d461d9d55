"""Maximal coupling and coupled Glauber dynamics: coupling times bound the distance to stationarity.

Coupled step: both chains update the same site i; the new tokens come from the maximal coupling
of q_i^τ(·|x_{-i}) and q_i^τ(·|y_{-i}), so P(x_i' = y_i') = 1 − TV. T = min{t : X_t = Y_t} gives
d(t) ≤ P(T > t).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from .conditionals import ConditionalModel, as_temperatures, check_states, log_conditionals
from .rng import sample_categorical, uniforms
from .sampling import chain_seeds, check_scan, choose_sites

BRANCH_STREAM, X_STREAM, Y_STREAM = 2, 3, 4


def maximal_coupling(p: torch.Tensor, q: torch.Tensor, u: torch.Tensor | None = None,
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw (X, Y) with X ~ p, Y ~ q row-wise and P(X = Y) = Σ_v min(p_v, q_v) = 1 − TV(p, q).

    With probability w = Σ min(p, q) both take one draw from min(p, q)/w; otherwise X and Y come
    from the residuals (p − min)/(1 − w) and (q − min)/(1 − w), which have disjoint supports.
    `u` (B × 3 uniforms: branch, X, Y) makes the draw a pure function of u; else `generator` is used.
    """
    if p.shape != q.shape or p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(f"p and q must be non-empty (B, V) tensors of one shape, got {tuple(p.shape)} and {tuple(q.shape)}.")
    p, q = p.to(torch.float64), q.to(torch.float64)
    p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
    if u is None:
        u = torch.rand(p.shape[0], 3, generator=generator, dtype=torch.float64, device=p.device)
    overlap = torch.minimum(p, q)
    w = overlap.sum(-1)
    res_p, res_q = p - overlap, q - overlap
    # rounding can leave a residual of ~1e-16 where p == q: treat that as full overlap
    meet = (u[:, 0] < w) | (res_p.sum(-1) <= 1e-12) | (res_q.sum(-1) <= 1e-12)
    common = sample_categorical(overlap, u[:, 1])
    x = torch.where(meet, common, sample_categorical(res_p, u[:, 1]))
    y = torch.where(meet, common, sample_categorical(res_q, u[:, 2]))
    return x, y


@dataclass
class CouplingResult:
    """Coupling time per pair; pairs that never met are censored at the budget."""

    times: torch.Tensor  # (P,) int64: the first step with X_t = Y_t, or `budget` where censored
    met: torch.Tensor  # (P,) bool: False where the pair had not met within the budget
    budget: int
    forward_rows: int  # conditionals evaluated in all (2 per active pair per step)


@torch.inference_mode()
def coupling_times(
    model: ConditionalModel,
    x0: torch.Tensor,
    y0: torch.Tensor,
    budget: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    scan: str = "random",
    dtype: torch.dtype | None = None,
    progress: bool = False,
) -> CouplingResult:
    """Run coupled Glauber on pairs (x0[p], y0[p]) until they meet or `budget` steps pass.

    Met pairs leave the batch, so late steps cost only the pairs still apart. A pair's draws
    depend only on its seed (counter-based), never on which other pairs are still running.
    """
    check_scan(scan)
    x, y = check_states(model, x0).clone(), check_states(model, y0).clone()
    if x.shape != y.shape:
        raise ValueError(f"x0 and y0 must have one shape (pairs, length), got {tuple(x.shape)} and {tuple(y.shape)}.")
    if budget < 1:
        raise ValueError(f"budget must be ≥ 1 step, got {budget}.")
    P, n = x.shape
    tau = as_temperatures(temperature, P, x.device)
    seeds = chain_seeds(seed, P).to(x.device)
    times = torch.full((P,), budget, dtype=torch.int64)
    met = (x == y).all(1).cpu()
    times[met] = 0
    active = torch.nonzero(~met).flatten().to(x.device)
    forward_rows = 0
    for t in tqdm(range(budget), disable=not progress, desc="coupling", mininterval=2.0):
        if active.numel() == 0:
            break
        xa, ya, s = x[active], y[active], seeds[active]
        sites = choose_sites(s, t, n, scan)
        logp = log_conditionals(model, torch.cat([xa, ya]), sites.repeat(2), tau[active].repeat(2), dtype)
        forward_rows += 2 * active.numel()
        k = active.numel()
        u = torch.stack([uniforms(s, t, BRANCH_STREAM), uniforms(s, t, X_STREAM), uniforms(s, t, Y_STREAM)], 1)
        new_x, new_y = maximal_coupling(logp[:k].exp(), logp[k:].exp(), u)
        rows = torch.arange(k, device=x.device)
        xa[rows, sites], ya[rows, sites] = new_x, new_y
        x[active], y[active] = xa, ya
        now_met = (xa == ya).all(1)
        times[active[now_met].cpu()] = t + 1
        met[active[now_met].cpu()] = True
        active = active[~now_met]
    return CouplingResult(times, met, budget, forward_rows)
