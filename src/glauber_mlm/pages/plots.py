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


MAX_WIDTH = 9.0  # inches at DPI: the widest a saved figure may be, so that its text reads at the page's column width
MAX_PER_ROW = 2  # panels side by side; more go to further rows


def panels(n: int, width: float = MAX_WIDTH - 0.25, height: float = 3.4, per_row: int = MAX_PER_ROW, **subplots_kw):
    """The book's figure of `n` panels: at most two per row (the rest on further rows), `width` ≤ MAX_WIDTH inches,
    `height` inches per row, constrained layout (so that legends and colour bars outside the axes are given room).
    The default width leaves room for the padding of `Run.save_figure`'s tight bounding box.

    Returns (fig, axes) with `axes` a flat list of the n panels (an odd last row's empty slot removed).
    `subplots_kw` goes to `plt.subplots` (sharex, sharey, gridspec_kw …). A wider figure is refused: it would be
    shrunk to the column and its labels with it."""
    import matplotlib.pyplot as plt

    if width > MAX_WIDTH:
        raise ValueError(f"a figure {width:g} inches wide would be shrunk to the page's column: at most {MAX_WIDTH:g}.")
    per_row = max(1, min(per_row, MAX_PER_ROW, n))
    rows = -(-n // per_row)
    fig, grid = plt.subplots(rows, per_row, figsize=(width, height * rows), squeeze=False, layout="constrained",
                             **subplots_kw)
    flat = list(grid.ravel())
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def legend_outside(ax, where: str = "right", **kwargs):
    """A legend beside the panel (`where="right"`) or under it (`"below"`, in columns), never on the data."""
    if where == "right":
        kwargs = dict(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0) | kwargs
    elif where == "below":
        kwargs = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2) | kwargs
    else:
        raise ValueError(f"where must be 'right' or 'below', got {where!r}.")
    return ax.legend(frameon=False, **kwargs)


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


def log_axis_at(ax, values, axis: str = "x") -> None:
    """A log axis ticked and labelled at `values` only (the grid's lengths, batch sizes …), no minor ticks; the fixed
    labels are kept by `plain_log_ticks`."""
    from matplotlib.ticker import FixedFormatter, NullLocator

    values = sorted(float(v) for v in values)
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_ticks(values)
    target.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
    target.set_minor_locator(NullLocator())


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


MAX_FRAMES = 60  # slider positions of an interactive map: enough to follow a chain, small enough to ship


def interactive_map(frame, x: str, y: str, group: str, hover: list[str], title: str, color: str | None = None,
                    text: str | None = None, time: str = "step"):
    """An interactive Plotly map of `frame`: one line per `group` (or points coloured by `color`), hover shows
    the `hover` columns and the wrapped `text` column (a decoded state). A slider (and a play button) over the
    `time` column moves one marker per group to where that chain was at that step (at most MAX_FRAMES steps,
    evenly spread over the recorded ones).

    In a book run (`glauber-mlm run/book`) it is returned as HTML that uses the plotly.js the book ships in
    `_static/` (no CDN, so the page works offline); run interactively it is the Plotly figure itself.
    """
    import plotly.express as px

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
    fig.update_traces(opacity=0.45)
    _add_time_slider(fig, frame, x, y, group, time, hover + (["state"] if text is not None else []))
    # below the axes, from the top: the play buttons, the slider, the legend; fixed in pixels (height and margins)
    # so that nothing overlaps at a phone's 400 px, where the legend takes a row per chain and scrolls
    fig.update_layout(template="plotly_white", height=640, autosize=True, margin=dict(l=40, r=20, t=50, b=220),
                      title=dict(text=title, x=0, xanchor="left", font=dict(size=14)), modebar=dict(orientation="v"),
                      legend=dict(orientation="h", yanchor="top", y=-0.66, font=dict(size=11), title_text="",
                                  maxheight=90))
    shown = ", ".join(c.replace("_", " ") for c in hover_data)
    shipped = _shipped(fig, title, f"Hover a point for its {shown}; the slider (or ▶ play) moves a ring to where "
                                   f"each chain was at that {time}; click a legend entry to hide a chain, drag to zoom.")
    if isinstance(getattr(shipped, "data", None), str) and shipped.data.endswith("</figure>"):  # the book's HTML
        shipped.data = shipped.data[:-len("</figure>")] + _FIT_COLUMN + "</figure>"
    return shipped


# The map has no fixed width: Plotly draws it at its container's width (autosize) and `responsive` redraws it when
# the window changes, but only after a 100-ms timer, so a page laid out first at another width (a phone turned, a
# side bar closed, headless Chromium's 500-px minimum) can show it wider than the text column; this redraws it at
# once whenever the window or the column changes width.
_FIT_COLUMN = ("<script>(function () { var f = document.currentScript.parentElement, "
               "g = f.querySelector('.plotly-graph-div'); if (!g) return; "
               "function fit() { if (window.Plotly && g._fullLayout && g.offsetWidth "
               "&& Math.abs(g._fullLayout.width - g.offsetWidth) > 1) Plotly.relayout(g, {autosize: true}); } "
               "window.addEventListener('resize', fit); "
               "if (window.ResizeObserver) new ResizeObserver(fit).observe(f); })();</script>")


def _add_time_slider(fig, frame, x: str, y: str, group: str, time: str, hover: list[str]) -> None:
    """One marker per group at its latest recorded state at or before each slider step, and the slider to move it."""
    import plotly.graph_objects as go

    steps = np.unique(frame[time])
    shown = steps[np.unique(np.linspace(0, len(steps) - 1, min(MAX_FRAMES, len(steps))).round().astype(int))]
    groups = list(dict.fromkeys(frame[group]))
    by_group = {g: frame[frame[group] == g].sort_values(time) for g in groups}
    template = f"<b>%{{customdata[0]}}</b><br>{time} %{{customdata[1]}}<br>" + "<br>".join(
        f"{c}: %{{customdata[{k + 2}]}}" for k, c in enumerate(c for c in hover if c != time)) + "<extra></extra>"

    def markers(step) -> list:
        traces = []
        for g in groups:
            rows = by_group[g][by_group[g][time] <= step].tail(1)
            custom = [[g, *rows[[time, *(c for c in hover if c != time)]].iloc[0].tolist()]] if len(rows) else []
            traces.append(go.Scatter(x=rows[x], y=rows[y], mode="markers", customdata=custom, hovertemplate=template,
                                     marker=dict(size=14, color="black", symbol="circle-open", line=dict(width=3)),
                                     showlegend=False, name=str(g)))
        return traces

    first = len(fig.data)
    for trace in markers(shown[0]):
        fig.add_trace(trace)
    moved = list(range(first, len(fig.data)))
    fig.frames = [go.Frame(data=markers(step), traces=moved, name=f"{step:g}") for step in shown]
    play = dict(frame=dict(duration=150, redraw=False), transition=dict(duration=0), fromcurrent=True, mode="immediate")
    fig.update_layout(
        updatemenus=[dict(type="buttons", showactive=False, x=0, y=-0.2, xanchor="left", yanchor="top", direction="left",
                          buttons=[dict(label="▶ play", method="animate", args=[None, play]),
                                   dict(label="❚❚ pause", method="animate",
                                        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])])],
        sliders=[dict(active=0, x=0, len=1, y=-0.34, yanchor="top", currentvalue=dict(prefix=f"{time} "),
                      steps=[dict(label=f"{step:g}", method="animate",
                                  args=[[f"{step:g}"], dict(frame=dict(duration=0, redraw=False), mode="immediate")])
                             for step in shown])])


def interactive_heatmap(frame, x: str, y: str, z: str, hover: list[str], title: str, log_colour: bool = True,
                        reverse_colour: bool = False):
    """An interactive Plotly heat map of `frame` on its (x, y) grid, colour `z` (on a log scale when `log_colour`;
    Viridis, reversed when `reverse_colour` to match a static `viridis_r` figure), hover showing every `hover`
    column of the cell; returned as `interactive_map` returns its figure."""
    import plotly.graph_objects as go

    xs, ys = sorted(frame[x].unique()), sorted(frame[y].unique())
    cells = frame.set_index([y, x])
    values = np.array([[cells[z].get((b, a), np.nan) for a in xs] for b in ys], dtype=float)
    custom = np.array([[[cells[c].get((b, a), np.nan) for c in hover] for a in xs] for b in ys], dtype=float)
    shown = np.where(np.isfinite(values), np.log10(values) if log_colour else values, np.nan)  # ∞ (censored): blank
    template = f"{x} %{{x}}<br>{y} %{{y}}<br>" + "<br>".join(
        f"{c}: %{{customdata[{k}]:.4g}}" for k, c in enumerate(hover)) + "<extra></extra>"
    fig = go.Figure(go.Heatmap(x=[f"{a:g}" for a in xs], y=[f"{b:g}" for b in ys], z=shown, customdata=custom,
                               hovertemplate=template, colorscale="Viridis", reversescale=reverse_colour,
                               colorbar=dict(title=f"log₁₀ {z}" if log_colour else z)))
    fig.update_layout(template="plotly_white", title=title, height=420, margin=dict(l=40, r=20, t=60, b=40),
                      xaxis_title=x, yaxis_title=y, plot_bgcolor="#404040")  # cells without a colour: dark
    shown = ", ".join(c.replace("_", " ") for c in hover)
    return _shipped(fig, title, f"Hover a cell for its {shown}; dark cells have no value; drag to zoom.")


def _shipped(fig, caption: str, controls: str):
    """The figure itself in an interactive session; in a book run, HTML that loads the book's own plotly.js, in a
    <figure> whose caption is `caption` and `controls` (how to use it) and whose alt text says the same."""
    from html import escape

    from IPython.display import HTML

    from ..contract import run_id

    if not run_id():
        return fig
    plot = fig.to_html(include_plotlyjs=False, full_html=False, config={"responsive": True, "displaylogo": False})
    text = f"Interactive figure: {caption}. {controls}"
    return HTML(f'<figure class="interactive-figure" role="group" aria-label="{escape(text)}">{plot}'
                f'<figcaption><em>Interactive figure.</em> {escape(caption[:1].upper() + caption[1:])}. '
                f'{escape(controls)}</figcaption></figure>')


def show_table(df, precision: int = 3):
    """A table as a page shows it: no index, integers as integers, floats to `precision` significant digits."""
    floats = df.select_dtypes("float").columns
    return df.style.hide(axis="index").format({c: f"{{:.{precision}g}}" for c in floats})
