"""Exact answers about a small chain: spectral gap, mixing time, Dobrushin influence, incompatibility, escape times,
and the distance between Glauber's law and the MH–PLL target.

Every function takes either a transition matrix P (S × S, dense or sparse: `kernel`, `scan_order.glauber_kernel`) or a
small model whose states can be enumerated (`scan_order.all_states`: a `PairwiseModel`, a `restricted.RestrictedModel`).
States are indexed in base q (`calibration.state_index`). Nothing here is estimated: a number is exact up to float
rounding (the model's float32 logits, float64 linear algebra). The functions of a model take `logits`, a
`logit_table(model)` already computed, so that one table serves a whole temperature grid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..validate import as_temperatures, check_int, check_real
from scipy import sparse
from scipy.sparse.linalg import eigs, splu

from .scan_order import _size, all_states, tv

__all__ = ["Incompatibility", "SpectralGap", "asymptotic_variance", "conditional_table", "distance_curve", "dobrushin_bound", "dobrushin_matrix",
           "greedy_basin", "incompatibility", "kernel", "logit_table", "mean_escape_time", "mixing_time", "pll_target_tv",
           "rectangle_ratios", "spectral_gap", "stationary", "total_influence"]


DENSE_EIGEN = 512  # up to this many states `spectral_gap` takes every eigenvalue densely, above it ARPACK's few


def _check_kernel(P) -> np.ndarray | sparse.csr_array:
    """P as a float64 stochastic matrix (rows ≥ 0 summing to 1): a dense array stays dense, a sparse one is CSR."""
    if sparse.issparse(P):
        P = sparse.csr_array(P, dtype=float)
        entries, sums = P.data, np.asarray(P.sum(1)).ravel()
    else:
        P = np.asarray(P, dtype=float)
        entries, sums = P, P.sum(-1)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or (entries < -1e-12).any() or not np.allclose(sums, 1.0):
        raise ValueError(f"P must be a square stochastic matrix (rows ≥ 0 summing to 1), got shape {P.shape}: "
                         "e.g. quantities.kernel(model, τ) or scan_order.glauber_kernel(model, τ).")
    return P


def _dense(P) -> np.ndarray:
    return P.toarray() if sparse.issparse(P) else P


def kernel(model, temperature: float = 1.0, scan: str = "random", logits: np.ndarray | None = None
           ) -> sparse.csr_array:
    """`scan_order.glauber_kernel` as a sparse matrix: P_i(x, x^(i←v)) = q_i^τ(v | x_{−i}); random scan
    P_R = (1/n) Σ_i P_i (S·(n(q − 1) + 1) non-zeros), systematic scan the sweep P_0 P_1 ⋯ P_{n−1}.

    `logits`: a `logit_table(model)` already computed (one table serves every τ)."""
    n, q = _size(model)
    p = np.exp(conditional_table(model, temperature, logits))  # (S, n, q)
    S = q**n
    rows = np.repeat(np.arange(S), q)
    sites = [sparse.csr_array((p[:, i].ravel(), (rows, _neighbour_index(n, q, i).ravel())), shape=(S, S))
             for i in range(n)]
    if scan == "random":
        return sum(sites[1:], sites[0]) / n
    if scan == "systematic":
        P = sites[0]
        for K in sites[1:]:
            P = P @ K
        return sparse.csr_array(P)
    raise ValueError(f"scan must be 'random' or 'systematic', got {scan!r}.")


def stationary(P) -> np.ndarray:
    """The π with πP = π, Σπ = 1, of an irreducible kernel: (Pᵀ − I)π = 0 with one equation replaced by Σπ = 1,
    solved directly (sparse LU for a sparse P, dense LU once it is more than a tenth full)."""
    P = _check_kernel(P)
    S = P.shape[0]
    b = np.zeros(S)
    b[-1] = 1.0
    if sparse.issparse(P) and P.nnz < S * S / 10:
        A = sparse.vstack([(P.T - sparse.identity(S, format="csr"))[:-1], np.ones((1, S))]).tocsc()
        try:
            pi = splu(A).solve(b)
        except RuntimeError as err:
            raise ValueError("P is reducible (its stationary law is not unique): raise the temperature.") from err
    else:
        A = _dense(P).T - np.eye(S)
        A[-1] = 1.0
        pi = np.linalg.solve(A, b)
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def asymptotic_variance(P, h, pi=None) -> float:
    """σ²(h) = lim_T T·Var((1/T) Σ_t h(X_t)) of the stationary chain: 2 π(h̄ · Z h̄) − π(h̄²), h̄ = h − π(h), with
    Z = (I − P + 1π)^{−1} the fundamental matrix (Z h̄ = Σ_{t≥0} P^t h̄; any ergodic P, reversible or not).

    `h`: one value per state (S,); `pi` None: `stationary(P)`."""
    P = _check_kernel(P)
    S = P.shape[0]
    h = np.asarray(h, dtype=float)
    if h.shape != (S,) or not np.isfinite(h).all():
        raise ValueError(f"h must hold one finite value per state ({S}), got shape {h.shape}: e.g. a basin's "
                         "indicator as floats.")
    pi = stationary(P) if pi is None else np.asarray(pi, dtype=float)
    hbar = h - pi @ h
    A = _dense(P)
    g = np.linalg.solve(np.eye(S) - A + np.outer(np.ones(S), pi), hbar)
    return float(2 * pi @ (hbar * g) - pi @ hbar**2)


@dataclass(frozen=True)
class SpectralGap:
    """The absolute spectral gap of a kernel P: `gap` = 1 − λ*, λ* = max{|λ| : λ ≠ 1 an eigenvalue of P}, the
    second-largest eigenvalue modulus. It is defined for any P, reversible or not (an MLM's chain never is exactly);
    for a reversible random-scan Glauber kernel, whose eigenvalues lie in [0, 1], it is the usual 1 − λ_2.
    `reversible`: detailed balance π_x P_xy = π_y P_yx holds to 1e-9 of the largest flow."""

    gap: float
    reversible: bool

    @property
    def relaxation_time(self) -> float:
        """t_rel = 1 / gap (inf for a chain with another eigenvalue of modulus 1)."""
        return math.inf if self.gap <= 0 else 1.0 / self.gap


def spectral_gap(P, pi=None) -> SpectralGap:
    """1 − λ* of P (`SpectralGap`): every eigenvalue densely up to `DENSE_EIGEN` states (O(S³)), above it the four
    of largest modulus by ARPACK on the sparse P. `pi` None: `stationary(P)`."""
    P = _check_kernel(P)
    S = P.shape[0]
    pi = stationary(P) if pi is None else np.asarray(pi, dtype=float)
    if S <= DENSE_EIGEN or S < 8:
        eig = np.linalg.eigvals(_dense(P))
    else:
        eig = eigs(sparse.csr_array(P).T, k=4, which="LM", return_eigenvectors=False, tol=1e-12)
    top = np.argmin(np.abs(eig - 1.0))  # the eigenvalue 1 of the stationary law
    slem = float(np.abs(np.delete(eig, top)).max()) if eig.size > 1 else 0.0
    flow = sparse.csr_array(P).multiply(pi[:, None]).tocsr() if sparse.issparse(P) else pi[:, None] * P
    asym = abs(flow - flow.T)
    reversible = bool(asym.max() <= 1e-9 * max(flow.max(), 1e-300))
    return SpectralGap(1.0 - slem, reversible)


def distance_curve(P, start, steps: int, reference=None) -> np.ndarray:
    """TV(μ P^t, ν P^t) for t = 0 … steps: μ the law of `start` (a state index or a law over states), ν that of
    `reference` (likewise; None: the stationary law π, so the curve is d(t) from `start`)."""
    P = _check_kernel(P)
    steps = check_int("steps", steps, 0)
    S = P.shape[0]

    def law(x) -> np.ndarray:
        if np.ndim(x) == 0:
            v = np.zeros(S)
            v[check_int("start", int(x), 0, S - 1)] = 1.0
            return v
        v = np.asarray(x, dtype=float)
        if v.shape != (S,) or (v < 0).any() or not np.isclose(v.sum(), 1.0):
            raise ValueError(f"a start law must be a probability vector over the {S} states, got shape {v.shape}.")
        return v

    mu = law(start)
    nu = stationary(P) if reference is None else law(reference)
    out = [tv(mu, nu)]
    for _ in range(steps):
        mu, nu = mu @ P, (nu if reference is None else nu @ P)
        out.append(tv(mu, nu))
    return np.array(out)


def _worst_distance(M: np.ndarray, pi: np.ndarray) -> float:
    """max_x TV(M(x, ·), π)."""
    return float(0.5 * np.abs(M - pi[None, :]).sum(1).max())


def mixing_time(P, eps: float = 0.25, start: int | None = None, pi=None, max_steps: int = 10**7) -> int:
    """t_mix(ε) = min{t : max_x TV(P^t(x, ·), π) ≤ ε}, or from the one state `start` (its index) when given.

    Both distances are non-increasing in t (μ ↦ μP contracts TV), so the worst start is found by doubling
    (P, P², P⁴, … until ≤ ε) then binary lifting on products of the stored powers: O(S³ log t_mix), dense; a named
    start by iterating its law, O(nnz(P) · t_mix). Refuses past `max_steps`."""
    P = _check_kernel(P)
    eps = check_real("eps", eps, 0, above=True, fix="e.g. 0.25, the usual t_mix.")
    if eps >= 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps}: TV is at most 1, so every t would do.")
    pi = stationary(P) if pi is None else np.asarray(pi, dtype=float)
    too_slow = f"d(t) > {eps} after {max_steps} steps: raise max_steps or the temperature."
    if start is not None:
        law = np.zeros(P.shape[0])
        law[check_int("start", start, 0, P.shape[0] - 1)] = 1.0
        for t in range(max_steps + 1):
            if tv(law, pi) <= eps:
                return t
            law = law @ P
        raise ValueError(too_slow)
    if _worst_distance(np.eye(P.shape[0]), pi) <= eps:
        return 0
    powers = [_dense(P)]  # P^(2^j)
    while _worst_distance(powers[-1], pi) > eps:
        if 2 ** len(powers) > max_steps:
            raise ValueError(too_slow)
        powers.append(powers[-1] @ powers[-1])
    if len(powers) == 1:  # d(0) > ε ≥ d(1)
        return 1
    # binary lifting: t = 2^(J−1) has d(t) > ε ≥ d(2^J); add 2^j, j = J−2 … 0, while d stays > ε
    t, M = 2 ** (len(powers) - 2), powers[-2]
    for j in range(len(powers) - 3, -1, -1):
        trial = M @ powers[j]
        if _worst_distance(trial, pi) > eps:
            M, t = trial, t + 2**j
    return t + 1


@torch.inference_mode()
def logit_table(model) -> np.ndarray:
    """ℓ_i(v | x_{−i}) for every state x (base-q order), site i and value v: (q^n, n, q) float64, τ-free."""
    n, q = _size(model)
    states = all_states(n, q)
    S = states.shape[0]
    return torch.stack([model.logits(states, torch.full((S,), i), dtype=None).double() for i in range(n)], 1).numpy()


def conditional_table(model, temperature: float = 1.0, logits: np.ndarray | None = None) -> np.ndarray:
    """log q_i^τ(v | x_{−i}) = log_softmax(ℓ_i / τ) for every state, site and value: (q^n, n, q) float64.

    `logits`: a `logit_table(model)` already computed (one table serves every τ)."""
    tau = float(as_temperatures(temperature, 1, torch.device("cpu"))[0])
    ell = logit_table(model) if logits is None else np.asarray(logits, dtype=float)
    z = ell / tau
    return z - np.logaddexp.reduce(z, axis=-1, keepdims=True)


def _neighbour_index(n: int, q: int, site: int) -> np.ndarray:
    """(q^n, q): the index of x with x_site set to v, for every state x (base-q order) and value v."""
    index = np.arange(q**n)
    stride = q ** (n - 1 - site)
    return index[:, None] + (np.arange(q)[None, :] - (index // stride % q)[:, None]) * stride


def dobrushin_matrix(model, temperature: float = 1.0, logits: np.ndarray | None = None) -> np.ndarray:
    """The exact α_ij = max over x, x' differing only at j of TV(q_i^τ(· | x_{−i}), q_i^τ(· | x'_{−i})): (n, n).

    The maximum runs over every state and every replacement value, so this is the supremum itself, not the lower
    bound `measures.influence_matrix` gives from sampled contexts; α_ii = 0."""
    n, q = _size(model)
    p = np.exp(conditional_table(model, temperature, logits))  # (S, n, q)
    alpha = np.zeros((n, n))
    for j in range(n):
        to = _neighbour_index(n, q, j)  # (S, q)
        diff = 0.5 * np.abs(p[to] - p[:, None]).sum(-1)  # (S, q, n): TV at every site i
        alpha[:, j] = diff.max((0, 1))
        alpha[j, j] = 0.0
    return alpha


def total_influence(alpha) -> float:
    """Dobrushin's total influence max_i Σ_j α_ij; below 1 it gives t_mix(ε) ≤ n log(n/ε) / (1 − α)."""
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 2 or alpha.shape[0] != alpha.shape[1]:
        raise ValueError(f"alpha must be an (n, n) influence matrix, got shape {alpha.shape}.")
    return float(alpha.sum(1).max())


def dobrushin_bound(n: int, alpha: float, eps: float = 0.25) -> float:
    """Path coupling's t_mix(ε) ≤ n log(n/ε) / (1 − α) for total influence α < 1 (design notes §5); inf for α ≥ 1."""
    n, eps = check_int("n", n, 1), check_real("eps", eps, 0, above=True, fix="e.g. 0.25.")
    return math.inf if alpha >= 1 else n * math.log(n / eps) / (1 - alpha)


@dataclass(frozen=True)
class Incompatibility:
    """Every rectangle's ρ_τ at τ, its largest |ρ_τ|, and the footprint TV(π_R, π_S) of the scan order."""

    rho: np.ndarray  # ρ_τ of every rectangle (i < j, context z, a < a', b < b')
    max_abs_rho: float
    scan_tv: float  # TV between the random-scan law and the systematic-scan law at sweep boundaries


def rectangle_ratios(model, temperature: float = 1.0, logits: np.ndarray | None = None) -> np.ndarray:
    """ρ_τ = log R of every rectangle: sites i < j, every context z of the other sites, values a < a', b < b'.

    With D(a, b) = log q_i(a | b, z) − log q_j(b | a, z): ρ = −(D(a,b) − D(a,b') − D(a',b) + D(a',b')), the
    log product of the four conditional ratios around (a,b) → (a',b) → (a',b') → (a,b') (design notes §3)."""
    n, q = _size(model)
    if n < 2:
        raise ValueError("a rectangle needs two sites: this model has one.")
    logq = conditional_table(model, temperature, logits)
    index = np.arange(q**n)
    ai, bi = np.triu_indices(q, 1)
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            si, sj = q ** (n - 1 - i), q ** (n - 1 - j)
            base = index[(index // si % q == 0) & (index // sj % q == 0)]  # contexts z, with x_i = x_j = 0
            at = base[:, None, None] + np.arange(q)[:, None] * si + np.arange(q)[None, :] * sj  # (Z, a, b)
            D = logq[at, i, np.arange(q)[:, None]] - logq[at, j, np.arange(q)[None, :]]  # (Z, a, b)
            a, a2, b, b2 = ai[:, None], bi[:, None], ai[None, :], bi[None, :]
            rho = -(D[:, a, b] - D[:, a, b2] - D[:, a2, b] + D[:, a2, b2])  # (Z, pairs a<a', pairs b<b')
            out.append(rho.ravel())
    return np.concatenate(out)


def incompatibility(model, temperature: float = 1.0, logits: np.ndarray | None = None, law=None) -> Incompatibility:
    """Every rectangle's ρ_τ (`rectangle_ratios`) and the scan order's footprint TV(π_R, π_S) between the random-scan
    law and the systematic sweep's (`scan_order.scan_footprint`'s "sweep"): both 0, to rounding, exactly when the
    conditionals have a joint law. `law`: π_R when already computed."""
    ell = logit_table(model) if logits is None else np.asarray(logits, dtype=float)
    rho = rectangle_ratios(model, temperature, ell)
    law = stationary(kernel(model, temperature, "random", ell)) if law is None else law
    sweep = stationary(kernel(model, temperature, "systematic", ell))
    return Incompatibility(rho, float(np.abs(rho).max()), tv(law, sweep))


def mean_escape_time(P, basin) -> np.ndarray:
    """E_x[T_out], T_out = min{t : X_t ∉ B}, for every x in the basin B (in index order): (I − P_BB) h = 1.

    `basin`: a boolean mask over the states or their indices. Refused where the chain cannot leave B."""
    P = _check_kernel(P)
    basin = np.asarray(basin)
    if basin.dtype == bool:
        if basin.shape != (P.shape[0],):
            raise ValueError(f"a basin mask must have one entry per state ({P.shape[0]}), got shape {basin.shape}.")
        mask = basin.copy()
    else:
        mask = np.zeros(P.shape[0], dtype=bool)
        mask[basin.astype(np.int64)] = True
    if not mask.any() or mask.all():
        raise ValueError(f"the basin must hold some states and leave some out, got {int(mask.sum())} of {mask.size}.")
    m = int(mask.sum())
    try:
        if sparse.issparse(P):
            h = splu((sparse.identity(m, format="csc") - P[mask][:, mask]).tocsc()).solve(np.ones(m))
        else:
            h = np.linalg.solve(np.eye(m) - P[np.ix_(mask, mask)], np.ones(m))
    except (np.linalg.LinAlgError, RuntimeError):  # singular: some state of B cannot leave it
        h = np.full(m, np.inf)
    if not np.isfinite(h).all() or (h < 0).any():
        raise ValueError("the chain cannot leave this basin from some of its states (a closed set at this τ): the "
                         "escape time is infinite; choose a basin with an exit or a temperature > 0.")
    return h


def greedy_basin(model, start: int = 0, logits: np.ndarray | None = None) -> tuple[int, np.ndarray]:
    """The greedy state g and its basin: the states whose greedy sweeps end at g.

    A greedy sweep sets x_i ← argmax_v ℓ_i(v | x_{−i}) for i = 0 … n−1 in turn (zero-temperature systematic scan;
    argmax is the same at every τ > 0, so there is no τ). Repeated from a state it stops at a fixed point (every
    site at its argmax) or cycles (incompatible conditionals can). g is the fixed point reached from `start` (index;
    0 is the top-1 candidate at every site under `candidate_sets`); basin: (q^n,) bool, the states whose sweeps
    reach g. Refused where the sweeps from `start` cycle."""
    n, q = _size(model)
    best = (logit_table(model) if logits is None else np.asarray(logits)).argmax(-1)  # (S, n)
    S = q**n
    start = check_int("start", start, 0, S - 1)
    powers = q ** np.arange(n - 1, -1, -1)
    x = (np.arange(S)[:, None] // powers) % q  # every state's digits
    for _ in range(S + 1):
        before = x @ powers
        for i in range(n):
            x[:, i] = best[x @ powers, i]
        after = x @ powers
        if (before == after).all():
            break
    fixed = (best[after] == x).all(1)  # a fixed point: every site holds its argmax
    g = int(after[start])
    if not fixed[start]:
        raise ValueError(f"greedy sweeps from state {start} cycle without reaching a fixed point: these conditionals "
                         "have no greedy state from there; pick another start.")
    return g, (after == g) & fixed


def pll_target_tv(model, temperature: float = 1.0, law=None, logits: np.ndarray | None = None) -> float:
    """TV(π_G, π_PLL) between Glauber's stationary law at τ and the MH–PLL target π_PLL ∝ exp(PLL(x)/τ),
    PLL(x) = Σ_i log q_i^1(x_i | x_{−i}) (`metropolis.pseudo_log_likelihood`: τ = 1 conditionals).

    `law`: π_G when already computed (else `stationary(kernel(model, τ))`)."""
    n, q = _size(model)
    ell = logit_table(model) if logits is None else np.asarray(logits, dtype=float)
    logq1 = conditional_table(model, 1.0, ell)
    x = all_states(n, q).numpy()
    pll = logq1[np.arange(q**n)[:, None], np.arange(n)[None, :], x].sum(1)
    tau = float(as_temperatures(temperature, 1, torch.device("cpu"))[0])
    target = np.exp(pll / tau - np.logaddexp.reduce(pll / tau))
    if law is None:
        law = stationary(kernel(model, temperature, logits=ell))
    return tv(law, target)
