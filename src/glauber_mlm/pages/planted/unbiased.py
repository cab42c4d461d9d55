"""The exact lab of the unbiased estimator (`samplers.unbiased`) on a small chain whose answers are known exactly.

On a chain with k^n states, π(h) is exact (`exact.stationary` of the enumerated kernel, or the joint of a compatible
model), the law of the meeting time is exact (`unbiased.exact_meeting_law`) and so is the plain chain's asymptotic
variance σ²(h) (`exact.asymptotic_variance`). The design is fixed before the run: the lag L is the 0.99 quantile of
the lag-1 meeting time, k the 0.99 quantile of the L-lag meeting time, m = 10k (Jacob et al. §3.1's advice); R groups
of M replicates give R independent t-intervals, whose coverage count is judged against the central 95 % binomial
range of Bin(R, level); the meeting times of all R·M replicates are judged against the exact law by a χ² test with
bins of expected count ≥ 5 and by their TV beside the null band of i.i.d. samples of the same size from that law.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from ...exact import asymptotic_variance, kernel, stationary
from ...exact.scan_order import all_states
from ...samplers.unbiased import UnbiasedEstimate, exact_meeting_law, t_interval, unbiased


@dataclass
class ExactLab:
    """One run of the lab: the design, the estimator's replicates and the exact answers they are judged against."""

    result: UnbiasedEstimate
    truth: float  # π(h), exact
    sigma2: float  # the plain chain's asymptotic variance σ²(h), exact
    meeting_pmf: np.ndarray  # P(τ = t), exact
    groups: int
    per_group: int
    level: float

    def covered(self) -> int:
        """Intervals, of `groups`, that contain π(h) (each from `per_group` independent replicates)."""
        return covered(self.result.estimates, self.groups, self.truth, self.level)

    def coverage_range(self, alpha: float = 0.05) -> tuple[int, int]:
        """The central 1 − alpha range of Bin(groups, level) (`coverage_range`)."""
        return coverage_range(self.groups, self.level, alpha)

    def meeting_fit(self, null_reps: int = 2000, seed: int = 0) -> dict[str, float]:
        """χ² of the meeting times against the exact law (bins of expected count ≥ 5, the tail pooled into the last),
        and their TV from it beside the 95 % quantile of the TV of `null_reps` i.i.d. samples of the same size."""
        times, pmf = self.result.meeting_times, self.meeting_pmf
        N = times.size
        counts = np.bincount(times, minlength=pmf.size)[: pmf.size]
        edges, run = [], 0.0
        for t in range(pmf.size):  # close a bin once it expects ≥ 5; the rest joins the last bin
            run += N * pmf[t]
            if run >= 5:
                edges.append(t + 1)
                run = 0.0
        edges[-1] = pmf.size
        observed = np.add.reduceat(counts, [0] + edges[:-1]).astype(float)
        observed[-1] += (times >= pmf.size).sum()
        expected = N * np.add.reduceat(pmf, [0] + edges[:-1])
        expected *= N / expected.sum()
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        p = float(stats.chi2.sf(chi2, observed.size - 1))
        tv = 0.5 * np.abs(np.bincount(times, minlength=pmf.size)[: pmf.size] / N - pmf).sum()
        rng = np.random.default_rng(seed)
        null = 0.5 * np.abs(rng.multinomial(N, pmf / pmf.sum(), size=null_reps) / N - pmf).sum(1)
        return dict(chi2=chi2, bins=observed.size, p=p, tv=float(tv), tv_null_95=float(np.quantile(null, 0.95)))


def covered(values: np.ndarray, groups: int, truth: float, level: float = 0.95) -> int:
    """Of `groups` t-intervals (one per consecutive equal block of the i.i.d. `values`), those holding `truth`."""
    blocks = np.asarray(values, dtype=float).reshape(groups, -1)
    return int(sum(low <= truth <= high for _, low, high in (t_interval(b, level) for b in blocks)))


def coverage_range(groups: int, level: float = 0.95, alpha: float = 0.05) -> tuple[int, int]:
    """The central 1 − alpha range of Bin(groups, level): the coverage counts that exact intervals give."""
    b = stats.binom(groups, level)
    return int(b.ppf(alpha / 2)), int(b.isf(alpha / 2))


def pmf_quantile(pmf: np.ndarray, q: float) -> int:
    """The least t with P(τ ≤ t) ≥ q."""
    return int(np.searchsorted(np.cumsum(pmf), q))


def exact_lab(model, h_values: np.ndarray, temperature: float = 1.0, groups: int = 400, per_group: int = 50,
              level: float = 0.95, seed: int = 0) -> ExactLab:
    """The unbiased estimator of π(h) on a small model, judged against its exact answers (module docstring).

    `h_values`: h at every state (base-q order); X_0, Y_0 uniform over the states, seeded by `seed`."""
    n, q = model.n, int(model.vocab_size)
    states = all_states(n, q)
    S = states.shape[0]
    P = kernel(model, temperature)
    pi = stationary(P)
    h_values = np.asarray(h_values, dtype=float)
    uniform = np.full(S, 1.0 / S)
    lag = max(1, pmf_quantile(exact_meeting_law(model, uniform, 1, temperature), 0.99))
    pmf = exact_meeting_law(model, uniform, lag, temperature)
    k = pmf_quantile(pmf, 0.99)
    g = torch.Generator().manual_seed(seed)
    R = groups * per_group
    x0, y0 = (states[torch.randint(0, S, (R,), generator=g)] for _ in range(2))
    table = torch.as_tensor(h_values)
    index = q ** torch.arange(n - 1, -1, -1)
    result = unbiased(model, x0, y0, lambda x: table[(x.cpu() * index).sum(-1)], k, 10 * k, lag, temperature,
                      seed=seed * R)
    return ExactLab(result, float(pi @ h_values), asymptotic_variance(P, h_values, pi), pmf, groups, per_group, level)


def summary(lab: ExactLab) -> dict[str, float]:
    """One row of the lab: design, exact answers, coverage with its binomial range, meeting-law fit, inefficiency."""
    r = lab.result
    mean, low, high = r.interval(lab.level)
    c_low, c_high = lab.coverage_range()
    return dict(lag=r.lag, k=r.k, m=r.m, replicates=r.met.size, truth=lab.truth, estimate=float(mean),
                low=float(low), high=float(high), covered=lab.covered(), intervals=lab.groups,
                per_interval=lab.per_group, covered_low=c_low, covered_high=c_high,
                mean_meeting=float(r.meeting_times.mean()), mean_cost=float(r.cost.mean()),
                inefficiency=float(r.inefficiency), sigma2=lab.sigma2,
                ratio=float(r.inefficiency / lab.sigma2), **lab.meeting_fit())
