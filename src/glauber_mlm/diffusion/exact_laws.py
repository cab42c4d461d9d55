"""Exact output laws of masked-diffusion samplers, and the reference laws they are compared with, on a partial table.

Given z the sites move independently, so a `ProductStep` is the kernel K(z, z') = Π_i F_i(z, z'_i) on the (k+1)^n
partial states, with F_i(z, c) = u·p_i^τ(c | z), F_i(z, MASK) = 1 − u at a masked site and F_i(z, z_i) = 1 − σ,
F_i(z, MASK) = σ at a decoded one; a `CommitStep` is enumerated (every draw at the masked sites and the sites its
confidences commit). `plan_law` propagates the law of the fully masked state through a plan; its mass on the full
states (codes 1 … k) is the sampler's output law over y ∈ {0 … k−1}^n, in base-k order (`exact.all_states`).

Reference laws over y: the Glauber chain's stationary law π_G (`glauber_law`), a chain-rule law Π_t p_{o_t}(y_{o_t} |
y_{o_<t}) for one order o (`chain_rule_law`), its average over all n! orders by dynamic programming over subsets
(`any_order_law`), and the PLL random field ∝ Π_i p_i^τ(y_i | y_{−i}) (`pll_law`). They coincide when the
conditionals come from one joint law; on an MLM they do not.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch
from scipy import sparse

from .. import exact
from ..exact.restricted import digits
from .partial_table import OneMaskChain, PartialTable, partial_index, partial_states
from .plan import CommitStep, ProductStep, Step


def _codes(partial: PartialTable) -> np.ndarray:
    """The codes z_i + 1 of every partial state, ((k+1)^n, n)."""
    return (partial_states(partial.n, partial.k) + 1).numpy()


def _full_index(partial: PartialTable) -> np.ndarray:
    """The partial-state index of each full state y (base-k order)."""
    y = digits(torch.arange(partial.k**partial.n), partial.n, partial.k)
    return partial_index(y, partial.k).numpy()


def product_kernel(partial: PartialTable, unmask: float, remask: float, temperature: float = 1.0) -> np.ndarray:
    """K(z, z') = Π_i F_i(z, z'_i) of one `ProductStep` at τ, dense ((k+1)^n)²."""
    n, k = partial.n, partial.k
    p = partial.log_probs(temperature).exp().numpy()  # (S, n, k)
    codes = _codes(partial)
    S = codes.shape[0]
    F = np.zeros((S, n, k + 1))
    masked = codes == 0
    F[:, :, 0] = np.where(masked, 1 - unmask, remask)
    F[:, :, 1:] = np.where(masked[..., None], unmask * p, 0.0)
    rows, sites = np.nonzero(~masked)
    F[rows, sites, codes[rows, sites]] = 1 - remask
    K = F[:, 0, :]
    for i in range(1, n):
        K = (K[:, :, None] * F[:, i, None, :]).reshape(S, -1)
    return K


def commit_kernel(partial: PartialTable, commits: int, confidence: str, temperature: float = 1.0
                  ) -> sparse.csr_array:
    """The kernel of one `CommitStep` at τ: draws c_i ~ p_i^τ(· | z) at the masked sites M, the min(commits, |M|)
    of highest confidence kept (ties to the lower site), enumerated over every draw; "random": a uniform subset."""
    n, k = partial.n, partial.k
    logp = partial.log_probs(temperature).numpy()
    logp1 = partial.log_probs(1.0).numpy()
    codes = _codes(partial)
    S = codes.shape[0]
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    rows, cols, vals = [], [], []

    def add(z, target, w):
        rows.append(np.full(np.size(target), z))
        cols.append(np.atleast_1d(target))
        vals.append(np.atleast_1d(w))

    for z in range(S):
        M = np.flatnonzero(codes[z] == 0)
        if M.size == 0:
            add(z, z, 1.0)
            continue
        c = min(commits, M.size)
        draws = np.array(list(itertools.product(range(k), repeat=M.size)))  # (D, m)
        prob = np.exp(logp[z, M, draws].sum(1))
        if confidence == "random":
            subsets = [np.array(A) for A in itertools.combinations(range(M.size), c)]
            chosen = [(A, prob / len(subsets)) for A in subsets]
            for A, w in chosen:
                add(z, z + ((draws[:, A] + 1) * weights[M[A]]).sum(1), w)
            continue
        conf = np.exp((logp1 if confidence == "low_confidence" else logp)[z, M, draws])  # (D, m)
        top = np.argsort(-conf, axis=1, kind="stable")[:, :c]
        keep = np.zeros_like(conf, dtype=bool)
        np.put_along_axis(keep, top, True, axis=1)
        add(z, z + (np.where(keep, draws + 1, 0) * weights[M]).sum(1), prob)
    return sparse.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(S, S))


def product_step_law(partial: PartialTable, law: np.ndarray, unmask: float, remask: float, log_probs: np.ndarray
                     ) -> np.ndarray:
    """law · K of one `ProductStep` without forming K: site by site, each (source z, target so far) entry branches
    into its moves at that site (a masked site: stay, or c w.p. u·p_i(c | z); a decoded one: stay, or MASK w.p. σ),
    zero-weight branches dropped; about (2k+1)^n entries for MDLM and (3k+1)^n with remasking, not (k+1)^{2n}."""
    n, k = partial.n, partial.k
    codes = _codes(partial)
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    src = np.flatnonzero(law > 0)
    tgt, w = src.copy(), law[src]
    for i in range(n):
        masked = codes[src, i] == 0
        parts = []
        stay = np.where(masked, 1 - unmask, 1 - remask)
        parts.append((src, tgt, w * stay))
        if unmask > 0:
            m = np.flatnonzero(masked)
            for c in range(k):
                parts.append((src[m], tgt[m] + (c + 1) * weights[i], w[m] * unmask * np.exp(log_probs[src[m], i, c])))
        if remask > 0:
            dcd = np.flatnonzero(~masked)
            parts.append((src[dcd], tgt[dcd] - codes[src[dcd], i] * weights[i], w[dcd] * remask))
        src, tgt, w = (np.concatenate(a) for a in zip(*parts))
        keep = w > 0
        src, tgt, w = src[keep], tgt[keep], w[keep]
    return np.bincount(tgt, weights=w, minlength=law.size)


def step_kernel(partial: PartialTable, step: CommitStep, temperature: float = 1.0) -> sparse.csr_array:
    """The kernel of one commit step on the partial states (product steps are propagated by `product_step_law`)."""
    if isinstance(step, CommitStep):
        return commit_kernel(partial, step.commits, step.confidence, temperature)
    raise TypeError(f"a step with a kernel is a CommitStep, got {type(step).__name__}.")


def plan_law(partial: PartialTable, plan: list[Step], temperature: float = 1.0) -> np.ndarray:
    """The exact output law over full states y (base-k order) of `plan` run from the fully masked state."""
    S = (partial.k + 1) ** partial.n
    law = np.zeros(S)
    law[0] = 1.0
    log_probs = partial.log_probs(temperature).numpy()
    cache: dict[Step, sparse.csr_array] = {}
    for step in plan:
        if isinstance(step, ProductStep):
            law = product_step_law(partial, law, step.rates.unmask, step.rates.remask, log_probs)
            continue
        if step not in cache:
            cache[step] = step_kernel(partial, step, temperature)
        law = cache[step].T @ law
    full = law[_full_index(partial)]
    if abs(full.sum() - 1) > 1e-9:
        raise ValueError(f"the plan leaves mass {1 - full.sum():.3g} on partial states: its last step must unmask "
                         "every site.")
    return full / full.sum()


def glauber_law(partial: PartialTable, temperature: float = 1.0) -> np.ndarray:
    """π_G: the stationary law of random-scan Glauber on the one-mask conditionals (`exact.kernel`)."""
    return exact.stationary(exact.kernel(OneMaskChain(partial), temperature))


def _full_log_probs(partial: PartialTable, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """(log p^τ at every partial state, the full states y (k^n, n))."""
    return partial.log_probs(temperature).numpy(), digits(torch.arange(partial.k**partial.n), partial.n,
                                                          partial.k).numpy()


def chain_rule_law(partial: PartialTable, order, temperature: float = 1.0) -> np.ndarray:
    """Π_t p^τ_{o_t}(y_{o_t} | y at o_1 … o_{t−1}, masked elsewhere): the law of unmasking one site at a time in
    `order` (left to right: range(n))."""
    n, k = partial.n, partial.k
    order = [int(i) for i in order]
    if sorted(order) != list(range(n)):
        raise ValueError(f"order must be a permutation of the {n} sites, got {order}.")
    logp, y = _full_log_probs(partial, temperature)
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    index = np.zeros(y.shape[0], dtype=np.int64)
    logq = np.zeros(y.shape[0])
    for i in order:
        logq += logp[index, i, y[:, i]]
        index = index + (y[:, i] + 1) * weights[i]
    return np.exp(logq)


def any_order_law(partial: PartialTable, temperature: float = 1.0) -> np.ndarray:
    """(1/n!) Σ_o chain_rule_law(o): f(A) = (1/|A|) Σ_{i∈A} f(A∖i) p^τ_i(y_i | y_{A∖i}) over subsets A, f(∅) = 1."""
    n, k = partial.n, partial.k
    logp, y = _full_log_probs(partial, temperature)
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    f = np.zeros((1 << n, y.shape[0]))
    f[0] = 1.0
    for A in sorted(range(1, 1 << n), key=lambda a: bin(a).count("1")):
        members = [i for i in range(n) if A >> i & 1]
        for i in members:
            rest = A & ~(1 << i)
            index = sum((y[:, j] + 1) * weights[j] for j in members if j != i) if len(members) > 1 else 0
            f[A] += f[rest] * np.exp(logp[index, i, y[:, i]])
        f[A] /= len(members)
    return f[(1 << n) - 1]


def pll_law(partial: PartialTable, temperature: float = 1.0) -> np.ndarray:
    """The pseudo-likelihood random field ∝ Π_i p^τ_i(y_i | y_{−i})."""
    n, k = partial.n, partial.k
    logp, y = _full_log_probs(partial, temperature)
    full = _full_index(partial)
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    logq = sum(logp[full - (y[:, i] + 1) * weights[i], i, y[:, i]] for i in range(n))
    return np.exp(logq - np.logaddexp.reduce(logq))


def remask_kernel(partial: PartialTable, sites: int = 1, temperature: float = 1.0) -> np.ndarray:
    """The corrector on full states: mask a uniform set A of `sites` sites and unmask them at once from Π_{i∈A}
    p^τ_i(· | y with A masked). One site: random-scan Glauber, entry for entry. Dense (k^n)²."""
    n, k = partial.n, partial.k
    logp, y = _full_log_probs(partial, temperature)
    weights = (k + 1) ** np.arange(n - 1, -1, -1)
    kpow = k ** np.arange(n - 1, -1, -1)
    full = _full_index(partial)
    Y = y.shape[0]
    P = np.zeros((Y, Y))
    subsets = list(itertools.combinations(range(n), sites))
    for A in subsets:
        A = list(A)
        index = full - ((y[:, A] + 1) * weights[A]).sum(1)  # y with A masked
        base = (y * kpow).sum(1) - (y[:, A] * kpow[A]).sum(1)
        for draw in itertools.product(range(k), repeat=len(A)):
            w = np.exp(sum(logp[index, i, v] for i, v in zip(A, draw)))
            P[np.arange(Y), base + int((np.array(draw) * kpow[A]).sum())] += w / len(subsets)
    return P


def loop_phase_kernel(partial: PartialTable, alpha_on: float, sigma: float, temperature: float = 1.0) -> np.ndarray:
    """ReMDM-loop's frozen phase as a kernel on partial states: α held at α_on, remask σ, unmask σα_on/(1 − α_on)."""
    unmask = sigma * alpha_on / (1 - alpha_on)
    if not 0 <= unmask <= 1:
        raise ValueError(f"σ = {sigma} is above σ_max = (1 − α_on)/α_on = {(1 - alpha_on) / alpha_on:.4g}.")
    return product_kernel(partial, unmask, sigma, temperature)
