"""Does a Monte Carlo sampler's output follow its exact law? A χ² goodness-of-fit test over full states, and its
size and power at a given design measured on i.i.d. draws from the law and from an alternative."""
from __future__ import annotations

import numpy as np
import torch
from scipy import stats

from ..exact.calibration import state_index


def chi2_pvalue(draws: torch.Tensor, law, k: int, min_expected: float = 5.0) -> float:
    """p-value of Pearson's χ² of the draws' states (B, n) against `law` over the k^n full states (base-k order);
    cells expected fewer than `min_expected` times are pooled into one (none left out)."""
    law = np.asarray(law, dtype=float)
    counts = np.bincount(state_index(draws, k).numpy(), minlength=law.size).astype(float)
    return chi2_counts_pvalue(counts, law, min_expected)


def chi2_counts_pvalue(counts: np.ndarray, law: np.ndarray, min_expected: float = 5.0) -> float:
    """`chi2_pvalue` on counts per state."""
    expected = counts.sum() * law / law.sum()
    small = expected < min_expected
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    if (obs[~keep] > 0).any():
        return 0.0  # a draw where the law puts no mass
    return float(stats.chisquare(obs[keep], exp[keep]).pvalue) if keep.sum() > 1 else 1.0


def chi2_size_power(law, alternative, draws: int, level: float = 0.01, reps: int = 200, seed: int = 0
                    ) -> tuple[float, float]:
    """(size, power) of `chi2_pvalue < level` with `draws` draws: the rejection rate of i.i.d. samples of `law`
    (size) and of `alternative` (power), each against `law`, over `reps` replicates."""
    law, alternative = np.asarray(law, float), np.asarray(alternative, float)
    rng = np.random.default_rng(seed)
    rate = lambda source: float(np.mean([chi2_counts_pvalue(c.astype(float), law) < level  # noqa: E731
                                         for c in rng.multinomial(draws, source / source.sum(), size=reps)]))
    return rate(law), rate(alternative)
