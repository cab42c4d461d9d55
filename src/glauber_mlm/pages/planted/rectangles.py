"""Incompatibility checks (pages 00 and 01): certification, the influence correlation, the Arnold–Press residual, the
closed-form toys and the Ising influence, on planted pairwise models.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import exact


def certification_calibration(length: int, logit_std: float, contexts: int, per_passage: int, top_k: int,
                              tolerance: float, replicates: int = 20, q: int = 64, seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Wilson 95% lower bound of the share of rectangles with |ρ| above
    `tolerance` exceeds one half" at its design (contexts × rectangles per context, top-k tokens).

    Planted truth: random incompatible pairwise models (independent W_ij, W_ji) whose logits have the MLM's spread
    `logit_std`; planted null: compatible ones at the same spread (ρ = 0 up to float noise). A fresh model and fresh
    contexts per replicate."""
    from ..checks import calibrate
    from ...measures.rectangle import random_rectangles, rectangle_test
    from ...stats import proportion_ci

    def draw(rng: np.random.Generator, compatible: bool):
        s = int(rng.integers(2**31))
        model = (exact.compatible_pairwise(length, q, logit_std, seed=s) if compatible else
                 exact.incompatible_pairwise(length, q, scale=logit_std / (length - 1) ** 0.5, seed=s))
        ctx = torch.randint(q, (contexts, length), generator=torch.Generator().manual_seed(s))
        return rectangle_test(model, random_rectangles(model, ctx, per_passage, top_k=top_k, seed=s)).rho.abs().numpy()

    def rule(abs_rho: np.ndarray) -> bool:
        return proportion_ci(int((abs_rho > tolerance).sum()), abs_rho.size)[1] > 0.5

    return calibrate(rule, lambda rng: draw(rng, False), lambda rng: draw(rng, True), replicates, seed=seed,
                     null_replicates=null_replicates,
                     calibrated_on=(f"incompatible / compatible pairwise models (n = {length}, q = {q}, logit sd "
                                    f"{logit_std:.2g}), {contexts} × {per_passage} rectangles"))


def graded_pairwise(length: int, q: int, logit_std: float, seed: int) -> exact.PairwiseModel:
    """Incompatible pairwise model whose pairs differ in strength: W_ij = σ·s_ij·G_ij with s_ij = s_ji log-normal (sd 1
    on the log scale) and G i.i.d. normal, σ = logit_std / √((n−1)·e²) so that the logits have sd ≈ `logit_std`."""
    g = torch.Generator().manual_seed(seed)
    s = torch.triu(torch.exp(torch.randn(length, length, generator=g, dtype=torch.float64)), 1)
    sigma = logit_std / ((length - 1) * np.e**2) ** 0.5
    G = torch.randn(length, length, q, q, generator=g, dtype=torch.float64)
    return exact.PairwiseModel(sigma * (s + s.T)[:, :, None, None] * G)


def influence_rho_sample(rng: np.random.Generator, length: int, logit_std: float, contexts: int, per_passage: int,
                         top_k: int, context_sd: float, dependent: bool, q: int = 16
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(context, influence, |ρ|) of `contexts` × `per_passage` rectangles on a `graded_pairwise` model, every context
    at its own temperature τ_c = exp(context_sd·z_c): a context effect its rectangles share, as an MLM's do.

    dependent (planted truth): influence and |ρ| from the same model, both growing with s_ij and 1/τ_c. Otherwise
    (planted null) the influence is read on the same rectangles from an independent model at independent τ_c: the
    same spread and sharing within contexts, and no dependence between |ρ| and influence."""
    from ...measures.rectangle import random_rectangles, rectangle_test

    seeds = [int(s) for s in rng.integers(2**31, size=3)]
    model = graded_pairwise(length, q, logit_std, seeds[0])
    ctx = torch.randint(q, (contexts, length), generator=torch.Generator().manual_seed(seeds[1]))
    rects = random_rectangles(model, ctx, per_passage, top_k=top_k, seed=seeds[1])

    def taus() -> torch.Tensor:
        return torch.from_numpy(np.exp(context_sd * rng.standard_normal(contexts))).repeat_interleave(per_passage)

    res = rectangle_test(model, rects, temperature=taus())
    if not dependent:
        # the independent model reads each context with its sites relabelled at random (σ_c), so that rectangles of
        # different contexts on the same (i, j) share a pair strength only in |ρ|, as an MLM's contexts share none
        g = torch.Generator().manual_seed(seeds[2])
        perm = torch.stack([torch.randperm(length, generator=g) for _ in range(contexts)]).repeat_interleave(per_passage, 0)
        inv, rows = perm.argsort(1), torch.arange(contexts * per_passage)
        rects = type(rects)(rects.contexts.gather(1, perm), inv[rows, rects.i], inv[rows, rects.j], rects.a, rects.a2,
                            rects.b, rects.b2)
        res_other = rectangle_test(graded_pairwise(length, q, logit_std, seeds[2]), rects, temperature=taus())
    other = res if dependent else res_other
    return np.repeat(np.arange(contexts), per_passage), other.influence.numpy(), res.rho.abs().numpy()


def influence_correlation_calibration(length: int, logit_std: float, contexts: int, per_passage: int, top_k: int,
                                      context_sd: float, replicates: int = 20, q: int = 16, n_boot: int = 300,
                                      seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Spearman correlation of |ρ| with influence has a 95% lower bound > 0,
    resampling contexts" (`stats.spearman_ci`) at its design, on `influence_rho_sample` (truth: dependent; null: not)."""
    from ..checks import calibrate
    from ...stats import spearman_ci

    def rule(sample) -> bool:
        units, influence, abs_rho = sample
        return spearman_ci(influence, abs_rho, units, n_boot=n_boot)[1] > 0

    def draw(dependent: bool):
        return lambda rng: influence_rho_sample(rng, length, logit_std, contexts, per_passage, top_k, context_sd,
                                                dependent, q)

    return calibrate(rule, draw(True), draw(False), replicates, seed=seed,
                     null_replicates=null_replicates,
                     calibrated_on=(f"graded pairwise models (n = {length}, q = {q}, logit sd {logit_std:.2g}, context "
                                    f"sd of log τ {context_sd:.2f}), {contexts} × {per_passage} rectangles: influence "
                                    f"and |ρ| from one model / from independent ones"))


def residual_calibration(length: int, logit_std: float, pairs: int, k: int, tolerance: float, share: float = 0.9,
                         replicates: int = 10, q: int = 64, seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Arnold–Press residual RMS exceeds `tolerance` on at least `share` of
    the pairs" at its design (`pairs` pairs of sites, top-k candidates): planted truth random incompatible pairwise
    models with the MLM's logit spread, planted null compatible ones (fresh seeds: the tolerance was set on another)."""
    from ..checks import calibrate
    from ...measures.compatibility import compatibility_test, top_k_candidates

    def draw(compatible: bool):
        def sample(rng: np.random.Generator) -> np.ndarray:
            s = int(rng.integers(2**31))
            model = (exact.compatible_pairwise(length, q, logit_std, seed=s) if compatible else
                     exact.incompatible_pairwise(length, q, scale=logit_std / (length - 1) ** 0.5, seed=s))
            g = torch.Generator().manual_seed(s)
            ctx = torch.randint(q, (pairs, length), generator=g)
            i = torch.randint(length, (pairs,), generator=g)
            j = (i + 1 + torch.randint(length - 1, (pairs,), generator=g)) % length
            return compatibility_test(model, top_k_candidates(model, ctx, i, j, k)).rms.numpy()
        return sample

    return calibrate(lambda rms: bool((rms > tolerance).mean() >= share), draw(False), draw(True), replicates,
                     seed=seed, null_replicates=null_replicates,
                     calibrated_on=(f"incompatible / compatible pairwise models (n = {length}, q = {q}, logit sd "
                                    f"{logit_std:.2g}), {pairs} pairs, k = {k}"))


def closed_form_calibration(n: int, q: int, scale: float, rectangles: int, tolerance: float, error: float = 1e-3,
                            replicates: int = 20, seed: int = 0):
    """Power and size of notebook 00's rule "the measured ρ of an incompatible toy matches its closed form
    (`exact.exact_rectangle`) within `tolerance`" at its design (n sites, q states, `rectangles` rectangles from uniform
    contexts): planted truth, the closed form of the model measured; planted null, the closed form of a planted wrong
    model, the same W off by a relative `error` (a code that computes ρ that far from the truth)."""
    from ..checks import calibrate
    from ...measures.rectangle import random_rectangles, rectangle_test

    def draw(wrong: bool):
        def sample(rng: np.random.Generator) -> float:
            s = int(rng.integers(2**31))
            toy = exact.incompatible_pairwise(n, q, scale=scale, seed=s)
            ctx = torch.randint(q, (rectangles, n), generator=torch.Generator().manual_seed(s))
            rects = random_rectangles(toy, ctx, 1, top_k=q, seed=s)
            rho = rectangle_test(toy, rects).rho
            ref = exact.PairwiseModel(toy.W * (1 + error * torch.randn(toy.W.shape, generator=torch.Generator().manual_seed(s + 1),
                                                                       dtype=torch.float64))) if wrong else toy
            closed = exact.exact_rectangle(ref, rects.i, rects.j, rects.a, rects.a2, rects.b, rects.b2)
            return float((rho - closed).abs().max())
        return sample

    return calibrate(lambda err: bool(err < tolerance), draw(False), draw(True), replicates, seed=seed,
                     calibrated_on=(f"incompatible pairwise toys (n = {n}, q = {q}, {rectangles} rectangles): their own "
                                    f"closed form / that of the same W off by a relative {error:g}"))


def ising_influence_calibration(n: int, temperatures, coupling: float = 1.0, threshold: float = 1e-5,
                                error: float = 1e-3, replicates: int = 10, seed: int = 0):
    """Power and size of notebook 00's rule "the measured influence of the Ising chain (interior α, end α and total,
    over all 2^n contexts, `influence.influence_matrix`) equals tanh(J/τ)/2, tanh(J/2τ) and tanh(J/τ) within `threshold`"
    at its design (n sites, its temperatures): planted truth, chains with J drawn in [J/2, 2J] and the closed form at
    that J; planted null, the chain at J·(1 + `error`) against the closed form at J (a code that is off by that much)."""
    import itertools

    from ..checks import calibrate
    from ...measures.influence import influence_matrix, total_influence

    every = torch.tensor(list(itertools.product([0, 1], repeat=n)))
    taus = [float(t) for t in temperatures]
    mid = n // 2

    def largest_error(J: float, J_measured: float) -> float:
        alpha = influence_matrix(exact.potts_chain(n, 2, J_measured), every, taus, replacements=1, top_k=1).amax(0)
        return max(max(abs(alpha[t, mid, mid + 1].item() - np.tanh(J / tau) / 2),
                       abs(alpha[t, 0, 1].item() - np.tanh(J / (2 * tau))),
                       abs(total_influence(alpha[t]).item() - np.tanh(J / tau))) for t, tau in enumerate(taus))

    def draw(off: float):
        def sample(rng: np.random.Generator) -> float:
            J = coupling * float(np.exp(rng.uniform(np.log(0.5), np.log(2))))
            return largest_error(J, J * (1 + off))
        return sample

    return calibrate(lambda err: bool(err < threshold), draw(0.0), draw(error), replicates, seed=seed,
                     calibrated_on=(f"Ising chains (n = {n}, J in [{coupling / 2:g}, {2 * coupling:g}]): the closed "
                                    f"form at the chain's J / at J off by a relative {error:g}"))
