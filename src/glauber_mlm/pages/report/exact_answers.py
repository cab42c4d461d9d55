"""Page 08 (exact answers on the real model): its figures and their readings, from the tables the page computes."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from IPython.display import Markdown

from ...stats import law_exponent, law_function
from ..plots import legend_outside, log_axis_at, panels
from . import glue_text  # noqa: F401  (the page glues its design's values for its prose: report.glue_text)


def listed(values: Sequence[float]) -> Markdown:
    """Values for the prose's {glue:md} roles: '4', '2 and 4', '1, 2 and 4'."""
    words = [f"{v:g}" for v in values]
    return Markdown(words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def t_mix_growth(answers: pd.DataFrame, growth: pd.DataFrame, taus: Sequence[float], sizes: Sequence[int]):
    """One panel per τ: each passage's exact t_mix against n (grey), the median over passages (black), and n log n,
    n¹·⁵ and n² drawn through the median at the middle n; and the reading of the fitted exponents (Markdown)."""
    fig, axes = panels(len(taus), height=3.0)
    mid, ns = sizes[len(sizes) // 2], np.array(sizes, dtype=float)
    for ax, tau in zip(axes, taus):
        g = answers[answers.temperature == tau]
        for _, gp in g.groupby("passage"):
            ax.plot(gp.n, gp.t_mix, "o-", color="0.75", lw=0.8, ms=3)
        med = g.groupby("n").t_mix.median()
        ax.plot(med.index, med.values, "ko-", label="median over passages")
        for law, style, shown in (("n log n", "C0--", "n log n"), ("n^1.5", "C1:", "n¹·⁵"), ("n^2", "C3-.", "n²")):
            f = law_function(law)
            ax.plot(ns, med[mid] * f(ns) / f(mid), style, label=shown)
        ax.set(xscale="log", yscale="log", xlabel="free sites n", ylabel=r"exact $t_\mathrm{mix}(1/4)$",
               title=f"τ = {tau:g}")
        log_axis_at(ax, sizes)
    legend_outside(axes[-1], "below", ncol=2)
    reading = Markdown("; ".join(f"at τ = {r.temperature:g}, β = {r.beta:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
                                 for r in growth.itertuples())
                       + f" (n log n's local exponent over n = {', '.join(map(str, sizes))} is "
                         f"{law_exponent('n log n', sizes):.2f}).")
    return fig, reading


def theorems_and_incompatibility(answers: pd.DataFrame, taus: Sequence[float], sizes: Sequence[int]):
    """Left: exact t_mix against the Dobrushin bound where α < 1; right: the scan-order and MH–PLL distances against
    τ at the largest n. Returns the figure, the cells with α < 1, the per-τ medians at the largest n, and the reading."""
    fig, (left, right) = panels(2, height=3.2)
    below = answers[answers.total_influence < 1]
    left.scatter(below.dobrushin_bound, below.t_mix, c=np.log(below.temperature), cmap="viridis", s=14)
    span = np.array([1, max(below.dobrushin_bound.max(), answers.t_mix.max(), 2) if len(below) else 2])
    left.plot(span, span, "k:", lw=1, label="t_mix = bound")
    left.set(xscale="log", yscale="log", xlabel="Dobrushin bound n log(n/ε)/(1 − α)", ylabel=r"exact $t_\mathrm{mix}$",
             title="where α < 1")
    big = answers[answers.n == max(sizes)].groupby("temperature")[["scan_tv", "pll_tv"]].median()
    right.plot(big.index, big.scan_tv, "o-", label="TV(random scan, systematic scan)")
    right.plot(big.index, big.pll_tv, "s-", label="TV(Glauber, MH–PLL target)")
    right.set(xscale="log", xlabel="temperature τ", ylabel="TV", title=f"n = {max(sizes)}")
    log_axis_at(right, taus)
    legend_outside(right, "below", ncol=1)
    ratio = below.t_mix / below.dobrushin_bound
    bound_text = (f"The exact total influence is below 1 in {len(below)} of {len(answers)} (passage, n, τ) cells; "
                  f"there the exact t_mix is at most {ratio.max():.2f} of the bound (median {ratio.median():.2f})"
                  if len(below) else "The exact total influence is at least 1 in every cell: the Dobrushin bound "
                  "says nothing here")
    reading = Markdown(f"{bound_text}. At n = {max(sizes)} the scan-order footprint runs from {big.scan_tv.min():.3f} "
                       f"to {big.scan_tv.max():.3f} and the PLL target's distance from Glauber's law from "
                       f"{big.pll_tv.min():.3f} to {big.pll_tv.max():.3f} over τ = "
                       f"{', '.join(f'{t:g}' for t in big.index)}.")
    return fig, below, ratio, big, reading


def coupling_inequality(curves: pd.DataFrame, summary: pd.DataFrame, taus: Sequence[float], passage: str,
                        holds: bool | None, slacks: Sequence[float], calibration: object):
    """One panel per τ, on one passage: the share of coupled pairs not met by step t above the exact TV it bounds;
    and the reading of the check (Markdown)."""
    fig, axes = panels(len(taus), height=3.0)
    first = curves[curves.passage == passage]
    for ax, tau in zip(axes, taus):
        g = first[first.temperature == tau]
        ax.step(g.t, g.survival, where="post", label="coupling: share of pairs not met")
        ax.plot(g.t, g.exact_tv, "k-", lw=1, label="exact TV between the two chains")
        ax.set(xscale="symlog", xlabel="step t", ylabel="distance", title=f"τ = {tau:g}", ylim=(-0.02, 1.02))
    legend_outside(axes[-1], "below", ncol=1)
    reading = Markdown(
        f"The rule {'holds' if holds else 'fails'}: the smallest slack (survival + margin − exact TV) over "
        f"{len(slacks)} cells is {min(slacks):.3f}, and the largest amount by which the exact TV exceeds the raw "
        f"survival is {summary.worst_gap.max():.3f}. Calibration at this design: {calibration}.")
    return fig, reading
