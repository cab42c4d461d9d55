"""Figure helpers the notebooks share: error bars from intervals, temperature axes."""
from __future__ import annotations

import numpy as np


def interval_errorbar(ax, x, estimate, low, high, arrow: float = 0.5, **kwargs):
    """``ax.errorbar`` from (estimate, low, high) with low ≤ estimate ≤ high; high = ∞ draws an upward arrow.

    An interval that excludes its estimate (or a nan) raises a ValueError naming the point: a bar never hides
    one. An unbounded upper end (a one-sided statement "≥ low", e.g. low = estimate for a lower bound) is
    drawn as a bar from `low` with an arrow head at (1 + arrow)·estimate.
    """
    x, estimate, low, high = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, estimate, low, high)))
    ok = np.isfinite(estimate) & np.isfinite(low) & (low <= estimate) & (estimate <= high)
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"the interval [{low[k]:g}, {high[k]:g}] at x = {x[k]:g} does not contain its estimate "
                         f"{estimate[k]:g}: pass an interval that contains it, or a one-sided one (high = inf).")
    open_top = np.isinf(high)
    top = np.where(open_top, estimate + arrow * np.abs(estimate), high)
    bars = ax.errorbar(x, estimate, yerr=[estimate - low, top - estimate], **kwargs)
    if open_top.any():
        ax.errorbar(x[open_top], estimate[open_top], yerr=[0 * top[open_top], (top - estimate)[open_top]], lolims=True,
                    fmt="none", color=bars[0].get_color(), lw=kwargs.get("lw", kwargs.get("linewidth")))
    return bars


def temperature_axis(ax, temperatures) -> None:
    """A log temperature axis ticked at the grid's temperatures (no minor ticks)."""
    ax.set_xscale("log")
    ax.set_xticks(temperatures, [f"{t:g}" for t in temperatures])
    ax.minorticks_off()
