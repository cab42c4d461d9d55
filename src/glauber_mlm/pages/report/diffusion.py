"""Page 09 (which law does a diffusion sampler sample?): its figure and reading, from the page's distance table."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from IPython.display import Markdown

from ..plots import legend_outside, log_axis_at, panels

STYLES = {"MDLM": "C0o-", "ReMDM-cap": "C1s-", "ReMDM-rescale": "C2^-", "ReMDM-loop": "C3v-",
          "LLaDA low-confidence": "C4D--", "LLaDA tempered confidence": "C5x:", "LLaDA random": "C7P--"}


def distances_against_steps(distances: pd.DataFrame, taus: Sequence[float], reference: str, label: str):
    """One panel per τ: the median over passages of each sampler's exact TV to `reference` (a `tv_*` column)
    against its steps T (LLaDA's at min(T, n): its forwards)."""
    fig, axes = panels(len(taus), height=2.9, sharey=True)
    for ax, tau in zip(axes, taus):
        g = distances[distances.temperature == tau]
        for name, gs in g.groupby("sampler", sort=False):
            med = gs.groupby("steps")[f"tv_{reference}"].median()
            ax.plot(med.index, med.values, STYLES.get(name, "k-"), label=name, ms=4, lw=1)
        ax.set(xlabel="steps T (forwards per sample)", ylabel=f"TV to {label}", title=f"τ = {tau:g}")
        log_axis_at(ax, sorted(distances.steps.unique()))
    axes[0].set_ylim(bottom=0)  # once every panel holds its lines: the shared top then covers them all
    if len(axes) % 2:  # the last row's right half is empty: the legend goes there, clear of every axis label
        legend_outside(axes[-1], "right")
    else:
        legend_outside(axes[-1], "below", bbox_to_anchor=(0.5, -0.35))
    return fig


def reading(distances: pd.DataFrame, taus: Sequence[float], steps: int) -> Markdown:
    """Per τ, at the largest T: each sampler's median TV to π_G and to the any-order mixture, nearest to π_G first."""
    parts = []
    for tau in taus:
        g = distances[(distances.temperature == tau) & (distances.steps == steps)]
        med = g.groupby("sampler")[["tv_glauber", "tv_any_order"]].median().sort_values("tv_glauber")
        parts.append(f"at τ = {tau:g}: " + "; ".join(f"{name} {r.tv_glauber:.3f} ({r.tv_any_order:.3f})"
                                                    for name, r in med.iterrows()))
    return Markdown(f"Median over passages at T = {steps}, TV to π_G (to the any-order mixture in brackets), nearest "
                    "to π_G first — " + ". ".join(parts) + ".")
