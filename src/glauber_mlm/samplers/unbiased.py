"""Unbiased estimates of π(h) from L-lag coupled Glauber chains (Jacob, O'Leary & Atchadé 2020, arXiv 1708.03625).

X_0, Y_0 independent draws from π_0; X runs `lag` = L steps alone, then (X_t, Y_{t−L}) move coupled (same site, the
maximal coupling of the two conditionals: `kernels.coupled_step`) until they meet at τ = min{t ≥ L : X_t = Y_{t−L}};
they stay equal after (a met pair's two conditionals coincide, so the coupling draws one token for both), and X alone
runs on to step m. Then

    H_{k:m} = (1/(m−k+1)) Σ_{t=k}^{m} h(X_t) + Σ_{t=k+L}^{τ−1} v_t (h(X_t) − h(Y_{t−L})),
    v_t = (⌊(t−k)/L⌋ − ⌈max(L, t−m)/L⌉ + 1) / (m−k+1)

has E[H_{k:m}] = π(h) exactly, for every k ≤ m (the first sum is the burnt-in time average, the second telescopes
its bias away). Replicates are independent, so their mean with a t-interval (`UnbiasedEstimate.interval`) is an
honest confidence interval for π(h) whatever the burn-in k. h is a batched function of states, (B, n) → (B,) or
(B, d): a basin's indicator (`in_states`), the PLL energy (`pll_energy`), the Hamming distance to a reference
(`hamming_to`), or one column per state of a small chain (`state_indicators`), whose estimate is the signed measure
that estimates the law itself.

Cost per replicate in conditionals evaluated: L (lag) + 2(τ − L) (coupled) + max(0, m − τ) (X alone).
Randomness: the lag phase draws from `lag_coupling`'s derived seeds, the coupled phase from each pair's own seed
(as `lag_coupling` does, so its τ are this run's), X alone after meeting from seeds of its own stream.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..conditionals import ConditionalModel
from ..exact.calibration import state_index
from ..validate import as_temperatures, check_dtype, check_int, check_real
from .coupling import check_pairs
from .kernels import CoupledState, GlauberState, coupled_step, glauber_step
from .lag_coupling import LAG_STREAM, derived_seeds, exact_meeting_tail
from .metropolis import pseudo_log_likelihood
from .sampling import chain_seeds, check_scan
from ..exact.scan_order import laws_over_time

SOLO_STREAM = 25  # X after meeting; beside lag_coupling's 21 and tempering's 22–24

StateFunction = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class UnbiasedEstimate:
    """Per-replicate H_{k:m}, its two parts, meeting times and costs; censored replicates hold nan."""

    estimates: np.ndarray  # (P,) or (P, d): H_{k:m}
    time_average: np.ndarray  # the first sum of H_{k:m}: the burnt-in average of h(X_k … X_m)
    correction: np.ndarray  # the second sum: the bias correction, 0 where τ ≤ k + L
    meeting_times: np.ndarray  # (P,) τ = min{t ≥ L : X_t = Y_{t−L}}; L + budget where censored
    met: np.ndarray  # (P,) bool
    cost: np.ndarray  # (P,) conditionals evaluated: L + 2(τ − L) + max(0, m − τ)
    k: int
    m: int
    lag: int
    budget: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, low, high): mean ± t_{(1+level)/2, R−1} · sd/√R over the R met replicates, i.i.d. by construction."""
        level = check_real("level", level, 0, above=True, fix="e.g. 0.95.")
        if level >= 1:
            raise ValueError(f"level must be in (0, 1), got {level}: e.g. 0.95.")
        return t_interval(self.estimates[self.met], level)

    @property
    def inefficiency(self) -> np.ndarray:
        """E[cost] · Var(H_{k:m}) over the met replicates: the variance of the estimate per unit of cost, to set
        beside the plain chain's asymptotic variance σ²(h) (one conditional per step)."""
        return self.cost[self.met].mean() * self.estimates[self.met].var(0, ddof=1)


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) of i.i.d. rows: mean ± t_{(1+level)/2, R−1} · sd/√R, per column."""
    from scipy.stats import t as student

    values = np.asarray(values, dtype=float)
    R = values.shape[0]
    if R < 2:
        raise ValueError(f"an interval needs at least 2 met replicates, got {R}: run more replicates.")
    mean = values.mean(0)
    half = student.ppf(0.5 + level / 2, R - 1) * values.std(0, ddof=1) / math.sqrt(R)
    return mean, mean - half, mean + half


def lag_weights(t: np.ndarray, k: int, lag: int, m: int) -> np.ndarray:
    """v_t = (⌊(t−k)/L⌋ − ⌈max(L, t−m)/L⌉ + 1)/(m−k+1): the share of the lag-L estimators H_ℓ = h(X_ℓ) +
    Σ_{j≥1} (h(X_{ℓ+jL}) − h(Y_{ℓ+(j−1)L})), ℓ = k … m, whose sum holds the term at step t (those with ℓ ≡ t mod L,
    ℓ ≤ t − L). At L = 1 it is min(1, (t−k)/(m−k+1)); for L > 1 it is not min(1, ⌈(t−k)/L⌉/(m−k+1)), which would
    count every ℓ ≤ t − L rather than one in L. That weight (pierrejacob/unbiasedmcmc R/H_bar.R at 2fc5c5b, and
    commit 7b8466e here) is biased: on the Potts chain of tests/test_unbiased.py, π(h) = 0.277, it gave
    0.383 ± 0.011 (2 s.e., 20,000 replicates) at k = 0, m = 20, L = 8."""
    t = np.asarray(t, dtype=np.int64)
    count = (t - k) // lag + (-(np.maximum(lag, t - m)) // lag) + 1  # ⌈a/L⌉ = −⌊−a/L⌋
    return np.maximum(count, 0) / (m - k + 1)


def in_states(indices, q: int) -> StateFunction:
    """h(x) = 1 if the base-q index of x (`calibration.state_index`) is among `indices`, else 0: a basin's indicator
    on a small chain (e.g. `exact.greedy_basin`'s mask, as indices)."""
    chosen = torch.as_tensor(np.flatnonzero(indices) if np.asarray(indices).dtype == bool else indices).long()
    return lambda x: torch.isin(state_index(x.cpu(), q), chosen).double()


def state_indicators(q: int) -> StateFunction:
    """h(x) = e_{index(x)}, one column per state of a small chain: H_{k:m} is then a signed measure whose mean is π."""

    def h(x: torch.Tensor) -> torch.Tensor:
        index = state_index(x.cpu(), q)
        return torch.nn.functional.one_hot(index, q ** x.shape[1]).double()

    return h


def hamming_to(reference: torch.Tensor) -> StateFunction:
    """h(x) = Σ_i [x_i ≠ r_i]: the Hamming distance to one fixed sequence r (the same for every replicate)."""
    reference = torch.as_tensor(reference).long()
    return lambda x: (x != reference.to(x.device)).sum(-1).double()


def pll_energy(model: ConditionalModel, dtype: torch.dtype | None = None) -> StateFunction:
    """h(x) = −PLL(x) = −Σ_i log q_i^1(x_i | x_{−i}) (`metropolis.pseudo_log_likelihood`): n conditionals a state."""
    return lambda x: -pseudo_log_likelihood(model, x, dtype)


def _evaluate(h: StateFunction, states: torch.Tensor, width: int | None) -> np.ndarray:
    """h on a batch of states as float64 (B, d), checked: one finite row per state, `width` columns if known."""
    out = np.asarray(torch.as_tensor(h(states)).detach().cpu(), dtype=float)
    out = out[:, None] if out.ndim == 1 else out
    if out.ndim != 2 or out.shape[0] != states.shape[0] or (width is not None and out.shape[1] != width):
        raise ValueError(f"h must map (B, n) states to (B,) or (B, d) values, got shape {out.shape} for "
                         f"{states.shape[0]} states.")
    if not np.isfinite(out).all():
        raise ValueError("h gave a non-finite value: it must be a finite function of the state.")
    return out


@torch.inference_mode()
def unbiased(model: ConditionalModel, x0: torch.Tensor, y0: torch.Tensor, h: StateFunction, k: int, m: int,
             lag: int = 1, temperature: float | torch.Tensor = 1.0, seed: int | list[int] | torch.Tensor = 0,
             budget: int = 100_000, scan: str = "random", dtype: torch.dtype | None = None) -> UnbiasedEstimate:
    """H_{k:m} for each pair (x0[p], y0[p]) of independent draws from π_0 (module docstring), one Glauber step of all
    the pairs that still need one per forward. `budget`: coupled steps before a pair counts as not met (censored:
    its estimate is nan, and a warning says so, as a censored run would bias the mean); it does not cut short the
    met pairs' run to m. The cost of evaluating h is not counted (a table lookup, or n conditionals for the PLL)."""
    check_scan(scan)
    k, m = check_int("k", k, 0), check_int("m", m, 0)
    if m < k:
        raise ValueError(f"m = {m} must be ≥ k = {k}: H_{{k:m}} averages h(X_t) over k ≤ t ≤ m.")
    lag, budget, dtype = check_int("lag", lag, 1), check_int("budget", budget, 1), check_dtype(dtype)
    x, y = (s.clone() for s in check_pairs(model, x0, y0))
    P, n = x.shape
    if scan == "systematic" and lag % n:
        raise ValueError(f"a systematic scan visits site step mod n: with lag = {lag} not a multiple of n = {n}, X and "
                         f"Y would update different sites; use lag = {n} (or a multiple) or scan='random'.")
    tau = as_temperatures(temperature, P, x.device, "pair")
    seeds = chain_seeds(seed, P).to(x.device)
    lag_seeds = derived_seeds(seeds, 0, LAG_STREAM)
    solo_seeds = derived_seeds(seeds, 0, SOLO_STREAM)
    span = m - k + 1
    scalar = torch.as_tensor(h(x[:1])).ndim == 1  # (B,) values give (P,) estimates, (B, d) give (P, d)
    average = np.zeros((P, _evaluate(h, x[:1], None).shape[1]))
    correction = np.zeros_like(average)

    def add_average(t: int, states: torch.Tensor, rows: torch.Tensor) -> None:
        if k <= t <= m and rows.numel():
            average[rows.cpu().numpy()] += _evaluate(h, states, average.shape[1]) / span

    everyone = torch.arange(P, device=x.device)
    state = GlauberState(x, torch.zeros(P, dtype=torch.int64, device=x.device))
    for t in range(lag):
        add_average(t, state.x, everyone)
        state, _ = glauber_step(model, state, lag_seeds, tau, 1, scan, dtype)
    x = state.x
    met = (x == y).all(1)
    meeting = torch.where(met, lag, lag + budget).cpu()
    pair = CoupledState(x, y, torch.zeros(P, dtype=torch.int64, device=x.device), torch.nonzero(~met).flatten())
    t = lag
    while pair.active.numel() or t < m:
        if t == lag + budget:  # the pairs still apart are censored; the met ones run on to m
            pair = CoupledState(pair.x, pair.y, pair.done, pair.active[:0])
        apart = pair.active
        add_average(t, pair.x, everyone)
        if t >= k + lag and apart.numel():
            diff = _evaluate(h, pair.x[apart], average.shape[1]) - _evaluate(h, pair.y[apart], average.shape[1])
            correction[apart.cpu().numpy()] += lag_weights(t, k, lag, m) * diff
        alone = torch.nonzero(met).flatten() if t < m else everyone[:0]
        if apart.numel():
            pair, info = coupled_step(model, pair, seeds, tau, 1, scan, dtype)
            newly = info.pairs[info.met]
            met[newly] = True
            meeting[newly.cpu()] = t + 1
        if alone.numel():
            solo, _ = glauber_step(model, GlauberState(pair.x[alone], pair.done[alone]), solo_seeds[alone],
                                   tau[alone], 1, scan, dtype)
            xs, done = pair.x.clone(), pair.done.clone()
            xs[alone], done[alone] = solo.x, solo.done
            ys = pair.y.clone()
            ys[alone] = solo.x
            pair = CoupledState(xs, ys, done, pair.active)
        t += 1
    if t <= m:
        add_average(t, pair.x, everyone)
    met_np = met.cpu().numpy()
    estimates = average + correction
    if not met_np.all():
        warnings.warn(f"{int((~met_np).sum())} of {P} pairs had not met within the budget of {budget} coupled steps: "
                      "their estimates are nan (a censored run biases the mean); raise the budget.", stacklevel=2)
        estimates[~met_np] = np.nan
    squeeze = (lambda a: a[:, 0]) if scalar else (lambda a: a)
    tau_np = meeting.numpy()
    cost = lag + 2 * (tau_np - lag) + np.maximum(0, m - tau_np)
    return UnbiasedEstimate(squeeze(estimates), squeeze(average), squeeze(correction), tau_np, met_np, cost, k, m,
                            lag, budget)



def exact_meeting_law(model, init_law, lag: int, temperature: float = 1.0, scan: str = "random",
                      tol: float = 1e-12) -> np.ndarray:
    """P(τ = t), t = 0, 1, …, of `unbiased`'s meeting time on a small chain, from X_0, Y_0 i.i.d. ~ `init_law`:
    (X_L, Y_0) ~ (π_0 P^L) ⊗ π_0, then the absorbing coupled pair chain enumerated (`exact_meeting_tail`), so
    P(τ = L + s) = P(T > s − 1) − P(T > s), P(τ = L) = P(X_L = Y_0). Zero below L; the mass past the end is < tol."""
    lag = check_int("lag", lag, 1)
    init = np.asarray(init_law, dtype=float)
    laws = laws_over_time(model, init, lag + 1, temperature, scan)
    tail = exact_meeting_tail(model, np.outer(laws[lag], init), temperature, scan, tol)
    return np.concatenate([np.zeros(lag), [1.0 - tail[0]], -np.diff(tail)])
