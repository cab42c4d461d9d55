"""Basin-free twins: Glauber chains on independent sites at a chain's own token-change rate (notebook 03's null).

A product law π(x) = Π_i p_i(x_i) has no basins: random-scan Glauber redraws site i from p_i whatever the other
sites hold, so it mixes once every site has been visited (about n log n steps). Under it a step changes the token
with probability ρ(p) = (1/n) Σ_i (1 − Σ_v p_i(v)²) at stationarity; the twin of a chain tempers its site laws,
p_i ∝ p_i^β, to the β at which ρ equals the chain's measured change rate.
"""
from __future__ import annotations

import numpy as np
import torch

from ..validate import check_int


def _normalised(log_laws: np.ndarray) -> np.ndarray:
    return log_laws - np.logaddexp.reduce(log_laws, axis=-1, keepdims=True)


def stationary_change_rate(log_laws) -> np.ndarray:
    """ρ = (1/n) Σ_i (1 − Σ_v p_i(v)²): the share of Glauber steps that change a token at stationarity of the
    product law with log p_i(v) = log_laws[..., i, v]: (..., n, V) → (...)."""
    p = np.exp(_normalised(np.asarray(log_laws, dtype=float)))
    return (1 - (p ** 2).sum(-1)).mean(-1)


def tempered_to_rate(log_laws, rates, iterations: int = 80) -> np.ndarray:
    """Each chain's site laws tempered, log p_i^β − log Z, at the β (bisection on a log scale over [10⁻³, 10⁴]) at
    which its stationary change rate equals rates[b] (rate 0: β = 10⁴, each site at its mode): log_laws (B, n, V) →
    normalised (B, n, V). A rate the laws cannot reach (a chain that changed a token at nearly every step; no product
    law over V tokens changes more than 1 − 1/V of them) gets the flattest law, β = 10⁻³: the nearest basin-free twin,
    slower than its chain (`stationary_change_rate` of the result says how much)."""
    log_laws = np.asarray(log_laws, dtype=float)
    rates = np.asarray(rates, dtype=float)
    if log_laws.ndim != 3 or rates.shape != log_laws.shape[:1]:
        raise ValueError(f"need log_laws (B, n, V) and one rate per chain, got {log_laws.shape} and {rates.shape}.")
    log_laws = np.where(np.isfinite(log_laws), log_laws, -np.inf)
    if not ((rates >= 0) & (rates <= 1)).all():
        raise ValueError(f"rates are shares of steps that changed a token: each in [0, 1], got {rates.tolist()}.")
    lo, hi = np.full(rates.shape, 1e-3), np.full(rates.shape, 1e4)
    for _ in range(check_int("iterations", iterations, 1)):
        mid = np.sqrt(lo * hi)
        fast = stationary_change_rate(mid[:, None, None] * log_laws) > rates  # too flat: sharpen
        lo, hi = np.where(fast, mid, lo), np.where(fast, hi, mid)
    return _normalised(np.sqrt(lo * hi)[:, None, None] * log_laws)


def independent_site_chains(rng: np.random.Generator, log_laws, x0, steps: int, record_every: int
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Random-scan Glauber on the product law of `log_laws` (B, n, V) from x0 (B, n), recorded every `record_every`
    steps from step 0: (states (R, B, n), recorded steps). Exact in law at the records: between two records each
    site's visits are multinomial(k, 1/n), and a visited site holds its last visit's draw from p_i."""
    log_laws = _normalised(np.asarray(log_laws, dtype=float))
    x = np.array(x0, dtype=np.int64, copy=True)
    B, n, V = log_laws.shape
    if x.shape != (B, n) or x.min(initial=0) < 0 or x.max(initial=0) >= V:
        raise ValueError(f"x0 must be (B={B}, n={n}) token ids in [0, {V}), got shape {x.shape}.")
    recorded = np.arange(0, check_int("steps", steps, 1) + 1, check_int("record_every", record_every, 1))
    cdf = np.cumsum(np.exp(log_laws), -1)
    out = [x.copy()]
    for k in np.diff(recorded):
        b, i = np.nonzero(rng.multinomial(k, np.full(n, 1 / n), size=B))
        u = rng.random(b.size) * cdf[b, i, -1]
        x[b, i] = np.minimum((cdf[b, i] < u[:, None]).sum(-1), V - 1)
        out.append(x.copy())
    return np.stack(out), recorded


def model_site_laws(model, states, temperature: float = 1.0, dtype=None) -> np.ndarray:
    """log q_i^τ(v | x_{-i}) of `model` at every site of each state: (B, n) → (B, n, V) float64, one forward per
    (state, site). The laws a basin-free twin of a chain from that state draws from (before tempering)."""
    from ..conditionals import log_conditionals
    from ..validate import as_temperatures, check_states

    states = check_states(model, torch.as_tensor(states)).cpu()
    B, n = states.shape
    rows = states.repeat_interleave(n, 0).to(model.device)
    sites = torch.arange(n).repeat(B).to(model.device)
    logp = log_conditionals(model, rows, sites, as_temperatures(float(temperature), B * n, model.device), dtype)
    return logp.double().cpu().numpy().reshape(B, n, -1)


def basin_free_twins(model, starts, rates, steps: int, record_every: int, copies: int = 4, temperature: float = 1.0,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`copies` basin-free twins of each chain: Glauber on independent sites from the chain's start starts[b], site
    i's law the model's conditional at the start (`model_site_laws` at `temperature`) tempered to the chain's measured
    change rate rates[b] (`tempered_to_rate`). Returns (states (R, copies·B, n), copy c of chain b at column c·B + b;
    the recorded steps; each chain's twins' stationary change rate (B,), below rates[b] where no twin reaches it)."""
    starts = torch.as_tensor(starts)
    laws = tempered_to_rate(model_site_laws(model, starts, temperature), rates)
    states, recorded = independent_site_chains(np.random.default_rng(check_int("seed", seed, 0)),
                                               np.tile(laws, (copies, 1, 1)),
                                               np.tile(starts.cpu().numpy(), (check_int("copies", copies, 1), 1)),
                                               steps, record_every)
    return states, recorded, stationary_change_rate(laws)
