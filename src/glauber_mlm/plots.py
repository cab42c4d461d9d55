"""Figure helpers the notebooks share: the book's style, plain log ticks, error bars from intervals, temperature axes."""
from __future__ import annotations

import numpy as np
from matplotlib.ticker import LogFormatter, NullFormatter

DPI = 200  # saved figures: sharp on a high-density screen and in print


def use_book_style() -> None:
    """One theme and palette for every figure of the book (seaborn's whitegrid, colour-blind-safe palette), and
    tables displayed with three decimals (the CSV files keep every digit)."""
    import pandas as pd
    import seaborn as sns

    pd.set_option("display.precision", 3)
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind",
                  rc={"figure.dpi": 100, "savefig.dpi": DPI, "legend.framealpha": 0.85, "axes.titlesize": "medium"})


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (0.5, 10, 2000) rather than 5×10⁻¹; minor labels only on short ranges."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def plain_log_ticks(fig) -> None:
    """Label every log axis of `fig` with plain numbers; fixed tick labels (e.g. `temperature_axis`) are kept."""
    from matplotlib.ticker import FixedFormatter

    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale != "log" or isinstance(axis.get_major_formatter(), FixedFormatter):
                continue
            axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
            if not isinstance(axis.get_minor_formatter(), NullFormatter):
                axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


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
    from matplotlib.ticker import FixedFormatter

    ax.set_xscale("log")
    ax.set_xticks(temperatures)
    # a FixedFormatter (not the FuncFormatter set_xticks(labels=...) makes) so that plain_log_ticks keeps the labels
    ax.xaxis.set_major_formatter(FixedFormatter([f"{t:g}" for t in temperatures]))
    ax.minorticks_off()


def _wrap(text: str, width: int = 60) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(str(text), width)) or " "


def interactive_map(frame, x: str, y: str, group: str, hover: list[str], title: str, color: str | None = None,
                    text: str | None = None):
    """An interactive Plotly map of `frame`: one line per `group` (or points coloured by `color`), hover shows
    the `hover` columns and the wrapped `text` column (a decoded state).

    In a book run (`glauber-mlm run/book`) it is returned as HTML that uses the plotly.js the book ships in
    `_static/` (no CDN, so the page works offline); run interactively it is the Plotly figure itself.
    """
    import os

    import plotly.express as px
    from IPython.display import HTML

    frame = frame.copy()
    hover_data = {c: True for c in hover}
    if text is not None:
        frame["state"] = [_wrap(t) for t in frame[text]]
        hover_data["state"] = True
    if color is None:
        fig = px.line(frame, x=x, y=y, color=group, markers=True, hover_data=hover_data, title=title)
    else:
        fig = px.scatter(frame, x=x, y=y, color=color, symbol=group, hover_data=hover_data, title=title,
                         color_continuous_scale="RdBu_r")
    fig.update_layout(template="plotly_white", height=520, margin=dict(l=40, r=20, t=60, b=40),
                      legend=dict(orientation="h", yanchor="top", y=-0.12))
    if not os.environ.get("GLAUBER_MLM_RUN_ID"):
        return fig
    return HTML(fig.to_html(include_plotlyjs=False, full_html=False, config={"responsive": True, "displaylogo": False}))
