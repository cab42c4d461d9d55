"""Glauber and coupled Glauber as (init, step) kernels on a small state, in the style of blackjax.

A step evaluates each chain's next k sites on its current state in one batch and consumes them in order up to the
first one that changes a token (k = 1: one Glauber update x_i ~ q_i^τ(· | x_{−i}) per chain; k > 1 is exact too,
every conditional used saw the true current state). Uniforms are counter-based (`rng`): step t of a chain draws its
site and token at counter t of its seed, so any loop over `step` (a driver, an annealing schedule) that gives the same
temperatures follows the same trajectory. `sampling.glauber` and `coupling.coupling_times` are `driver.drive` over
these kernels; a user loop is a few lines:

    state = glauber_init(x0)
    for t in range(steps):
        state, info = glauber_step(model, state, seeds, temperature=schedule(t))
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..conditionals import ConditionalModel, conditional_probabilities
from ..validate import as_temperatures
from ..rng import (BRANCH_STREAM, SITE_STREAM, TOKEN_STREAM, X_STREAM, Y_STREAM, check_probabilities, sample_categorical,
                  uniforms)


def choose_sites(seeds: torch.Tensor, step: int | torch.Tensor, n: int, scan: str) -> torch.Tensor:
    """Random scan: i ~ Uniform{0..n−1} from the chain's seed; systematic scan: i = step mod n.

    `step` is one int, or one step per seed (chains that are at different steps)."""
    if scan == "random":
        return (uniforms(seeds, step, SITE_STREAM) * n).long().clamp_max(n - 1)
    if isinstance(step, torch.Tensor):
        return (step.to(seeds.device, torch.int64) % n).expand_as(seeds).clone()
    return torch.full_like(seeds, step % n)


@dataclass
class GlauberState:
    """B chains of Glauber dynamics: their states and the steps each has taken."""

    x: torch.Tensor  # (B, n) int64
    done: torch.Tensor  # (B,) int64


@dataclass
class GlauberInfo:
    """What one `glauber_step` did: chain `chains[a]` evaluated steps `steps[a]` and consumed the first `used[a]`."""

    chains: torch.Tensor  # (A,) the chains that stepped
    steps: torch.Tensor  # (A, k) the steps evaluated ahead
    sites: torch.Tensor  # (A, k) their sites
    changed: torch.Tensor  # (A, k) bool: whether that step changed the token (False past `used`)
    used: torch.Tensor  # (A,) steps consumed: to the first change, else every valid one
    before: torch.Tensor  # (A, n) the states before the step (after it: `state.x[chains]`)
    forward_rows: int  # conditionals evaluated


def glauber_init(x: torch.Tensor) -> GlauberState:
    """Chains at `x` (B × n), none of them stepped yet."""
    return GlauberState(x, torch.zeros(x.shape[0], dtype=torch.int64, device=x.device))


def consume(changed: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(any change, the first changing step or 0, the steps consumed) of k steps evaluated ahead per row."""
    any_change = changed.any(1)
    first = changed.int().argmax(1)
    return any_change, first, torch.where(any_change, first + 1, valid.sum(1))


def ahead(seeds: torch.Tensor, done: torch.Tensor, chains: torch.Tensor, k: int, n: int, scan: str,
          until: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Steps t0, …, t0 + k − 1 of each chain in `chains`: (steps, sites, which are < `until`, seeds), (A, k)."""
    A = chains.numel()
    steps = done[chains].unsqueeze(1) + torch.arange(k, device=done.device)
    valid = steps < until if until is not None else torch.ones_like(steps, dtype=torch.bool)
    s_rep = seeds[chains].unsqueeze(1).expand(A, k)
    return steps, choose_sites(s_rep.reshape(-1), steps.reshape(-1), n, scan).view(A, k), valid, s_rep


@torch.inference_mode()
def glauber_step(model: ConditionalModel, state: GlauberState, seeds: torch.Tensor,
                 temperature: float | torch.Tensor = 1.0, k: int = 1, scan: str = "random",
                 dtype: torch.dtype | None = None, until: int | None = None) -> tuple[GlauberState, GlauberInfo]:
    """One forward: x_{i_t} ~ q_{i_t}^τ(· | x_{−i_t}) for the next k steps t of each chain (seed `seeds[b]`) with
    fewer than `until` steps taken, consumed up to the first change."""
    x, done = state.x.clone(), state.done.clone()
    B, n = x.shape
    chains = torch.arange(B, device=x.device) if until is None else torch.nonzero(done < until).flatten()
    tau = as_temperatures(temperature, B, x.device)[chains]
    steps, sites, valid, s_rep = ahead(seeds, done, chains, k, n, scan, until)
    xa = x[chains]
    ra, ca = torch.nonzero(valid, as_tuple=True)
    probs = conditional_probabilities(model, xa[ra], sites[ra, ca], tau[ra], dtype)
    current = xa.gather(1, sites)  # (A, k): the token now at each site evaluated ahead
    new = current.clone()
    new[ra, ca] = sample_categorical(probs, uniforms(s_rep[ra, ca], steps[ra, ca], TOKEN_STREAM))
    changed = (new != current) & valid
    any_change, first, used = consume(changed, valid)
    before = xa.clone()
    cr = torch.nonzero(any_change).flatten()
    xa[cr, sites[cr, first[cr]]] = new[cr, first[cr]]
    x[chains] = xa
    done[chains] = steps[:, 0] + used
    keep = torch.arange(k, device=x.device) < used.unsqueeze(1)
    return GlauberState(x, done), GlauberInfo(chains, steps, sites, changed & keep, used, before, ra.numel())


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
class CoupledState:
    """Pairs of coupled Glauber chains: X and Y, the steps each pair has taken, the pairs still apart."""

    x: torch.Tensor  # (P, n) int64
    y: torch.Tensor  # (P, n) int64
    done: torch.Tensor  # (P,) int64
    active: torch.Tensor  # (A,) the pairs not met (nor past `until`)


@dataclass
class CoupledInfo:
    """What one `coupled_step` did: pair `pairs[a]` consumed `used[a]` steps and met where `met[a]`."""

    pairs: torch.Tensor  # (A,) the pairs that stepped
    used: torch.Tensor  # (A,)
    changed: torch.Tensor  # (A,) bool: whether X or Y changed a token
    met: torch.Tensor  # (A,) bool: X = Y after the step
    forward_rows: int  # conditionals evaluated (two per pair and step evaluated)


def coupled_init(x: torch.Tensor, y: torch.Tensor) -> CoupledState:
    """Pairs (x[p], y[p]); those with x[p] = y[p] have met already."""
    apart = torch.nonzero(~(x == y).all(1)).flatten()
    return CoupledState(x, y, torch.zeros(x.shape[0], dtype=torch.int64, device=x.device), apart)


@torch.inference_mode()
def coupled_step(model: ConditionalModel, state: CoupledState, seeds: torch.Tensor,
                 temperature: float | torch.Tensor = 1.0, k: int = 1, scan: str = "random",
                 dtype: torch.dtype | None = None, until: int | None = None) -> tuple[CoupledState, CoupledInfo]:
    """One forward of coupled Glauber over each pair's next k steps, consumed to the first change of X or Y: both
    chains update site i_t, their tokens drawn from the maximal coupling of q_i^τ(·|x_{−i}) and q_i^τ(·|y_{−i}).
    Met pairs (and those that reach `until`) leave `active`."""
    x, y, done, active = state.x.clone(), state.y.clone(), state.done.clone(), state.active
    n = x.shape[1]
    tau = as_temperatures(temperature, x.shape[0], x.device, "pair")[active]
    steps, sites, valid, s_rep = ahead(seeds, done, active, k, n, scan, until)
    xa, ya = x[active], y[active]
    ra, ca = torch.nonzero(valid, as_tuple=True)
    V = ra.numel()
    probs = conditional_probabilities(model, torch.cat([xa[ra], ya[ra]]), sites[ra, ca].repeat(2), tau[ra].repeat(2),
                                      dtype)
    sv, tv = s_rep[ra, ca], steps[ra, ca]
    u = torch.stack([uniforms(sv, tv, BRANCH_STREAM), uniforms(sv, tv, X_STREAM), uniforms(sv, tv, Y_STREAM)], 1)
    dx, dy = maximal_coupling(probs[:V], probs[V:], u)
    cur_x, cur_y = xa.gather(1, sites), ya.gather(1, sites)
    new_x, new_y = cur_x.clone(), cur_y.clone()
    new_x[ra, ca], new_y[ra, ca] = dx, dy
    any_change, first, used = consume(((new_x != cur_x) | (new_y != cur_y)) & valid, valid)
    cr = torch.nonzero(any_change).flatten()
    at = sites[cr, first[cr]]
    xa[cr, at], ya[cr, at] = new_x[cr, first[cr]], new_y[cr, first[cr]]
    x[active], y[active] = xa, ya
    done[active] = steps[:, 0] + used
    met = (xa == ya).all(1)
    left = ~met if until is None else ~met & (done[active] < until)
    return CoupledState(x, y, done, active[left]), CoupledInfo(active, used, any_change, met, 2 * V)
