"""Chain states against a known joint law: the check that a sampler reaches the right stationary law.

States are indexed in base q (`state_index`), counted per chain (`chain_counts`: chains are the independent
units, steps are not), and compared with π by `stats.tv_null_test`, whose null is the TV of an i.i.d. sample;
`iid_tv` is that null's mean for a given sample size.
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


def iid_tv(law, size: int, reps: int = 200, seed: int = 0) -> float:
    """Mean TV between `law` and the frequencies of `size` independent draws from it: the floor any sampler meets."""
    law = np.asarray(law, dtype=float)
    rng = np.random.default_rng(seed)
    freq = rng.multinomial(size, law / law.sum(), size=reps) / size
    return float((0.5 * np.abs(freq - law).sum(-1)).mean())
