"""The theorems' two conditions read off measurements: Dobrushin's crossing temperature and the margin–dwell law.

- Dobrushin: τ* is where the estimated total influence A(τ) = max_i Σ_j α_ij(τ) crosses 1 (linear in
  log τ, log A between grid points). α is a lower bound (max over sampled contexts and replacements), so
  A(τ) is one too and the true crossing lies at or above τ*: a one-sided statement, with a saturation
  curve (A from k of the contexts) in place of an interval.
- Metastability: a state whose sites all hold their argmax token with margin ≥ m is left at rate
  ≤ (V−1)e^{−m/τ} per step, so its dwell time obeys log dwell ≈ c·m/τ + b (c ≈ 1 for the least-held site).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..conditionals import ConditionalModel
from ..validate import check_states
from .influence import _all_site_logits, total_influence
from ..samplers.driver import counted
from ..stats import bootstrap_ci, saturation_curve


def crossing_temperature(temperatures, values, level: float = 1.0) -> float:
    """Highest τ where `values` (e.g. total influence, decreasing in τ) falls through `level`, log-log interpolated.

    Returns the lowest grid τ when every value is already below `level`, the highest when none is
    (the crossing lies outside the grid: read it as a bound), nan for an empty grid.
    """
    t, v = np.asarray(temperatures, float), np.asarray(values, float)
    if t.size == 0:
        return float("nan")
    order = np.argsort(t)
    t, v = t[order], v[order]
    above = np.nonzero(v >= level)[0]
    if above.size == 0:
        return float(t[0])
    k = above[-1]
    if k == t.size - 1:
        return float(t[-1])
    lt, lv = np.log(t[k : k + 2]), np.log(np.maximum(v[k : k + 2], 1e-300))
    frac = (np.log(level) - lv[0]) / (lv[1] - lv[0])
    return float(np.exp(lt[0] + frac * (lt[1] - lt[0])))


@dataclass
class InfluenceSummary:
    """Per temperature: the pooled lower bound (max over all contexts) with its saturation curve, and the typical context."""

    pooled: np.ndarray  # (T,): max_i Σ_j max_c α_cij, the headline lower bound on Dobrushin's sum (one-sided)
    saturation_contexts: np.ndarray  # (C,): k = 1..C contexts
    saturation_mean: np.ndarray  # (C, T): the pooled estimate from k random contexts, mean over orderings
    saturation_low: np.ndarray  # (C, T): central 90 % of orderings
    saturation_high: np.ndarray
    per_context_mean: np.ndarray  # (T,): mean over contexts of max_i Σ_j α_cij, with a bootstrap interval
    per_context_low: np.ndarray
    per_context_high: np.ndarray
    crossing: float  # τ* of the pooled curve: the true crossing lies at or above it (when inside or above the grid)


def summarise_influence(alpha: torch.Tensor, temperatures, level: float = 0.95, n_boot: int = 500, n_perm: int = 200,
                        seed: int = 0) -> InfluenceSummary:
    """Summaries of α (C, T, n, n) over contexts: the pooled max and its saturation in k, the per-context mean and τ*.

    The pooled estimate is a maximum over contexts, a lower bound on the supremum that no resample can
    exceed, so it gets a saturation curve (`stats.saturation_curve`) instead of an interval; the per-context
    mean, a population quantity, gets a percentile bootstrap interval over contexts.
    """
    alpha = torch.as_tensor(alpha, dtype=torch.float64)
    taus = np.asarray(temperatures, float)
    per_context = total_influence(alpha).numpy()  # (C, T)
    pooled = total_influence(alpha.amax(0)).numpy()  # (T,)
    k, s_mean, s_low, s_high = saturation_curve(alpha.numpy(), lambda a: total_influence(torch.from_numpy(a)).numpy(),
                                                n_perm=n_perm, seed=seed)
    mean, low, high = zip(*(bootstrap_ci(per_context[:, t], level=level, n_boot=n_boot, seed=seed)
                            for t in range(taus.size)))
    return InfluenceSummary(pooled, k, s_mean, s_low, s_high, np.array(mean), np.array(low), np.array(high),
                            crossing_temperature(taus, pooled))


@torch.inference_mode()
def token_margins(model: ConditionalModel, states: torch.Tensor, dtype: torch.dtype | None = torch.float32,
                  chunk: int = 256, progress: bool = False) -> torch.Tensor:
    """ℓ_i(x_i|x_{-i}) − max_{v≠x_i} ℓ_i(v|x_{-i}) per site (B, n), at τ = 1.

    Positive exactly where the current token is the argmax, and then equal to the local margin
    (top-1 minus top-2, `local_margins`); negative where some other token is preferred.
    """
    states = check_states(model, states)
    B, n = states.shape
    per = max(1, chunk // n)
    out = []
    for k in counted(range(0, B, per), "margins", progress):
        x = states[k : k + per]
        logits = _all_site_logits(model, x, dtype, chunk)  # (b, n, V)
        own = logits.gather(2, x.unsqueeze(-1)).squeeze(-1)
        others = logits.scatter(2, x.unsqueeze(-1), float("-inf")).amax(-1)
        out.append((own - others).cpu())
    return torch.cat(out)


@dataclass
class Dwells:
    """Maximal runs of steps in which a chain's state does not change (token-level traps)."""

    chain: torch.Tensor  # (D,) which chain
    start: torch.Tensor  # (D,) the step at which the state was entered (0 for the initial state)
    length: torch.Tensor  # (D,) steps spent in the state, counting the step that left it
    censored: torch.Tensor  # (D,) bool: the chain ended before leaving
    states: torch.Tensor  # (D, n) the state held during the run


def dwells(changed: torch.Tensor, states: torch.Tensor) -> Dwells:
    """Runs of `changed` (T, B) = False; `states` (T+1, B, n) holds the state after every step (record_every=1).

    A state entered at step s (s = 0, or s = t + 1 after a change at step t) is held until the first
    change at t' ≥ s; its dwell is t' + 1 − s, or T − s (censored) if no change follows. Under random
    scan the dwell is geometric with mean n / Σ_i (1 − q_i^τ(x_i|x_{-i})).
    """
    T, B = changed.shape
    if states.shape[:2] != (T + 1, B):
        raise ValueError(f"states must be (T+1, B, n) = ({T + 1}, {B}, n): run glauber with record_every=1; got {tuple(states.shape)}.")
    chain, start, length, censored, held = [], [], [], [], []
    for b in range(B):
        moves = torch.nonzero(changed[:, b]).flatten().tolist()
        entries = [0] + [t + 1 for t in moves]
        exits = moves + [None]
        for s, e in zip(entries, exits):
            if s >= T:  # the last step changed the state: nothing observed after it
                continue
            chain.append(b)
            start.append(s)
            length.append((e + 1 - s) if e is not None else T - s)
            censored.append(e is None)
            held.append(states[s, b])
    return Dwells(torch.tensor(chain, dtype=torch.int64), torch.tensor(start, dtype=torch.int64),
                  torch.tensor(length, dtype=torch.int64), torch.tensor(censored, dtype=torch.bool),
                  torch.stack(held) if held else states.new_zeros(0, states.shape[-1]))


def fit_log_linear(x, y, level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> dict[str, float]:
    """Least squares log y ≈ slope·x + intercept, with R² on log y and a bootstrap interval (over rows) for the slope."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    x, ly = x[keep], np.log(y[keep])
    if x.size < 3 or np.ptp(x) == 0:
        return dict(slope=np.nan, slope_low=np.nan, slope_high=np.nan, intercept=np.nan, r2=np.nan, count=int(x.size))
    slope, intercept = np.polyfit(x, ly, 1)
    resid = ly - (slope * x + intercept)
    r2 = 1 - np.sum(resid**2) / np.sum((ly - ly.mean()) ** 2)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        k = rng.integers(0, x.size, x.size)
        if np.ptp(x[k]) > 0:
            boots.append(np.polyfit(x[k], ly[k], 1)[0])
    tail = (1 - level) / 2
    return dict(slope=float(slope), slope_low=float(np.quantile(boots, tail)), slope_high=float(np.quantile(boots, 1 - tail)),
                intercept=float(intercept), r2=float(r2), count=int(x.size))


def _censored_dwell_mle(x: np.ndarray, d: np.ndarray, cens: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(c, b) maximising the geometric likelihood with per-step escape hazard λ = exp(−(c·x + b)): an escape after d
    steps has probability e^{−(d−1)λ}(1 − e^{−λ}), a dwell still running after d steps e^{−dλ}."""
    from scipy.optimize import minimize

    stay = d - 1 + cens

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta = theta[0] * x + theta[1]
        lam = np.exp(-eta)
        leave = -np.expm1(-lam)  # 1 − e^{−λ}
        ll = -stay * lam + np.where(cens, 0.0, np.log(np.maximum(leave, 1e-300)))
        # d ll / d eta: λ·stay − (escaped) λ e^{−λ} / (1 − e^{−λ})
        g_eta = lam * stay - np.where(cens, 0.0, lam * np.exp(-lam) / np.maximum(leave, 1e-300))
        return -float(ll.sum()), -np.array([(g_eta * x).sum(), g_eta.sum()])

    return minimize(nll, start, jac=True, method="BFGS").x


def _censored_dwell_mle_weighted(x: np.ndarray, d: np.ndarray, cens: np.ndarray, w: np.ndarray, start: np.ndarray,
                                 iterations: int = 100) -> np.ndarray:
    """`_censored_dwell_mle` for many weightings of the rows at once (w (K, rows), e.g. bootstrap counts): (K, 2) of
    (c, b), by damped Newton steps on the concave log-likelihood in η = c·x + b (its second derivative in η is
    −stay·λ + escaped·λ·f′(λ) with f(λ) = λ/(e^λ − 1), both ≤ 0)."""
    X = np.stack([x, np.ones_like(x)], 1)                               # (rows, 2)
    stay, esc = d - 1 + cens, (~cens).astype(float)
    theta = np.tile(np.asarray(start, float), (w.shape[0], 1))
    for _ in range(iterations):
        lam = np.exp(-(theta @ X.T))                                    # (K, rows)
        em1 = np.expm1(lam)
        g = lam * stay - esc * lam / np.maximum(em1, 1e-300)           # d ll / d η
        h = -stay * lam + esc * lam * (em1 - lam * (em1 + 1)) / np.maximum(em1, 1e-300) ** 2
        G = (w * g) @ X                                                 # (K, 2)
        H = np.einsum("kr,ri,rj->kij", w * h, X, X) - 1e-12 * np.eye(2)
        step = np.linalg.solve(H, G[..., None])[..., 0]                 # Newton: θ − H⁻¹G
        size = np.linalg.norm(step, axis=1, keepdims=True)
        theta = theta - step * np.minimum(1.0, 2.0 / np.maximum(size, 1e-300))
        if size.max() < 1e-10:
            break
    return theta


def fit_censored_dwell(x, dwell, censored, groups, level: float = 0.95, n_boot: int = 300, seed: int = 0
                       ) -> dict[str, float]:
    """log E[dwell] ≈ c·x + b for geometric dwells with right-censoring (a dwell still running at the end of its chain
    counts as "at least this long", never as an escape), by maximum likelihood (`_censored_dwell_mle`); the interval
    for c resamples the independent units `groups` (chains) with replacement (percentile bootstrap). With escapes at
    fewer than two values of x the likelihood grows without bound (nan), and such resamples are left out."""
    x, d = np.asarray(x, float), np.asarray(dwell, float)
    cens, groups = np.asarray(censored, bool), np.asarray(groups)
    nan = float("nan")
    if x.size < 3 or np.unique(x[~cens]).size < 2:  # escapes at one x only: the likelihood has no finite maximum
        return dict(slope=nan, slope_low=nan, slope_high=nan, intercept=nan, count=int(x.size), censored=int(cens.sum()))
    start = np.array([0.0, float(np.log(d.mean()))])
    # Newton steps of far-out resamples overflow (exp of a large −η); the fit is what it is either way, and a warning
    # would print on a page as stderr
    with np.errstate(over="ignore", invalid="ignore"):
        c, b = _censored_dwell_mle(x, d, cens, start)
    units, unit_of = np.unique(groups, return_inverse=True)
    rng = np.random.default_rng(seed)
    picks = np.stack([rng.integers(0, units.size, units.size) for _ in range(n_boot)])   # units drawn per replicate
    w = np.stack([np.bincount(p, minlength=units.size) for p in picks])[:, unit_of].astype(float)  # (n_boot, rows)
    used = w > 0
    seen = used & ~cens                                                 # escapes at two x or more (a finite maximum)
    ok = np.where(seen, x, np.inf).min(1) < np.where(seen, x, -np.inf).max(1)
    with np.errstate(over="ignore", invalid="ignore"):
        boots = _censored_dwell_mle_weighted(x, d, cens, w[ok], np.array([c, b]))[:, 0]
    tail = (1 - level) / 2
    low, high = np.quantile(boots, [tail, 1 - tail]) if boots.size else (nan, nan)
    return dict(slope=float(c), slope_low=float(low), slope_high=float(high), intercept=float(b), count=int(x.size),
                censored=int(cens.sum()))
