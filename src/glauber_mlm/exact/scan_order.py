"""Exact Glauber transition matrices of small models, and the scan order's footprint on the stationary law.

Site kernel: P_i(x, x') = q_i^τ(x'_i | x_{−i}) if x' agrees with x off site i, else 0. Random scan moves by
P_R = (1/n) Σ_i P_i; a systematic sweep by P_S = P_0 P_1 ⋯ P_{n−1}. For compatible conditionals both leave the
joint π invariant; for incompatible ones their stationary laws π_R and π_S differ, and the scan order leaves a
footprint TV(π_R, π_S) (`scan_footprint`). States are indexed as `calibration.state_index` (base q, the order of
`PairwiseModel.joint`). Enumeration costs q^n states squared: small toys only (`MAX_STATES`). The kernels use the
model's own conditionals (float32 logits), so a compatible model's footprint is ~1e-7, not 0.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from .calibration import state_index
from ..validate import as_temperatures, check_int
from ..conditionals import conditional_probabilities

MAX_STATES = 4096


def all_states(n: int, q: int) -> torch.Tensor:
    """Every state of n sites with q values, (q^n, n), in base-q order."""
    n, q = check_int("n", n, 1), check_int("q", q, 2)
    if q**n > MAX_STATES:
        raise ValueError(f"{q}^{n} = {q**n} states is too many to enumerate transition matrices (at most "
                         f"{MAX_STATES}): use a smaller toy (fewer sites or states).")
    return torch.tensor(list(itertools.product(range(q), repeat=n)), dtype=torch.int64)


def _size(model) -> tuple[int, int]:
    n = getattr(model, "n", None) or int(model.max_length)
    return int(n), int(model.vocab_size)


@torch.inference_mode()
def site_conditionals(model, site: int, temperature: float = 1.0) -> np.ndarray:
    """q_i^τ(v | x_{−i}) for every state x (rows, base-q order) at `site`: (q^n, q) float64."""
    n, q = _size(model)
    site = check_int("site", site, 0, n - 1)
    states = all_states(n, q)
    S = states.shape[0]
    tau = as_temperatures(temperature, S, states.device)
    return conditional_probabilities(model, states, torch.full((S,), site), tau).cpu().numpy()


def neighbours(n: int, q: int, site: int) -> np.ndarray:
    """(q^n, q): the index of x with x_site set to v, for every state x and value v."""
    states = all_states(n, q)
    stride = q ** (n - 1 - site)
    base = state_index(states, q).numpy()
    return base[:, None] + (np.arange(q)[None, :] - states[:, site].numpy()[:, None]) * stride


def site_kernel(model, site: int, temperature: float = 1.0) -> np.ndarray:
    """P_i: the (q^n, q^n) transition matrix of one Glauber update at `site`, float64."""
    n, q = _size(model)
    probs, to = site_conditionals(model, site, temperature), neighbours(n, q, site)
    P = np.zeros((q**n, q**n))
    np.add.at(P, (np.arange(q**n)[:, None].repeat(q, 1), to), probs)
    return P


def glauber_kernel(model, temperature: float = 1.0, scan: str = "random") -> np.ndarray:
    """One step of random scan, P_R = (1/n) Σ_i P_i, or one sweep of systematic scan, P_S = P_0 P_1 ⋯ P_{n−1}."""
    n, _ = _size(model)
    kernels = [site_kernel(model, i, temperature) for i in range(n)]
    if scan == "random":
        return sum(kernels) / n
    if scan == "systematic":
        P = kernels[0]
        for K in kernels[1:]:
            P = P @ K
        return P
    raise ValueError(f"scan must be 'random' or 'systematic', got {scan!r}.")


def stationary_law(P: np.ndarray) -> np.ndarray:
    """The π with π P = π, Σ π = 1, of an irreducible stochastic matrix (least squares on [Pᵀ − I; 1ᵀ])."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or not np.allclose(P.sum(1), 1.0) or (P < -1e-12).any():
        raise ValueError(f"P must be a square stochastic matrix (rows ≥ 0 summing to 1), got shape {P.shape}.")
    S = P.shape[0]
    A = np.vstack([P.T - np.eye(S), np.ones((1, S))])
    b = np.zeros(S + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def laws_over_time(model, init_law, steps: int, temperature: float = 1.0, scan: str = "random") -> np.ndarray:
    """π_t = π_0 P_{s_1} ⋯ P_{s_t} for t = 0 … steps, (steps + 1, q^n): random scan averages the site,
    systematic scan updates site (t − 1) mod n at step t, as `sampling.choose_sites` does."""
    n, q = _size(model)
    steps = check_int("steps", steps, 0)
    law = np.asarray(init_law, dtype=float)
    if law.shape != (q**n,) or (law < 0).any() or not np.isclose(law.sum(), 1.0):
        raise ValueError(f"init_law must be a probability vector over the {q**n} states (base-q order), "
                         f"got shape {law.shape} summing to {law.sum():.3g}.")
    if scan == "random":
        kernels = [glauber_kernel(model, temperature, "random")]
    elif scan == "systematic":
        kernels = [site_kernel(model, i, temperature) for i in range(n)]
    else:
        raise ValueError(f"scan must be 'random' or 'systematic', got {scan!r}.")
    out = [law]
    for t in range(steps):
        law = law @ kernels[t % len(kernels)]
        out.append(law)
    return np.stack(out)


def tv(p, q) -> float:
    """½ Σ |p − q|."""
    return float(0.5 * np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def scan_footprint(model, temperature: float = 1.0) -> dict[str, float]:
    """TV between the random-scan stationary law π_R and the systematic scan's laws, by enumeration.

    `sweep`: TV(π_R, π_S) with π_S the law at sweep boundaries (stationary for P_0 ⋯ P_{n−1});
    `averaged`: TV(π_R, π̄_S) with π̄_S = (1/n) Σ_k π_S P_0 ⋯ P_{k−1}, the law a time average over every step of a
    systematic chain estimates; `reversed`: TV(π_S, π_S') against the reverse sweep P_{n−1} ⋯ P_0.
    All are 0 (to rounding) for compatible conditionals, whose joint every scan leaves invariant."""
    n, _ = _size(model)
    kernels = [site_kernel(model, i, temperature) for i in range(n)]
    pi_r = stationary_law(sum(kernels) / n)
    fwd = kernels[0]
    for K in kernels[1:]:
        fwd = fwd @ K
    bwd = kernels[-1]
    for K in kernels[-2::-1]:
        bwd = bwd @ K
    pi_s, pi_b = stationary_law(fwd), stationary_law(bwd)
    phases, law = [pi_s], pi_s
    for K in kernels[:-1]:
        law = law @ K
        phases.append(law)
    return dict(sweep=tv(pi_r, pi_s), averaged=tv(pi_r, np.mean(phases, 0)), reversed=tv(pi_s, pi_b))
