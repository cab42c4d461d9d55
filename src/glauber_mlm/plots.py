"""Figure helpers the notebooks share: error bars from intervals, temperature axes."""
from __future__ import annotations

import numpy as np


def interval_errorbar(ax, x, estimate, low, high, **kwargs):
    """``ax.errorbar`` from (estimate, low, high); a bar length below 0 is drawn as 0.

    A bootstrap interval of a maximum can end inside its estimate (resamples only lose the extreme),
    and matplotlib refuses negative bar lengths.
    """
    estimate, low, high = (np.asarray(v, dtype=float) for v in (estimate, low, high))
    yerr = np.clip([estimate - low, high - estimate], 0, None)
    return ax.errorbar(x, estimate, yerr=yerr, **kwargs)


def temperature_axis(ax, temperatures) -> None:
    """A log temperature axis ticked at the grid's temperatures (no minor ticks)."""
    ax.set_xscale("log")
    ax.set_xticks(temperatures, [f"{t:g}" for t in temperatures])
    ax.minorticks_off()
