"""Planted truths and planted nulls at a page's design: the data on which a check's power and size are measured.

Each function returns what a page's rule reads (coupling times, chains of a summary), drawn from a law whose
answer is known, at the page's own design (lengths, pairs, budget, chains, steps), so that `checks.calibrate`
can run the page's rule on replicates of it.
"""
from __future__ import annotations

import numpy as np
import torch

from . import exact
from .coupling import coupling_times
from .stats import law_function


def ising_coupling_samples(seed: int, replicates: int, lengths, pairs: int, budget: int, coupling: float = 1.0,
                           temperature: float = 2.0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`replicates` samples (n, times, met): coupled Glauber on the Ising chain from independent uniform starts,
    `pairs` per length, all replicates of a length in one batch.

    At high temperature path coupling contracts (δ = 1 − tanh(J/τ) > 0) and T ≈ (n/δ)·log(n/2): n log n with a
    lower-order linear term, the truth of the rule "not faster than n log n"."""
    per_length = []
    for n in lengths:
        g = torch.Generator().manual_seed(seed * 1009 + int(n))
        x0, y0 = (torch.randint(2, (replicates * pairs, int(n)), generator=g) for _ in range(2))
        res = coupling_times(exact.potts_chain(int(n), 2, coupling), x0, y0, budget, temperature,
                             seed=seed * 1_000_003 + 1009 * int(n) + torch.arange(replicates * pairs))
        per_length.append((res.times.numpy().reshape(replicates, pairs), res.met.numpy().reshape(replicates, pairs)))
    n = np.repeat(np.asarray(lengths, float), pairs)
    return [(n, np.concatenate([t[r] for t, _ in per_length]).astype(float),
             np.concatenate([m[r] for _, m in per_length])) for r in range(replicates)]


def replant_law(n, times, met, law: str, budget: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same pairs with each length's times multiplied so that the per-length medians follow `law` exactly
    (fixed at the middle length): another growth law with the same spread. Times past `budget` become censored."""
    n, times, met = np.asarray(n, float), np.asarray(times, float), np.asarray(met, bool)
    lengths = np.unique(n)
    medians = np.array([np.median(np.where(met, times, np.inf)[n == m]) for m in lengths])
    if not np.isfinite(medians).all():
        raise ValueError("replant_law needs a finite median at every length: raise the planted truth's budget.")
    mid = len(lengths) // 2
    target = medians[mid] * law_function(law)(lengths) / law_function(law)(lengths[mid])
    factor = dict(zip(lengths, target / medians))
    new = np.round(times * np.vectorize(factor.get)(n))
    return n, np.minimum(new, budget), met & (new <= budget)


def not_faster_than_nlogn(sample, n_boot: int = 500, seed: int = 0) -> bool | None:
    """The rule of notebook 02 on (n, times, met): True when `stats.nlogn_curvature` finds no convexity in T/n
    against log n (one-sided 95 % bound ≤ 0), None when a median is censored."""
    from .stats import nlogn_curvature

    low = nlogn_curvature(*sample, n_boot=n_boot, seed=seed)["low"]
    return None if not np.isfinite(low) else bool(low <= 0)


def growth_rule_calibration(lengths, pairs: int, budget: int, replicates: int = 40, seed: int = 0,
                            null_law: str = "n^1.5"):
    """Power and size of `not_faster_than_nlogn` at a design (lengths, pairs per length, budget): power on the Ising
    chain at J/τ = 1/2, where T ≈ (n/δ)·log(n/2); size on the same times replanted to grow like `null_law`."""
    from .checks import Calibration

    samples = ising_coupling_samples(seed, replicates, lengths, pairs, budget, coupling=1.0, temperature=2.0)
    truth = [not_faster_than_nlogn(s) for s in samples]
    power = np.mean([t is True for t in truth])
    # a replicate with a censored median (the rule says None) has no median to replant: it counts as not passing
    size = np.mean([t is not None and not_faster_than_nlogn(replant_law(*s, null_law, budget)) is True
                    for s, t in zip(samples, truth)])
    on = (f"Ising chain (J/τ = 1/2, n log n) / its times replanted as {null_law}; {pairs} pairs at n = "
          f"{', '.join(str(int(n)) for n in lengths)}")
    return Calibration(float(power), float(size), replicates, on)
