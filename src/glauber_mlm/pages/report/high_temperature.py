"""Page 02 (high-temperature mixing): its figures, display tables and prose, from the tables the page computes."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from IPython.display import Markdown

from ..plots import MAX_WIDTH, interval_errorbar, legend_outside, log_axis_at, panels, show_table

NONE_MET = "0.86"    # a phase-diagram cell where no pair met: light grey, far from the slowest colour of viridis_r
SOME_MET = "0.62"    # … where some pairs met but not half (the median lies beyond the budget): a darker grey
LAW_NAMES = {"n^1.5": "n¹·⁵", "n^2": "n²"}
N15_STYLE = (0, (5, 1, 1, 1, 1, 1))  # n^1.5, the law the growth check tests against
NLOGN_STYLE = (0, (1, 1))            # n log n through the same point


# --- the (τ, n) grid and the phase diagram ------------------------------------------------------------------------

def coupling_head(coupling: pd.DataFrame):
    """The first rows of the coupling-time table, as the page shows them."""
    return show_table(coupling.head().rename(columns={"temperature": "τ", "length": "n"}))


def _cell_label(T: float, met: float, budget: int) -> str:
    """A cell's median coupling step (or 'none met' / '> budget') over the share of its pairs that met."""
    label = f"{T:.0f}" if np.isfinite(T) else ("none met" if met == 0 else f"> {budget}")
    return f"{label}\n{met:.0%} met"


def phase_diagram(phase: pd.DataFrame, names: Sequence[str], taus: Sequence[float], ns: Sequence[int],
                  boundaries: Mapping[str, float], budget: int):
    """One heat map per model (one per row, each as wide as the column allows, so that every cell's label reads):
    the median coupling step per (τ, n) on a log colour scale; grey cells have no finite median."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Patch

    finite_T = phase.median_time[np.isfinite(phase.median_time)]
    vmin = max(1.0, finite_T.min()) if len(finite_T) else 1.0
    fig, model_axes = panels(len(names), width=min(MAX_WIDTH, 1.05 * len(taus) + 2.6), height=0.55 * len(ns) + 1.5,
                             per_row=1)
    for ax, name in zip(model_axes, names):
        cells = phase[phase.model == name]
        grid_T = cells.pivot(index="length", columns="temperature", values="median_time")
        grid_met = cells.pivot(index="length", columns="temperature", values="met_fraction")
        ax.grid(False)  # the style's grid would cross the grey (censored) cells
        finite = np.isfinite(grid_T.to_numpy())
        mesh = ax.pcolormesh(np.arange(len(taus) + 1), np.arange(len(ns) + 1),
                             np.ma.masked_where(~finite, grid_T.to_numpy()), cmap="viridis_r",
                             norm=LogNorm(vmin=vmin, vmax=budget))
        for (r, c), T in np.ndenumerate(grid_T.to_numpy()):
            met_frac = grid_met.to_numpy()[r, c]
            if not np.isfinite(T):
                ax.add_patch(plt.Rectangle((c, r), 1, 1, color=NONE_MET if met_frac == 0 else SOME_MET))
            ax.text(c + 0.5, r + 0.5, _cell_label(T, met_frac, budget), ha="center", va="center", fontsize=9,
                    color="white" if np.isfinite(T) and T > np.sqrt(vmin * budget) else "black")
        ax.set_xticks(np.arange(len(taus)) + 0.5, [f"{t:g}" for t in grid_T.columns])
        ax.set_yticks(np.arange(len(ns)) + 0.5, [str(n) for n in grid_T.index])
        ax.set(xlabel=r"temperature $\tau$", ylabel=r"sequence length $n$ (tokens)",
               title=rf"{name}: slow-to-fast boundary $\tau = {boundaries[name]:g}$")
    fig.colorbar(mesh, ax=model_axes, label=f"median coupling time\n(steps, log scale; budget {budget})")
    fig.legend(handles=[Patch(color=NONE_MET, label="none met"),
                        Patch(color=SOME_MET, label=f"fewer than half met (median > {budget})")],
               loc="outside lower center", ncol=2, frameon=False, fontsize="small")
    return fig


def phase_finding(phase: pd.DataFrame, boundaries: Mapping[str, float], taus: Sequence[float],
                  budget: int) -> Markdown:
    """Per model, how many cells couple and where its boundary lies; with several, how far apart the boundaries are."""
    rows = []
    for name, g in phase.groupby("model", sort=False):
        b = boundaries[name]
        rows.append(f"{name}: {int(np.isfinite(g.median_time).sum())} of {len(g)} cells couple within the budget of "
                    f"{budget} steps (median finite), and "
                    + (f"every length couples from τ = {b:g} on (the slow-to-fast boundary)" if np.isfinite(b)
                       else f"even the highest grid temperature, τ = {max(taus):g}, does not couple every length"))
    if len(boundaries) > 1:
        steps = {name: sorted(taus).index(b) if np.isfinite(b) else len(taus) for name, b in boundaries.items()}
        spread = max(steps.values()) - min(steps.values())
        rows.append("the models share one boundary on this grid" if spread == 0 else
                    f"the models' boundaries lie {spread} grid temperature{'s' * (spread > 1)} apart")
    return Markdown("; ".join(rows) + ".")


def interactive_heatmap(phase: pd.DataFrame, name: str, budget: int):
    """The first model's phase diagram to explore (Plotly): the median coupling step on the static figure's log
    colour scale, each cell labelled as there; grey cells have no finite median (light: none met; darker: fewer
    than half met); hover a cell for its median, the share of pairs that met, the pairs and the budget."""
    import plotly.graph_objects as go

    from ..plots import _shipped

    cells = phase[phase.model == name].set_index(["length", "temperature"])
    taus, ns = sorted(phase.temperature.unique()), sorted(phase.length.unique())
    at = lambda col: np.array([[cells[col].get((n, t), np.nan) for t in taus] for n in ns], dtype=float)  # noqa: E731
    T, met, pairs = at("median_time"), at("met_fraction"), at("pairs")
    finite = np.isfinite(T)
    vmin = max(1.0, T[finite].min()) if finite.any() else 1.0
    labels = np.array([[_cell_label(T[r, c], met[r, c], budget).replace("\n", "<br>") for c in range(len(taus))]
                       for r in range(len(ns))], dtype=object)
    hover = np.array([[f"median coupling time: {T[r, c]:.0f} steps" if finite[r, c] else
                       ("median coupling time: none met" if met[r, c] == 0 else
                        f"median coupling time: beyond the budget of {budget} steps")
                       for c in range(len(taus))] for r in range(len(ns))], dtype=object)
    hover = np.array([[f"{hover[r, c]}<br>pairs met: {met[r, c]:.0%} of {pairs[r, c]:.0f}<br>budget: {budget} steps"
                       for c in range(len(taus))] for r in range(len(ns))], dtype=object)
    xs, ys = [f"{t:g}" for t in taus], [f"{n:g}" for n in ns]
    common = dict(x=xs, y=ys, texttemplate="%{text}", customdata=hover, hoverongaps=False,
                  hovertemplate="temperature τ %{x}<br>sequence length n %{y}<br>%{customdata}<extra></extra>")
    ticks = [v for v in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000)
             if vmin <= v <= budget]
    fig = go.Figure([
        go.Heatmap(z=np.where(finite, np.log10(np.where(finite, T, 1.0)), np.nan), text=np.where(finite, labels, ""),
                   colorscale="Viridis", reversescale=True, zmin=np.log10(vmin), zmax=np.log10(budget),
                   colorbar=dict(title="median coupling time<br>(steps, log scale)",
                                 tickvals=np.log10(ticks).tolist(), ticktext=[f"{v:g}" for v in ticks]), **common),
        go.Heatmap(z=np.where(finite, np.nan, np.where(met == 0, 0.0, 1.0)), text=np.where(finite, "", labels),
                   colorscale=[[0, "rgb(219,219,219)"], [1, "rgb(158,158,158)"]], zmin=0, zmax=1, showscale=False,
                   textfont=dict(color="black"), **common),
        *(go.Scatter(x=[None], y=[None], mode="markers", name=label, showlegend=True,
                     marker=dict(symbol="square", size=14, color=colour))
          for label, colour in (("none met", "rgb(219,219,219)"),
                                (f"fewer than half met (median > {budget})", "rgb(158,158,158)"))),
    ])
    title = f"median coupling time, {name}, budget {budget} steps"
    fig.update_layout(template="plotly_white", title=title, height=460, margin=dict(l=40, r=20, t=60, b=40),
                      xaxis_title="temperature τ", yaxis_title="sequence length n (tokens)",
                      legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0))
    return _shipped(fig, title, "Hover a cell for its median coupling time, the share of its pairs that met and the "
                                "budget; grey cells have no finite median (light: none met; darker: fewer than half "
                                "met); drag to zoom.")


# --- the scaling study --------------------------------------------------------------------------------------------

def scaling_design(name: str, scaling_ns: Sequence[int], scaling_taus: Sequence[float], pairs: int,
                   budget: int) -> Markdown:
    """The scaling study's design, as the prose gives it."""
    return Markdown(f"This run: {name}, n = {', '.join(map(str, scaling_ns))} at τ = "
                    f"{', '.join(f'{t:g}' for t in scaling_taus)}, {pairs} passage pairs per cell, a budget of "
                    f"{budget} steps.")


def boundary_note(name: str, boundary: float, scaling_taus: Sequence[float]) -> str:
    """The first model's slow-to-fast boundary beside the scaling temperatures, and whether they all lie above it."""
    return (f"slow-to-fast boundary of {name} on the grid above (lowest τ from which every length couples): "
            f"τ = {boundary:g}; scaling temperatures {', '.join(f'{t:g}' for t in scaling_taus)}"
            + ("" if np.isfinite(boundary) and min(scaling_taus) > boundary
               else " — not all above the boundary: read their fits as a regime near or inside the slow corner"))


def timing_note(timing: Sequence[tuple[int, float, int]], chains: int) -> str:
    """Per scaling length: the pairs of chains, the forward rows and the seconds they took."""
    return "\n".join(f"n = {n}: {chains} pairs of chains, {rows} rows of forwards, {seconds:.0f} s"
                     for n, seconds, rows in timing)


def scaling_medians(scaling_times: pd.DataFrame):
    """The median coupling time (censored pairs as +∞) and the share met per scaling cell."""
    from ...stats import censored_median

    return (scaling_times.groupby(["temperature", "length"])
            .apply(lambda g: pd.Series(dict(median_time=censored_median(g.time, g.met), met_fraction=g.met.mean())),
                   include_groups=False).reset_index()
            .rename(columns={"temperature": "τ", "length": "n", "median_time": "median T", "met_fraction": "met"})
            .pipe(show_table))


def law_readings(exp_rows: Sequence[dict], scaling: pd.DataFrame, verdicts: pd.DataFrame, apart: pd.DataFrame,
                 laws: Sequence[str], scaling_ns: Sequence[int]) -> str:
    """Per scaling temperature: β with its interval beside the laws' local exponents, the trend test, R² of the fixed
    laws, the laws rejected and the pairs told apart (uncalibrated readings)."""
    from ...stats import law_exponent

    lines = []
    for row in exp_rows:
        tau = row["temperature"]
        if not np.isfinite(row["beta"]):
            lines.append(f"τ = {tau:g}: some length has half or more of its pairs censored: no finite exponent "
                         "(raise the budget).")
            continue
        r2 = scaling[scaling.temperature == tau].set_index("law").r2
        lines.append(f"τ = {tau:g}: β = {row['beta']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}] over n = "
                     f"{row['lengths']} ({row['pairs']} pairs per length); local exponents: "
                     + ", ".join(f"{law} {law_exponent(law, scaling_ns):.2f}" for law in laws))
        lines.append(f"   T/(n log n): Kendall τ = {row['kendall']:+.2f}, p = {row['trend_p']:.3g}; slope of log ratio "
                     f"on log n {row['trend_slope']:+.2f} [{row['trend_low']:+.2f}, {row['trend_high']:+.2f}]; "
                     f"R² on log T: " + ", ".join(f"{law} {r2[law]:.3f}" for law in r2.index))
        v = verdicts[verdicts.temperature == tau]
        lines.append("   rejected: " + (", ".join(v.law[v.rejected]) or "none")
                     + "; not rejected: " + (", ".join(v.law[~v.rejected]) or "none"))
        a = apart[apart.temperature == tau]
        for verdict in ("told apart", "cannot tell apart", "neither fits"):
            which = [f"{r.first} / {r.second}" for r in a[a.verdict == verdict].itertuples()]
            if which:
                lines.append(f"   {verdict}: " + "; ".join(which))
    return "\n".join(lines)


def scaling_finding(exp_rows: Sequence[dict], verdicts: pd.DataFrame, scaling_ns: Sequence[int]) -> Markdown:
    """Per scaling temperature, β over all the lengths against n log n's local exponent and the laws excluded."""
    finding = []
    for row in exp_rows:
        tau, v = row["temperature"], verdicts[verdicts.temperature == row["temperature"]].set_index("law")
        if not np.isfinite(row["beta"]):
            finding.append(f"At τ = {tau:g} some length has half or more of its pairs censored: no finite exponent.")
            continue
        nl = v.loc["n log n"]
        excluded = [law.replace("^2", "²").replace("^1.5", "¹·⁵") for law in v.index[v.rejected]]
        finding.append(
            f"At τ = {tau:g}, over all the lengths (n = {', '.join(map(str, scaling_ns))}) the free exponent is "
            f"β = {row['beta']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}] against n log n's local exponent "
            f"{nl.exponent:.2f} over the same lengths; the β interval and the trend test (uncalibrated readings) exclude "
            + (", ".join(excluded) if excluded else "none of the four laws") + ".")
    return Markdown(" ".join(finding) + " These describe the whole range; the check below decides, at the largest "
                                        "lengths, whether growth is slower than $n^{1.5}$, the nearest faster law than "
                                        "n log n.")


def exponent_table(exponent: pd.DataFrame):
    """The free exponent and the trend test per scaling temperature, as the page shows them."""
    return show_table(exponent.drop(columns=["dropped_resamples", "trend_low", "trend_high"]).rename(columns={
        "temperature": "τ", "beta": "β", "ci_low": "β: 95% low", "ci_high": "β: 95% high", "r2": "R² (free power)",
        "trend_slope": "slope of log T/(n log n)", "kendall": "Kendall τ of T/(n log n)", "trend_p": "trend p"}))


def scaling_figure(scaling_times: pd.DataFrame, scaling: pd.DataFrame, exponent: pd.DataFrame,
                   scaling_taus: Sequence[float], scaling_ns: Sequence[int], seed: int):
    """Left, the median coupling time over n log n against n (flat: the n log n law); right, the medians on log–log
    axes with the fitted laws. On both, n log n and n^1.5 (the law the growth check tests against) through the
    median at the middle of the three largest lengths."""
    from ...stats import censored_median_ci, law_function

    fig, axes = panels(2, height=4.6)
    for tau in scaling_taus:
        g = scaling_times[scaling_times.temperature == tau]
        rows = [(n, *censored_median_ci(c.time, c.met, seed=seed)) for n, c in g.groupby("length")]
        n_, med, low, high = map(np.array, zip(*rows))
        if not np.isfinite(med).all():
            continue
        nlogn = n_ * np.log(n_)
        high = np.minimum(high, 11 * med)  # an infinite upper end (censored resamples) drawn as a long bar
        interval_errorbar(axes[0], n_, med / nlogn, low / nlogn, high / nlogn, marker="o", capsize=3,
                          label=rf"$\tau = {tau:g}$")
        bars = interval_errorbar(axes[1], n_, med, low, high, marker="o", ls="none", capsize=3,
                                 label=rf"$\tau = {tau:g}$")
        fits = scaling[scaling.temperature == tau].set_index("law")
        free = exponent[exponent.temperature == tau].iloc[0]
        grid_n = np.geomspace(n_.min(), n_.max(), 50)
        for law, style in (("n", ":"), ("n log n", "-"), ("n^2", "--")):
            axes[1].plot(grid_n, fits.loc[law, "C"] * law_function(law)(grid_n), style, color=bars[0].get_color(),
                         alpha=0.6, lw=1)
        axes[1].plot(grid_n, free.C * grid_n**free.beta, "-.", color=bars[0].get_color(), alpha=0.9, lw=1.5)
        # the two laws the check tells apart, drawn through the median at the middle of the rule's (three largest)
        # lengths; n^1.5, the law the check tests against, drawn heavier
        mid = len(n_) - 2
        for law, style, lw in (("n log n", NLOGN_STYLE, 1.2), ("n^1.5", N15_STYLE, 1.8)):
            through = med[mid] * law_function(law)(grid_n) / law_function(law)(n_[mid])
            axes[0].plot(grid_n, through / (grid_n * np.log(grid_n)), ls=style, color=bars[0].get_color(), lw=lw)
            axes[1].plot(grid_n, through, ls=style, color=bars[0].get_color(), lw=lw)
    axes[0].set(xscale="log", xlabel=r"sequence length $n$", ylabel=r"median $T \,/\, (n \log n)$",
                title=r"flat lines: $T \propto n \log n$")
    axes[1].set(xscale="log", yscale="log", xlabel=r"sequence length $n$", ylabel=r"median coupling step $T$",
                title="fitted growth laws")
    for ax in axes:
        log_axis_at(ax, scaling_ns)
    n15 = "$n^{1.5}$ through the same point:\nthe law the check tests against"
    for law, style, lw in ((r"$n$", ":", 1), (r"$n \log n$", "-", 1), (r"$n^2$", "--", 1),
                           (r"$n^\beta$ (free)", "-.", 1.5),
                           (r"$n \log n$ through the middle of the largest three", NLOGN_STYLE, 1.2),
                           (n15, N15_STYLE, 1.8)):
        axes[1].plot([], [], ls=style, color="0.4", lw=lw, label=law)
    axes[0].plot([], [], ls=NLOGN_STYLE, color="0.4", lw=1.2, label=r"$n \log n$ through the middle of the largest three")
    axes[0].plot([], [], ls=N15_STYLE, color="0.4", lw=1.8, label=n15)
    legend_outside(axes[0], "below", ncol=1)
    legend_outside(axes[1], "below", ncol=1)
    return fig


def verdicts_table(verdicts: pd.DataFrame):
    """Per scaling temperature and law: its local exponent beside the β interval, and whether the interval rejects it."""
    return show_table(verdicts.assign(law=verdicts.law.replace(LAW_NAMES),
                                      trend_p=[f"{v:.3g}" if np.isfinite(v) else "—" for v in verdicts.trend_p],
                                      rejected=verdicts.rejected.map({True: "rejected", False: "not rejected"}))
                      .rename(columns={"temperature": "τ", "exponent": "local exponent", "beta": "β",
                                       "low": "β: 95% low", "high": "β: 95% high", "trend_p": "trend p",
                                       "rejected": "β interval"}))


# --- the growth check ---------------------------------------------------------------------------------------------

SAYS = {True: "passes", False: "fails", None: "cannot be computed (too many censored pairs)"}


def check_finding(growth: pd.DataFrame, calibrations: Mapping[float, object]) -> Markdown:
    """Per scaling temperature, what the growth rule found and its calibration on this run's times."""
    return Markdown("The rule " + "; ".join(
        f"{SAYS[r.passes]} at τ = {r.temperature:g}: over n = {r.lengths.replace('–', ', ')} the local exponent is "
        f"{r.exponent:.2f} with one-sided 97.5 % upper bound {r.upper_one_sided:.2f} (the limit is {r.limit:g}; n log n's "
        f"own local exponent there is {r.nlogn_exponent:.2f}), and its calibration on this run's times gives "
        f"{calibrations[r.temperature]}"
        for r in growth.itertuples()) + ".")


def growth_table(growth: pd.DataFrame):
    """The growth rule's table, as the page shows it."""
    return show_table(growth.rename(columns={"temperature": "τ", "exponent": "local exponent",
                                             "upper_one_sided": "one-sided 97.5% upper bound",
                                             "nlogn_exponent": "n log n's", "censored_weight": "censored weight"}))


def key_numbers(phase: pd.DataFrame, boundaries: Mapping[str, float], growth: pd.DataFrame) -> dict[str, str]:
    """The page's key numbers for its result box."""
    return {
        **{f"{name}: phase-diagram cells with a finite median (coupled within the budget)":
           f"{int(np.isfinite(g.median_time).sum())} of {len(g)} (budget {int(g.budget.iloc[0])} steps)"
           for name, g in phase.groupby("model", sort=False)},
        **{f"{name}: slow-to-fast boundary (lowest grid τ from which every length couples)": f"τ = {b:g}"
           for name, b in boundaries.items()},
        **{f"local exponent of T at τ = {r.temperature:g}, n = {r.lengths} (one-sided 97.5% upper bound)":
           (f"{r.exponent:.2f} (≤ {r.upper_one_sided:.2f}); n log n's {r.nlogn_exponent:.2f}, n¹·⁵'s 1.5"
            if np.isfinite(r.exponent) else "not computed: too many censored pairs")
           for r in growth.itertuples()},
    }
