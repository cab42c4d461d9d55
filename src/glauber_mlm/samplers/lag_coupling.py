"""L-lag couplings (Biswas, Jacob & Vanetti 2019): an upper bound on d_TV(π_t, π) computed before a long run.

From X_0, Y_0 drawn independently from an initial law π_0, X runs L steps alone; then (X_{s}, Y_{s−L}) move
coupled (the same site and the maximal coupling of the two conditionals, `coupling.coupling_times`; coupled MH for
the MH sampler, `metropolis.mh_coupling_times`) until they meet at τ_L = min{s ≥ L : X_s = Y_{s−L}}. Over
independent runs,

    d_TV(π_t, π) ≤ E[max(0, ⌈(τ_L − L − t)/L⌉)]        (π_t: the law after t steps from π_0),

the number of non-zero terms of the telescoping sum Σ_{j≥1} h(X_{t+jL}) − h(Y_{t+(j−1)L}). The estimate is the
mean of i.i.d. terms, one per run; `tv_bound` gives it with a normal (CLT) interval for that mean. For small L the
terms are heavy-tailed (a rare long τ_L contributes ⌈(τ_L − L − t)/L⌉ at every t before it), so the estimate of a
small bound rests on few runs; a lag of the order of the mixing time makes the terms 0 or 1 and the interval honest
(Biswas et al. §3). `TVBound.steps_below(eps)` asks for at least 10/eps runs.
τ_L counts from the first s ≥ L, so a pair with X_L = Y_0 has τ_L = L (the paper's inf over s > L gives L + 1
there, a looser bound; both are valid, as a met pair stays met).

Randomness: the lag phase of pair p draws from seeds derived from its seed (`derived_seeds`), so it shares no
uniform with the coupled phase, which uses the pair's own seed exactly as `coupling_times` does.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ..validate import check_int, check_real
from .coupling import check_pairs, coupling_times
from .metropolis import metropolis, mh_coupling_times
from ..rng import uniforms
from .sampling import chain_seeds, check_scan, glauber
from ..exact.scan_order import (all_states, glauber_kernel, laws_over_time, neighbours, site_conditionals, site_kernel,
                         stationary_law)

LAG_STREAM = 21  # derives the lag phase's seeds; sampling, coupling and MH use streams 0–5
SAMPLERS = ("glauber", "mh")


def derived_seeds(seeds: torch.Tensor, counter: int, stream: int) -> torch.Tensor:
    """Fresh int64 seeds, one per seed: ⌊2^53 · u(seed, counter, stream)⌋ (`rng.uniforms`), unrelated to the input
    seeds' own streams; distinct (counter, stream) give independent seeds (up to 2^-53 collisions)."""
    return (uniforms(seeds, counter, stream) * float(1 << 53)).to(torch.int64)


@dataclass
class LagCoupling:
    """Meeting times τ_L of independent L-lag coupled runs; runs that had not met are censored."""

    meeting_times: np.ndarray  # (P,) int: τ_L = L + coupled steps to meet; L + budget where censored
    met: np.ndarray  # (P,) bool
    lag: int
    budget: int  # coupled steps allowed after the lag
    forward_rows: int  # conditionals evaluated, lag phase included

    @property
    def censored(self) -> int:
        return int((~self.met).sum())


@dataclass
class TVBound:
    """E[max(0, ⌈(τ_L − L − t)/L⌉)] against t, with a normal interval for the mean over independent runs."""

    t: np.ndarray
    bound: np.ndarray  # the Monte Carlo mean (a valid TV bound is this clipped at 1)
    low: np.ndarray
    high: np.ndarray
    contributing: np.ndarray  # runs with a non-zero term at each t: the interval means little where this is small
    level: float
    runs: int
    lag: int
    complete: bool  # False: some runs were censored, and every entry is then only a lower estimate of the bound

    def steps_below(self, eps: float) -> float:
        """The first t of the grid whose upper interval end is ≤ eps: the steps to run for d_TV ≤ eps.

        nan if there is none, if runs were censored, or if there are fewer than 10/eps runs: a bound of eps is a
        mean of rare non-zero terms, which fewer runs cannot resolve (the terms are heavy-tailed for small L)."""
        eps = check_real("eps", eps, 0, above=True, fix="e.g. 0.25 or 0.01.")
        ok = np.flatnonzero(self.high <= eps)
        if not ok.size or not self.complete or self.runs < 10 / eps:
            return float("nan")
        return float(self.t[ok[0]])


def lag_terms(meeting_times, lag: int, t) -> np.ndarray:
    """max(0, ⌈(τ_L − L − t)/L⌉) for every run (rows) and every t (columns), in exact integer arithmetic."""
    tau = np.asarray(meeting_times, dtype=np.int64)[:, None]
    t = np.asarray(t, dtype=np.int64)[None, :]
    return np.maximum(0, -((-(tau - lag - t)) // lag))  # ⌈a/L⌉ = −⌊−a/L⌋


def tv_bound(result: LagCoupling, t=None, level: float = 0.95) -> TVBound:
    """The L-lag bound on d_TV(π_t, π) at each t, with the normal interval mean ± z·sd/√P over the P runs.

    `t` None: 0, 1, …, up to the largest τ_L − L. The terms are i.i.d. across runs, so the CLT interval is for the
    mean itself (it is rough where few runs have non-zero terms; at t past every observed τ_L − L it is [0, 0]).
    With censored runs the terms are unknown from below: the entries use τ_L = L + budget, a lower estimate."""
    level = check_real("level", level, 0, above=True, fix="e.g. 0.95.")
    if level >= 1:
        raise ValueError(f"level must be in (0, 1), got {level}: e.g. 0.95.")
    if result.censored:
        warnings.warn(f"{result.censored} of {result.met.size} L-lag runs had not met within the budget of "
                      f"{result.budget} coupled steps: the bound is then only a lower estimate; raise the budget.",
                      stacklevel=2)
    if t is None:
        t = np.arange(int(result.meeting_times.max()) - result.lag + 1)
    t = np.asarray(t)
    if t.ndim != 1 or t.size == 0 or not np.issubdtype(t.dtype, np.integer) or (t < 0).any():
        raise ValueError("t must be a non-empty 1-d array of integer steps ≥ 0, e.g. np.arange(0, 1000, 10).")
    terms = lag_terms(result.meeting_times, result.lag, t).astype(float)
    P = terms.shape[0]
    mean = terms.mean(0)
    se = terms.std(0, ddof=1) / math.sqrt(P) if P > 1 else np.full_like(mean, np.inf)
    from scipy.stats import norm

    z = norm.ppf(0.5 + level / 2)
    return TVBound(t, mean, np.maximum(0.0, mean - z * se), mean + z * se, (terms > 0).sum(0), level, P,
                   result.lag, complete=result.censored == 0)


@torch.inference_mode()
def lag_coupling(model, x0: torch.Tensor, y0: torch.Tensor, lag: int, budget: int,
                 temperature: float | torch.Tensor = 1.0, seed: int | list[int] | torch.Tensor = 0,
                 sampler: str = "glauber", scan: str = "random", energy="pll", block: int = 1,
                 dtype: torch.dtype | None = None, progress: bool = False) -> LagCoupling:
    """L-lag coupled runs from the pairs (x0[p], y0[p]), which must be independent draws from π_0.

    X_p runs `lag` steps alone (`glauber`, or `metropolis` for sampler="mh"), then (X, Y) run coupled for at most
    `budget` steps (`coupling_times`, or `mh_coupling_times` with `energy` and `block`). τ_L = lag + coupled steps.
    `temperature`, `seed`: one for all pairs or one per pair. Systematic scan needs lag·block a multiple of n, so
    that X and Y use the same kernel at every coupled step."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}: 'glauber' (the MLM conditionals) or "
                         "'mh' (Metropolis–Hastings towards exp(−E/τ)).")
    check_scan(scan)
    lag, budget = check_int("lag", lag, 1), check_int("budget", budget, 1)
    block = check_int("block", block, 1)
    if sampler == "glauber" and block != 1:
        raise ValueError(f"block = {block} applies to sampler='mh' only (Glauber updates one site a step): pass "
                         "sampler='mh', or block=1.")
    x0, y0 = check_pairs(model, x0, y0)
    P, n = x0.shape
    if scan == "systematic" and (lag * block) % n:
        raise ValueError(f"a systematic scan visits site (step·block) mod n: with lag·block = {lag * block} not a "
                         f"multiple of n = {n}, X and Y would update different sites; use lag = {n} (or a multiple) "
                         "or scan='random'.")
    seeds = chain_seeds(seed, P)
    ahead = derived_seeds(seeds, 0, LAG_STREAM)
    if sampler == "glauber":
        xL = glauber(model, x0, lag, temperature, ahead, scan, record_every=lag, dtype=dtype).final
        rows = P * lag
        coupled = coupling_times(model, xL, y0, budget, temperature, seeds, scan, dtype, progress)
    else:
        traj = metropolis(model, x0, lag, temperature, ahead, energy, scan, record_every=lag, block=block, dtype=dtype)
        xL, rows = traj.final, traj.forward_rows
        coupled = mh_coupling_times(model, xL, y0, budget, temperature, seeds, energy, scan, block, dtype,
                                    progress=progress)
    return LagCoupling(lag + coupled.times.numpy(), coupled.met.numpy(), lag, budget, rows + coupled.forward_rows)


def _coupled_moves(model, site: int, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """For every pair (x, y) of states, flat index x·S + y: where one coupled update at `site` sends it, (S², q²)
    flat indices, and with what probability: the maximal coupling of q_site(·|x) and q_site(·|y)."""
    n, q = getattr(model, "n", None) or int(model.max_length), int(model.vocab_size)
    p = site_conditionals(model, site, temperature)  # (S, q)
    to = neighbours(n, q, site)  # (S, q)
    S = p.shape[0]
    px, py = p[:, None, :], p[None, :, :]  # (S, S, q)
    overlap = np.minimum(px, py)
    w = overlap.sum(-1, keepdims=True)
    apart = np.where(w < 1 - 1e-12, 1.0 / np.maximum(1 - w, 1e-300), 0.0)
    prob = (np.eye(q)[None, None] * overlap[..., :, None]
            + (px - overlap)[..., :, None] * (py - overlap)[..., None, :] * apart[..., None])  # (S, S, q, q)
    target = to[:, None, :, None] * S + to[None, :, None, :]  # (S, S, q, q)
    return target.reshape(S * S, q * q), prob.reshape(S * S, q * q)


def exact_meeting_tail(model, pair_law, temperature: float = 1.0, scan: str = "random", tol: float = 1e-10,
                       max_steps: int = 100_000, min_steps: int = 0) -> np.ndarray:
    """P(T > s), s = 0, 1, …, of the coupled steps T to meet from (X, Y) ~ `pair_law` (S × S: X's state, Y's), for
    the coupled chain of `coupling_times` (same site, maximal coupling) enumerated on all pairs of states; run until
    the unmet mass is below `tol` (and for at least `min_steps` steps). Systematic scan starts at site 0."""
    check_scan(scan)
    n, q = getattr(model, "n", None) or int(model.max_length), int(model.vocab_size)
    S = all_states(n, q).shape[0]  # refuses a chain too large to enumerate
    mass = np.asarray(pair_law, dtype=float).ravel().copy()
    if mass.shape != (S * S,) or (mass < 0).any() or not np.isclose(mass.sum(), 1.0):
        raise ValueError(f"pair_law must be a law over pairs of the {S} states, shape ({S}, {S}), got "
                         f"{np.shape(pair_law)}: e.g. np.outer(law_x, law_y).")
    moves = [_coupled_moves(model, i, temperature) for i in range(n)]
    diagonal = np.arange(S) * (S + 1)
    mass[diagonal] = 0.0
    tail = [mass.sum()]
    for s in range(max_steps):
        if tail[-1] < tol and len(tail) > min_steps:
            break
        sites = range(n) if scan == "random" else [s % n]
        new = np.zeros_like(mass)
        for i in sites:
            target, prob = moves[i]
            new += np.bincount(target.ravel(), weights=(mass[:, None] * prob).ravel(), minlength=S * S)
        mass = new / len(sites)
        mass[diagonal] = 0.0
        tail.append(mass.sum())
    else:
        raise ValueError(f"the coupled pairs had {tail[-1]:.2g} unmet mass after {max_steps} steps: this model mixes "
                         "too slowly to enumerate the meeting law; raise max_steps or the temperature.")
    return np.array(tail)


def exact_lag_bound(model, init_law, lag: int, steps: int, temperature: float = 1.0, scan: str = "random",
                    tol: float = 1e-10, max_steps: int = 100_000) -> dict[str, np.ndarray]:
    """The exact E[max(0, ⌈(τ_L − L − t)/L⌉)] and the exact d_TV(π_t, π), t = 0 … steps − 1, for a small model.

    Enumerates the coupled pair chain of `coupling_times` (same site, maximal coupling) on all pairs of states:
    (X_L, Y_0) ~ (π_0 P^L) ⊗ π_0, and the bound is Σ_{k≥0} P(T > t + kL) with T the coupled steps to meet (run
    until the unmet mass is below `tol`). π is the model's joint when it has one, else the stationary law of the
    random-scan kernel; systematic scan (L a multiple of n) compares π_t with the limit law of its phase t mod n.
    Returns t, bound, tv and the tail P(T > s)."""
    check_scan(scan)
    lag, steps = check_int("lag", lag, 1), check_int("steps", steps, 1)
    n = getattr(model, "n", None) or int(model.max_length)
    if scan == "systematic" and lag % n:
        raise ValueError(f"systematic scan needs lag a multiple of n = {n}, got {lag}.")
    init = np.asarray(init_law, dtype=float)
    laws = laws_over_time(model, init, lag + steps, temperature, scan)
    if getattr(model, "compatible", False):
        phases = [model.joint(temperature)[1].numpy()] * n
    elif scan == "random":
        phases = [stationary_law(glauber_kernel(model, temperature, "random"))] * n
    else:
        phases = [stationary_law(glauber_kernel(model, temperature, "systematic"))]
        for i in range(n - 1):
            phases.append(phases[-1] @ site_kernel(model, i, temperature))
    tv = np.array([0.5 * np.abs(laws[t] - phases[t % n]).sum() for t in range(steps)])
    tail = exact_meeting_tail(model, np.outer(laws[lag], init), temperature, scan, tol, max_steps, steps)
    bound = np.array([tail[t::lag].sum() for t in range(steps)])
    return dict(t=np.arange(steps), bound=bound, tv=tv, tail=tail)
