"""Chain states against a known joint law: the check that a sampler reaches the right stationary law.

TV(π̂, π) = ½ Σ_x |π̂(x) − π(x)| over all q^n states x, with π̂ the frequencies of recorded states and a
percentile bootstrap interval over independent chains (chains are the independent units, steps are not).
"""
from __future__ import annotations

import numpy as np
import torch


def state_index(states: torch.Tensor, q: int) -> torch.Tensor:
    """Base-q index Σ_i x_i q^{n−1−i} of each state (..., n): the order of `itertools.product` and `PairwiseModel.joint`."""
    n = states.shape[-1]
    weights = q ** torch.arange(n - 1, -1, -1, dtype=torch.int64)
    return (states.to(torch.int64) * weights).sum(-1)


def chain_counts(records: torch.Tensor, q: int) -> np.ndarray:
    """Visits of every state per chain: records (R, B, n) → counts (B, q^n)."""
    R, B, n = records.shape
    idx = state_index(records, q)  # (R, B)
    counts = torch.zeros(B, q**n, dtype=torch.float64)
    counts.scatter_add_(1, idx.T.contiguous(), torch.ones(B, R, dtype=torch.float64))
    return counts.numpy()


def law_tv(records: torch.Tensor, law, q: int, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(TV, low, high) between the visit frequencies of `records` (R, B, n) and `law` (q^n,), bootstrap over the B chains."""
    counts = chain_counts(records, q)
    law = np.asarray(law, dtype=float)
    if law.shape != (counts.shape[1],):
        raise ValueError(f"law has {law.size} entries, but {q}^{records.shape[-1]} = {counts.shape[1]} states were expected.")

    def tv(c: np.ndarray) -> np.ndarray:
        return 0.5 * np.abs(c / c.sum(-1, keepdims=True) - law).sum(-1)

    rng = np.random.default_rng(seed)
    B = counts.shape[0]
    weights = rng.multinomial(B, np.full(B, 1 / B), size=n_boot)  # (n_boot, B): chains drawn with replacement
    boots = tv(weights @ counts)
    tail = (1 - level) / 2
    return float(tv(counts.sum(0))), float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))


def iid_tv(law, size: int, reps: int = 200, seed: int = 0) -> float:
    """Mean TV between `law` and the frequencies of `size` independent draws from it: the floor any sampler meets."""
    law = np.asarray(law, dtype=float)
    rng = np.random.default_rng(seed)
    freq = rng.multinomial(size, law / law.sum(), size=reps) / size
    return float((0.5 * np.abs(freq - law).sum(-1)).mean())
