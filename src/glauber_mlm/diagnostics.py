"""Has my chain mixed? Convergence diagnostics for token chains: scalar summaries, R̂, ESS and MCSE.

A token chain lives on a huge discrete space, so it is judged through scalar summaries of its
trajectory, each arranged as a (chain, draw) array:

- `hamming_to_start`: d_b(t) = Σ_i [x_i^b(t) ≠ r_i^b], the distance of each recorded state to its own
  start (r^b = x^b(0)) or to one common reference state (which, for binary tokens and r = all-0, is the
  magnetisation times n). Distances to the chain's *own* start are blind to chains that sit in opposite
  modes (all-0 and all-1 both stay close to where they began): pass a common `reference` to see that;
- `hamming_between`: d_ab(t) = Σ_i [x_i^a(t) ≠ x_i^b(t)], one row per pair of chains;
- `chain_draw`: any scalar array shaped (chain, draw) or (draw, chain), validated and put as (chain, draw).

`coupling_regime` reads the other view of the same question off coupled chains (`coupling_times`): 'slow' where
most pairs have not met by the budget, 'fast' where all met within its first half.

`convergence` computes, per summary and with ArviZ, the rank-normalised split R̂ (the max of the bulk and
folded-tail R̂ of Vehtari et al. 2021), bulk and tail ESS and the MCSE of the mean, and a status:
'mixed' (R̂ < RHAT_MAX and bulk ESS ≥ ESS_MIN), 'not mixed', 'stuck' (some chain's summary is constant), or
'saturated' (a Hamming distance constant at its ceiling n: every token changed, which says nothing of mixing).

Reference: A. Vehtari, A. Gelman, D. Simpson, B. Carpenter, P.-C. Bürkner (2021), "Rank-normalization,
folding, and localization: an improved R̂ for assessing convergence of MCMC", Bayesian Analysis 16(2).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .validate import check_real

RHAT_MAX = 1.01  # Vehtari et al. (2021), §4: use the sample only if R̂ < 1.01
ESS_MIN = 400  # Vehtari et al. (2021), §4: bulk (and tail) ESS ≥ 400, i.e. ≥ 100 per chain with 4 chains
LAYOUTS = ("chain_draw", "draw_chain")
COLUMNS = ["chains", "draws", "mean", "rhat", "ess_bulk", "ess_tail", "mcse_mean", "n_stuck", "stuck_chains", "status"]


def _arviz():
    """ArviZ, imported on first use (it is slow to import and warns about its coming refactor)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


def _states(states: Any) -> np.ndarray:
    """A `Trajectory`, or its `.states`, as an integer numpy array (records, chains, n)."""
    states = getattr(states, "states", states)
    if hasattr(states, "detach"):
        states = states.detach().cpu().numpy()
    states = np.asarray(states)
    if states.ndim != 3:
        raise ValueError(
            f"states must be shaped (records, chains, n) like `glauber(...).states`, got shape {states.shape}: "
            "for one chain's (records, n) states pass states[:, None, :]."
        )
    if min(states.shape) == 0:
        raise ValueError(f"states are empty (shape {states.shape}): record at least one state of one chain.")
    return states


def hamming_to_start(states: Any, reference: Any = None) -> np.ndarray:
    """Distance of each recorded state to a reference, (chain, draw): d_b(t) = Σ_i [x_i^b(t) ≠ r_i^b].

    `states`: a `Trajectory` or its `.states` (records, chains, n). `reference`: None (each chain's own
    start, r^b = x^b(0)), one state (n,) shared by all chains, or one int token id (r = that token everywhere).
    Returns int64 counts in [0, n].
    """
    x = _states(states)
    if reference is None:
        ref = x[0]  # (chains, n)
    else:
        ref = np.asarray(reference.detach().cpu() if hasattr(reference, "detach") else reference)
        if ref.ndim == 0:
            ref = np.full(x.shape[2], ref)
        if ref.shape != (x.shape[2],):
            raise ValueError(
                f"reference must be one state of n = {x.shape[2]} tokens (or one token id), got shape {ref.shape}: "
                "for each chain's own start pass reference=None."
            )
    return (x != ref).sum(-1).T.astype(np.int64)


def hamming_between(states: Any, pairs: Any = None) -> np.ndarray:
    """Distance between chains at each record, (pair, draw): d_ab(t) = Σ_i [x_i^a(t) ≠ x_i^b(t)].

    `pairs`: (P, 2) chain indices; None: every pair a < b, in `itertools.combinations` order.
    Returns int64 counts in [0, n]. Pairs that share a chain are dependent: fed to `convergence` as "chains",
    all B(B−1)/2 of them overstate the ESS (R̂ is still meaningful); disjoint pairs give an honest ESS.
    """
    x = _states(states)
    B = x.shape[1]
    if pairs is None:
        a, b = np.triu_indices(B, 1)
    else:
        p = np.asarray(pairs)
        if p.ndim != 2 or p.shape[1] != 2 or not np.issubdtype(p.dtype, np.integer):
            raise ValueError(f"pairs must be (P, 2) integer chain indices, e.g. [[0, 1], [0, 2]], got shape {p.shape}.")
        if p.size and (p.min() < -B or p.max() >= B):
            raise ValueError(f"pairs index chains in [0, {B}), got indices from {p.min()} to {p.max()}.")
        a, b = p[:, 0], p[:, 1]
    if len(a) == 0:
        raise ValueError(f"no pair of chains to compare: run at least 2 chains (got {B}).")
    return (x[:, a] != x[:, b]).sum(-1).T.astype(np.int64)


def chain_draw(values: Any, layout: str = "chain_draw") -> np.ndarray:
    """Any scalar summary as a float (chain, draw) array: v[c, t] is chain c's summary at draw t.

    `layout`: 'chain_draw' (ArviZ's order, the default) or 'draw_chain' (e.g. `glauber`'s record-major order).
    Needs ≥ 2 chains, ≥ 4 draws and finite values (split R̂ compares 2·chains half-chains).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}.")
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    v = np.asarray(values)
    if v.dtype == bool or not (np.issubdtype(v.dtype, np.integer) or np.issubdtype(v.dtype, np.floating)):
        raise ValueError(f"a summary must hold real numbers, got dtype {v.dtype}: cast booleans with .astype(float).")
    v = v.astype(np.float64)
    if v.ndim != 2:
        raise ValueError(
            f"a summary must be 2-D, (chain, draw) or (draw, chain) with layout='draw_chain', got shape {v.shape}: "
            "for one chain pass values[None, :] (R̂ needs ≥ 2 chains); for token states use hamming_to_start first."
        )
    if layout == "draw_chain":
        v = v.T
    chains, draws = v.shape
    if chains < 2 or draws < 4:
        raise ValueError(
            f"R̂ needs ≥ 2 chains and ≥ 4 draws, got {chains} chains × {draws} draws (as (chain, draw)): "
            "run more chains / record more states, or check `layout` (this was read as "
            f"{layout!r})."
        )
    if not np.isfinite(v).all():
        raise ValueError("the summary holds NaN or ±inf: drop or repair those draws first.")
    return v


def _one(v: np.ndarray, rhat_max: float, ess_min: float, ceiling: float | None = None) -> dict[str, Any]:
    """One row of `convergence` for a validated (chain, draw) array; a constant chain at `ceiling` is saturated."""
    az = _arviz()
    constant = np.ptp(v, axis=1) == 0
    saturated = constant & (v[:, 0] == ceiling) if ceiling is not None else np.zeros_like(constant)
    stuck = constant & ~saturated  # a chain whose summary never moves, below its ceiling
    row: dict[str, Any] = {"chains": v.shape[0], "draws": v.shape[1], "mean": float(v.mean())}
    if constant.all():
        # no within-chain variance anywhere: ArviZ would give R̂ = NaN (or ~1e7) and ESS = chains × draws
        row.update(rhat=np.inf if np.ptp(v[:, 0]) > 0 else np.nan, ess_bulk=np.nan, ess_tail=np.nan, mcse_mean=np.nan)
    else:
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            row.update(
                rhat=float(az.rhat(v, method="rank")),
                ess_bulk=float(az.ess(v, method="bulk")),
                ess_tail=float(az.ess(v, method="tail")),
                mcse_mean=float(np.squeeze(az.mcse(v, method="mean"))),
            )
    row["n_stuck"] = int(stuck.sum())
    row["stuck_chains"] = tuple(int(c) for c in np.flatnonzero(stuck))
    if stuck.any():
        row["status"] = "stuck"
    elif saturated.any():
        row["status"] = "saturated"
    elif np.isfinite(row["rhat"]) and row["rhat"] < rhat_max and row["ess_bulk"] >= ess_min:
        row["status"] = "mixed"
    else:
        row["status"] = "not mixed"
    return row


def convergence(
    summaries: Mapping[str, Any] | Any,
    layout: str = "chain_draw",
    discard: int = 0,
    rhat_max: float = RHAT_MAX,
    ess_min: float = ESS_MIN,
    ceilings: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """One row per summary: R̂, bulk/tail ESS, MCSE of the mean, stuck chains and a status.

    R̂ = max(R̂_bulk, R̂_tail), each the split-R̂ √((N−1)/N + B/(N·W)) (N draws per half-chain, B = N·var of the
    half-chain means, W = mean half-chain variance) of the rank-normalised draws z = Φ⁻¹((r − 3/8)/(S + 1/4))
    (r: ranks pooled over all half-chains, S draws in all), resp. of the folded |x − median| draws
    (`arviz.rhat(method="rank")`); ESS from Geyer's initial monotone sequence on the same z (`arviz.ess`,
    'bulk' and 'tail' = min over the 5 % and 95 % quantile indicators); MCSE = sd / √ESS_mean (`arviz.mcse`).

    Ties (token summaries are integers, ties are the rule): ArviZ ranks with `scipy.stats.rankdata(method="average")`,
    so tied draws share their average rank and map to one z; nothing is jittered.
    Stuck chains: a chain whose summary is constant over the kept draws is listed in `stuck_chains` and makes the
    status 'stuck' whatever R̂ says (one frozen chain can hide among moving ones). If every chain is constant,
    there is no within-chain variance: R̂ is inf when the chains' constants differ and NaN when they agree, and the
    ESS / MCSE columns are NaN (ArviZ alone would report ESS = chains × draws there); the status says 'stuck'.
    Saturated chains: a summary with a ceiling (`ceilings`: name → its largest value, e.g. a Hamming distance's n sites)
    that sits constant at it has moved as far as it can (every token changed), not stuck: such chains are not counted
    in `stuck_chains`, and with no stuck chain the status is 'saturated' (this summary cannot judge mixing).
    Otherwise 'mixed' when R̂ < `rhat_max` and bulk ESS ≥ `ess_min`, else 'not mixed'.

    `summaries`: a mapping name → array, or one array (named 'summary'); each array as `chain_draw(·, layout)`.
    `discard`: leading draws dropped from every chain (burn-in, e.g. the start itself at draw 0).
    """
    if not isinstance(summaries, Mapping):
        summaries = {"summary": summaries}
    if not summaries:
        raise ValueError("no summary given: pass {'name': (chain, draw) array, ...}.")
    if not isinstance(discard, (int, np.integer)) or isinstance(discard, bool) or discard < 0:
        raise ValueError(f"discard must be a non-negative int (draws dropped per chain), got {discard!r}.")
    # NaN would fail every comparison, so every status would read 'not mixed'
    rhat_max = check_real("rhat_max", rhat_max, 1, above=True, fix=f"R̂ is ≥ 1 up to noise; the usual bound is {RHAT_MAX}.")
    ess_min = check_real("ess_min", ess_min, 0, fix=f"The usual bound is {ESS_MIN}; 0 drops the ESS requirement.")
    rows = {}
    for name, values in summaries.items():
        v = chain_draw(values, layout)
        if discard:
            if v.shape[1] - discard < 4:
                raise ValueError(
                    f"discard={discard} leaves {v.shape[1] - discard} of {v.shape[1]} draws in {name!r}: keep ≥ 4."
                )
            v = chain_draw(v[:, discard:])
        rows[name] = _one(v, rhat_max, ess_min, (ceilings or {}).get(name))
    return pd.DataFrame.from_dict(rows, orient="index")[COLUMNS]


def diagnose(states: Any, reference: Any = None, discard: int = 0, **kwargs: Any) -> pd.DataFrame:
    """`convergence` of a `glauber` trajectory's standard summaries, one row each.

    Rows: 'hamming_to_start' (each chain to its own start), 'hamming_to_reference' (to `reference`; None: chain 0's
    start, so chains started in opposite modes disagree), and with ≥ 4 chains 'hamming_between' over the disjoint
    pairs (c, c + B//2), c < B//2 (its "chains" are those pairs, so `stuck_chains` indexes c): disjoint pairs are
    independent, so their ESS is honest, and a batch whose first half starts in one mode and second half in another
    pairs opposite starts. `kwargs` go to `convergence` (rhat_max, ess_min).
    """
    x = _states(states)
    B = x.shape[1]
    ref = x[0, 0] if reference is None else reference
    summaries = {"hamming_to_start": hamming_to_start(x), "hamming_to_reference": hamming_to_start(x, ref)}
    if B >= 4:  # ≥ 2 disjoint pairs, the fewest "chains" R̂ takes
        half = B // 2
        summaries["hamming_between"] = hamming_between(x, np.stack([np.arange(half), np.arange(half) + half], 1))
    # a Hamming distance is at most the n sites: constant there, every token changed (saturated, not stuck)
    return convergence(summaries, discard=discard, ceilings=dict.fromkeys(summaries, x.shape[-1]), **kwargs)


def coupling_regime(times: Any, met: Any, budget: int) -> str:
    """What coupled pairs say about chains of `budget` steps: 'slow', 'fast' or 'between'.

    'slow': more than half of the pairs had not met by the budget (P(T > budget) > 1/2, so the Kaplan–Meier median
    lies beyond it); 'fast': every pair met within the first half of the budget, so chains run for `budget` steps
    had forgotten their starts before the second half, the draws `convergence(..., discard=half)` reads;
    'between': anything else. `times`, `met`: one entry per pair, as `CouplingResult.times` and `.met`.
    """
    times, met = np.asarray(times, float), np.asarray(met, bool)
    if times.size == 0 or times.shape != met.shape:
        raise ValueError(f"times and met must be one entry per pair, got shapes {times.shape} and {met.shape}.")
    if (~met).mean() > 0.5:
        return "slow"
    if met.all() and times.max() <= budget / 2:
        return "fast"
    return "between"


def paired_difference(high: Any, low: Any, level: float = 0.95) -> dict[str, float]:
    """Mean of the paired differences d_u = high_u − low_u over independent units (chains, starts) with its
    two-sided t interval, d̄ ± t_{(1+level)/2, U−1}·s_d/√U; `above` says the interval lies above 0 (the rule of
    notebook 06's acceptance check). Returns dict(difference, ci_low, ci_high, units, above)."""
    from scipy.stats import t as student

    high, low = np.asarray(high, float), np.asarray(low, float)
    if high.ndim != 1 or high.shape != low.shape or high.size < 2:
        raise ValueError(f"need one value per unit at each level, at least two units; got shapes {high.shape} and "
                         f"{low.shape}.")
    d = high - low
    half = student.ppf((1 + level) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    mean = float(d.mean())
    return dict(difference=mean, ci_low=mean - half, ci_high=mean + half, units=int(d.size), above=bool(mean - half > 0))
