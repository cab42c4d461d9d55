"""Does a Monte Carlo sampler's output follow its exact law? Pearson's χ² of its draws over the full states
(`stats.chi2_counts_pvalue`; its size and power at a design: `stats.chi2_size_power`)."""
from __future__ import annotations

import numpy as np
import torch

from ..exact.calibration import state_index
from ..stats import chi2_counts_pvalue


def chi2_pvalue(draws: torch.Tensor, law, k: int, min_expected: float = 5.0) -> float:
    """p-value of Pearson's χ² of the draws' states (B, n) against `law` over the k^n full states (base-k order);
    cells expected fewer than `min_expected` times are pooled into one (none left out)."""
    law = np.asarray(law, dtype=float)
    counts = np.bincount(state_index(draws, k).numpy(), minlength=law.size).astype(float)
    return chi2_counts_pvalue(counts, law, min_expected)
