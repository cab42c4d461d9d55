"""Maximal coupling and coupled Glauber dynamics: coupling times bound the distance to stationarity.

Coupled step: both chains update the same site i; the new tokens come from the maximal coupling
of q_i^τ(·|x_{-i}) and q_i^τ(·|y_{-i}), so P(x_i' = y_i') = 1 − TV. T = min{t : X_t = Y_t} gives
d(t) ≤ P(T > t).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .checkpoint import Checkpointer, checkpointer
from .conditionals import (ConditionalModel, as_temperatures, check_dtype, check_int, check_memory, check_states,
                           conditional_probabilities)
from .rng import check_probabilities, sample_categorical, uniforms
from .sampling import (chain_seeds, check_scan, check_speculate, choose_sites, speculation_knee, speculation_width,
                       speculation_widths, update_change_rate, working_bytes)

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
    check_probabilities(p)
    check_probabilities(q)
    p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
    if u is None:
        u = torch.rand(p.shape[0], 3, generator=generator, dtype=torch.float64, device=p.device)
    overlap = torch.minimum(p, q)
    w = overlap.sum(-1)
    res_p, res_q = p - overlap, q - overlap
    # rounding can leave a residual of ~1e-16 where p == q: treat that as full overlap
    meet = (u[:, 0] < w) | (res_p.sum(-1) <= 1e-12) | (res_q.sum(-1) <= 1e-12)
    # each law is drawn only where it is used: the overlap on meeting rows, the residuals on the others
    x = torch.empty(p.shape[0], dtype=torch.int64, device=p.device)
    y = torch.empty_like(x)
    x[meet] = y[meet] = sample_categorical(overlap[meet], u[meet, 1])
    apart = ~meet
    x[apart] = sample_categorical(res_p[apart], u[apart, 1])
    y[apart] = sample_categorical(res_q[apart], u[apart, 2])
    return x, y


@dataclass
class CouplingResult:
    """Coupling time per pair; pairs that never met are censored at the budget."""

    times: torch.Tensor  # (P,) int64: the first step with X_t = Y_t, or `budget` where censored
    met: torch.Tensor  # (P,) bool: False where the pair had not met within the budget
    budget: int
    forward_rows: int  # conditionals evaluated in all (2 per active pair per step)


def check_pairs(model: ConditionalModel, x0, y0) -> tuple[torch.Tensor, torch.Tensor]:
    """Both starting batches checked (`check_states`) and of one shape (pairs, length)."""
    x, y = check_states(model, x0), check_states(model, y0)
    if x.shape != y.shape:
        raise ValueError(f"x0 and y0 must have one shape (pairs, length), got {tuple(x.shape)} and {tuple(y.shape)}.")
    return x, y


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
    speculate: int | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 500,
) -> CouplingResult:
    """Run coupled Glauber on pairs (x0[p], y0[p]) until they meet or `budget` steps pass.

    Met pairs leave the batch, so late steps cost only the pairs still apart. A pair's uniforms
    depend only on its seed (counter-based), never on which other pairs are still running; on a
    neural model the batched forward's rounding does (see `sampling` for what is guaranteed).
    `speculate = k > 1` evaluates each pair's next k sites ahead and consumes them up to the first
    step that changes x or y (exact, same coupling times as k = 1; see `glauber`); `forward_rows`
    then counts the discarded rows too. None: k chosen before every forward as in `glauber`.
    `checkpoint` (a file path) saves the run's state every `checkpoint_every` steps (of the slowest pair still
    apart) and at the end; a call with the same inputs resumes from it with the same result (see `checkpoint`).
    """
    check_scan(scan)
    budget, speculate, dtype = check_int("budget", budget, 1), check_speculate(speculate), check_dtype(dtype)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    x, y = (s.clone() for s in check_pairs(model, x0, y0))
    P, n = x.shape
    tau = as_temperatures(temperature, P, x.device, "pair")
    seeds = chain_seeds(seed, P).to(x.device)
    knee = speculation_knee(model, n, dtype) if speculate is None else 0.0
    k = speculate or max(speculation_widths(knee, 2 * P))
    check_memory(f"coupling_times ({P} pairs × {n} tokens)", 4 * P * n * 8, working_bytes(model, 2 * P * k), x.device,
                 "split the pairs into several calls (a pair's law does not depend on its batch), or "
                 "pass a smaller speculate.")
    times = torch.full((P,), budget, dtype=torch.int64)
    met = (x == y).all(1).cpu()
    times[met] = 0
    active = torch.nonzero(~met).flatten().to(x.device)
    ckpt = checkpointer(checkpoint, checkpoint_every, model=model, x0=x, y0=y, budget=budget, temperature=tau,
                        seed=seeds, scan=scan, dtype=dtype, speculate=speculate or "auto")
    if k > 1:
        return _speculative(model, x, y, budget, tau, seeds, scan, dtype, progress, speculate, knee, times, met,
                            active, ckpt)
    forward_rows, start = 0, 0
    if (saved := ckpt.resume()) is not None:
        x, y, times, met, active, forward_rows = _restore(saved, x.device)
        start = saved["step"]

    def snapshot(t: int) -> dict:
        return {"x": x.cpu(), "y": y.cpu(), "times": times, "met": met, "active": active.cpu(),
                "forward_rows": forward_rows}

    for t in tqdm(range(start, budget), initial=start, total=budget, disable=not progress, desc="coupling",
                  mininterval=2.0):
        if active.numel() == 0:
            break
        xa, ya, s = x[active], y[active], seeds[active]
        sites = choose_sites(s, t, n, scan)
        probs = conditional_probabilities(model, torch.cat([xa, ya]), sites.repeat(2), tau[active].repeat(2), dtype)
        forward_rows += 2 * active.numel()
        k = active.numel()
        u = torch.stack([uniforms(s, t, BRANCH_STREAM), uniforms(s, t, X_STREAM), uniforms(s, t, Y_STREAM)], 1)
        new_x, new_y = maximal_coupling(probs[:k], probs[k:], u)
        rows = torch.arange(k, device=x.device)
        xa[rows, sites], ya[rows, sites] = new_x, new_y
        x[active], y[active] = xa, ya
        now_met = (xa == ya).all(1)
        times[active[now_met].cpu()] = t + 1
        met[active[now_met].cpu()] = True
        active = active[~now_met]
        ckpt.maybe_save(t + 1, snapshot)
    ckpt.maybe_save(budget, snapshot, final=True)
    return CouplingResult(times, met, budget, forward_rows)


def _restore(saved: dict, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                                         torch.Tensor, int]:
    """(x, y, times, met, active, forward_rows) of a saved coupling run, the states and pairs on `device`."""
    return (saved["x"].to(device), saved["y"].to(device), saved["times"], saved["met"], saved["active"].to(device),
            int(saved["forward_rows"]))


def _speculative(model, x, y, budget, tau, seeds, scan, dtype, progress, fixed: int | None, knee: float, times, met,
                 active, ckpt: Checkpointer) -> CouplingResult:
    """`coupling_times` with k sites evaluated ahead per pair (`fixed`, or chosen before each forward as in
    `glauber`); pairs advance by different numbers of steps."""
    n, dev = x.shape[1], x.device
    done = torch.zeros(x.shape[0], dtype=torch.int64, device=dev)
    forward_rows, change_rate = 0, 0.5
    if (saved := ckpt.resume()) is not None:
        x, y, times, met, active, forward_rows = _restore(saved, dev)
        done, change_rate, knee = saved["done"].to(dev), saved["change_rate"], saved["knee"]

    def snapshot(t: int) -> dict:
        return {"x": x.cpu(), "y": y.cpu(), "times": times, "met": met, "active": active.cpu(),
                "forward_rows": forward_rows, "done": done.cpu(), "change_rate": change_rate, "knee": knee}

    bar = tqdm(total=budget, initial=int(done[active].min()) if active.numel() else budget, disable=not progress,
               desc="coupling", mininterval=2.0)
    while active.numel():
        A, t0 = active.numel(), done[active]
        k = fixed or speculation_width(knee, 2 * A, change_rate)
        ahead = torch.arange(k, device=dev)
        offs = t0.unsqueeze(1) + ahead
        valid = offs < budget
        s_rep = seeds[active].unsqueeze(1).expand(A, k)
        sites = choose_sites(s_rep.reshape(-1), offs.reshape(-1), n, scan).view(A, k)
        xa, ya = x[active], y[active]
        ra, ca = torch.nonzero(valid, as_tuple=True)
        V = ra.numel()
        probs = conditional_probabilities(model, torch.cat([xa[ra], ya[ra]]), sites[ra, ca].repeat(2),
                                tau[active][ra].repeat(2), dtype)
        forward_rows += 2 * V
        sv, tv = s_rep[ra, ca], offs[ra, ca]
        u = torch.stack([uniforms(sv, tv, BRANCH_STREAM), uniforms(sv, tv, X_STREAM), uniforms(sv, tv, Y_STREAM)], 1)
        dx, dy = maximal_coupling(probs[:V], probs[V:], u)
        cur_x, cur_y = xa.gather(1, sites), ya.gather(1, sites)
        new_x, new_y = cur_x.clone(), cur_y.clone()
        new_x[ra, ca], new_y[ra, ca] = dx, dy
        changed = ((new_x != cur_x) | (new_y != cur_y)) & valid
        any_change = changed.any(1)
        first = changed.int().argmax(1)
        used = torch.where(any_change, first + 1, valid.sum(1))
        cr = torch.nonzero(any_change).flatten()
        at = sites[cr, first[cr]]
        xa[cr, at], ya[cr, at] = new_x[cr, first[cr]], new_y[cr, first[cr]]
        x[active], y[active] = xa, ya
        before = int(done[active].min())
        done[active] = t0 + used
        change_rate = update_change_rate(change_rate, int(any_change.sum()), int(used.sum()))
        now_met = (xa == ya).all(1)
        times[active[now_met].cpu()] = (t0 + used)[now_met].cpu()
        met[active[now_met].cpu()] = True
        active = active[~now_met & (done[active] < budget)]
        if active.numel():
            bar.update(max(0, int(done[active].min()) - before))
            ckpt.maybe_save(int(done[active].min()), snapshot)
    bar.close()
    ckpt.maybe_save(budget, snapshot, final=True)
    return CouplingResult(times, met, budget, forward_rows)
