"""Page 05 (influence and margin): its tables assembled from the library's results, its figures, the tables it
displays and the prose it glues. Nothing here decides a check: the page's rules stay in the notebook."""
from __future__ import annotations

import math
from typing import Callable, TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

if TYPE_CHECKING:  # annotations only
    from matplotlib.figure import Figure
    from pandas.io.formats.style import Styler

    from glauber_mlm.pages.checks import Calibration

from glauber_mlm.pages.plots import interval_errorbar, legend_outside, log_axis_at, panels, show_table, temperature_axis
from glauber_mlm.pages.report.high_temperature import SOME_MET
from glauber_mlm.stats import bootstrap_ci, censored_median


def _s(k: int) -> str:
    """The plural s when `k` is more than one."""
    return "s" * (k > 1)


# ---- section 1: total influence ------------------------------------------------------------------------------------

def influence_design(p: dict, full_ns: list[int], extra_ns: list[int], taus: list[float]) -> str:
    """This run's influence design: lengths, contexts and replacements, top-k and temperatures."""
    return (f"This run: n = {', '.join(map(str, full_ns))} (notebook 02's phase diagram) with {p['contexts']} contexts "
            f"and {p['replacements']} replacement token{_s(p['replacements'])} per site"
            + (f"; n = {', '.join(map(str, extra_ns))} (the longer lengths of its scaling study) with "
               f"{p['scaling_contexts']} context{_s(p['scaling_contexts'])} and {p['scaling_replacements']} "
               f"replacement{_s(p['scaling_replacements'])}, since a context costs n·(1 + replacements·n) "
               "conditionals: a looser lower bound there" if extra_ns else "")
            + f"; replacements drawn from the top {p['top_k']}; temperatures {', '.join(f'{t:g}' for t in taus)}.")


def influence_tables(summaries: dict, contexts: dict, design: dict,
                     taus: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(total, saturation): per (τ, n) the pooled and per-context estimates; the pooled estimate from k contexts."""
    infl_rows = []
    for n, s in summaries.items():
        for t, tau in enumerate(taus):
            half = (s.saturation_contexts.size + 1) // 2 - 1
            infl_rows.append(dict(temperature=tau, length=n, contexts=contexts[n], total_influence=s.pooled[t],
                                  bound="lower", pooled_half_contexts=s.saturation_mean[half, t],
                                  per_context_mean=s.per_context_mean[t], per_context_low=s.per_context_low[t],
                                  per_context_high=s.per_context_high[t], replacements=design[n][1]))
    saturation = pd.concat([pd.DataFrame(dict(
        length=n, temperature=np.repeat(taus, s.saturation_contexts.size),
        contexts=np.tile(s.saturation_contexts, len(taus)), pooled_mean=s.saturation_mean.T.ravel(),
        pooled_low=s.saturation_low.T.ravel(), pooled_high=s.saturation_high.T.ravel()))
        for n, s in summaries.items()], ignore_index=True)
    return pd.DataFrame(infl_rows), saturation


def pooled_table(total: pd.DataFrame) -> Styler:
    """The pooled estimate, one column per length."""
    pooled = total.pivot(index="temperature", columns="length", values="total_influence")
    pooled.columns = [f"n = {n}" for n in pooled.columns]  # one column of the pooled estimate per length
    return show_table(pooled.rename_axis("τ").reset_index())


def saturation_figure(saturation: pd.DataFrame, full_ns: list[int], taus: list[float]) -> Figure:
    """The pooled estimate from k contexts against k, per temperature, one panel per length with every context."""
    import matplotlib.pyplot as plt

    fig, length_axes = panels(len(full_ns), height=3.6)  # the lengths with every context (the others have a few)
    for ax, n in zip(length_axes, full_ns):
        sub = saturation[saturation.length == n]
        for k, (tau, g) in enumerate(sub.groupby("temperature")):
            color = plt.get_cmap("viridis")(k / max(1, len(taus) - 1))
            ax.fill_between(g.contexts, g.pooled_low, g.pooled_high, color=color, alpha=0.15)
            ax.plot(g.contexts, g.pooled_mean, "-", color=color, label=rf"$\tau = {tau:g}$")
        ax.axhline(1, color="k", lw=0.8)
        ax.set(yscale="log", xlabel=r"contexts $k$", ylabel=r"pooled total influence" "\n" r"from $k$ contexts",
               title=rf"$n = {n}$: saturation of the lower bound")
    handles, labels = length_axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), frameon=False)
    return fig


def saturation_table(total: pd.DataFrame, full_ns: list[int]) -> Styler:
    """Per length: the pooled estimate's largest rise from half the contexts to all; the per-context mean's share."""
    saturation_rows = []
    for n in full_ns:
        g = total[total.length == n]
        share = g.per_context_mean / g.total_influence
        saturation_rows.append({"n": n, "contexts": int(g.contexts.iloc[0]),
                                "largest rise from half the contexts to all (over τ)":
                                    f"{(g.total_influence / g.pooled_half_contexts - 1).max():.0%}",
                                "per-context mean, share of the pooled estimate":
                                    f"{share.min():.0%}–{share.max():.0%}"})
    return show_table(pd.DataFrame(saturation_rows))


# ---- section 2: the crossing temperature ---------------------------------------------------------------------------

def small_phase_diagram(mlm: object, texts: list, lengths: list[int], taus: list[float], pairs: int, budget: int,
                        seed: int, checkpoint: Callable) -> pd.DataFrame:
    """Notebook 02's pipeline on a small grid: each (τ, n) cell's censored median coupling time, share met."""
    import glauber_mlm as gm
    from glauber_mlm.models.passages import passage_pairs

    rows = []
    for n in lengths:
        x0, y0, _ = passage_pairs(mlm, texts, n, pairs, seed=seed + 31 * n)
        grid = [(tau, p) for tau in taus for p in range(pairs)]
        res = gm.coupling_times(mlm, x0.repeat(len(taus), 1), y0.repeat(len(taus), 1), budget,
                                temperature=torch.tensor([tau for tau, _ in grid]),
                                seed=(seed * 1000 + n) * 1_000_000 + torch.arange(len(grid)), progress=True,
                                checkpoint=checkpoint(f"phase_n{n}"))
        for tau in taus:
            k = torch.tensor([g[0] == tau for g in grid])
            rows.append(dict(temperature=tau, length=n, median_time=censored_median(res.times[k], res.met[k]),
                             met_fraction=res.met[k].float().mean().item(), pairs=pairs, budget=budget))
    return pd.DataFrame(rows)


def where(s: object, taus: list[float]) -> str:
    """Where the pooled estimate crosses 1 on the temperature grid: inside it, or below or above it."""
    if s.pooled.max() < 1:
        return f"below the grid: τ* ≤ {min(taus):g}"
    if s.pooled.min() >= 1:
        return f"above the grid: τ* ≥ {max(taus):g}"
    return "inside the grid"


def crossing_table(summaries: dict, design: dict, bounds: dict, phase_source: str, ns: list[int],
                   taus: list[float], upper: dict) -> pd.DataFrame:
    """Per length: τ* (a lower bound), where it lies on the grid, its certified upper bound `upper[n]` (inf: none
    known), and the measured slow-to-fast boundary."""
    return pd.DataFrame([dict(length=n, contexts=design[n][0], replacements=design[n][1],
                              crossing_temperature=summaries[n].crossing, crossing_upper=upper[n],
                              status=where(summaries[n], taus),
                              boundary_temperature=bounds.get(n, np.nan), phase_source=phase_source,
                              reading="one-sided: true Dobrushin sum ≥ estimate, so true crossing ≥ τ* (none below the "
                                      "grid)")
                         for n in ns])


def crossing_display(crossing: pd.DataFrame) -> Styler:
    """τ* and the boundary per length (the reading and the phase source are in crossing.csv and the prose)."""
    return show_table(crossing.drop(columns=["reading", "phase_source"]).assign(
        boundary_temperature=[f"{t:g}" if np.isfinite(t) else "not measured" for t in crossing.boundary_temperature])
        .rename(columns={"crossing_temperature": "τ* (lower bound)", "crossing_upper": "τ* upper bound (certified)",
                         "status": "τ* on the grid",
                         "boundary_temperature": "slow-to-fast boundary"}))


# ---- section 3: the cells above τ* ---------------------------------------------------------------------------------

def table_cells(phase: pd.DataFrame, scaling_times: pd.DataFrame | None) -> pd.DataFrame:
    """Every (τ, n) cell of 02's phase diagram and scaling study: censored median time, share met, pairs, budget."""
    cells = [phase.assign(table="phase diagram")[["table", "temperature", "length", "median_time", "met_fraction",
                                                  "pairs", "budget"]]]
    if scaling_times is not None:
        cells.append(scaling_times.groupby(["temperature", "length"]).apply(lambda g: pd.Series(dict(
            median_time=censored_median(g.time, g.met), met_fraction=g.met.mean(), pairs=len(g),
            budget=int(g.budget.iloc[0]))), include_groups=False).reset_index().assign(table="scaling study"))
    cells = pd.concat(cells, ignore_index=True)[["table", "temperature", "length", "median_time", "met_fraction",
                                                 "pairs", "budget"]]
    cells[["length", "pairs", "budget"]] = cells[["length", "pairs", "budget"]].astype(int)
    return cells


def cells_above_finding(cells: pd.DataFrame, tested: pd.DataFrame, measured_lengths: dict, scaling_note: str,
                        fast_cal: Calibration | None) -> str:
    """How many cells lie above τ* and how many of them are fast, with the rule's calibration."""
    unmeasured = sorted(set(cells.length) - set(measured_lengths))
    return (f"Of the {len(cells)} cells of notebook 02's tables{scaling_note}, **{len(tested)}** lie above τ* at their "
            "length"
            + (f" ({', '.join(f'{k}: {int(v)}' for k, v in tested.table.value_counts().items())})"
               if len(tested) else "")
            + (f", and **{int(tested.fast.sum())} of {len(tested)}** are fast" if len(tested) else
               ": the prediction has no cell to be tested on")
            + (f"; lengths without a τ* measured here: {', '.join(map(str, unmeasured))}" if unmeasured else "")
            + (f". The rule's calibration at these cells: {fast_cal}." if fast_cal else "."))


def upper_bound_finding(oscillation: float | None, crossing: pd.DataFrame, cells: pd.DataFrame,
                        tested: pd.DataFrame) -> str:
    """The certified upper bound of τ* per length, and how many of notebook 02's cells lie above it."""
    if oscillation is None:
        head = ("No upper bound on the logits' oscillation is known for this model's head, so τ* has no upper bound "
                "here and no cell is certified to meet the theorem's hypothesis")
    else:
        head = (f"The head bound gives osc ≤ {oscillation:.0f} logits, so Dobrushin's sum is below 1 in every context "
                "above τ*⁺(n) = osc / (4·artanh(1/(n − 1))): "
                + "; ".join(f"n = {r.length}: {r.crossing_upper:.0f}" for r in crossing.itertuples()))
    hottest = cells.temperature.max() if len(cells) else float("nan")
    return (head + f". **{len(tested)} of the {len(cells)}** cells of notebook 02's tables (hottest τ = {hottest:g}) "
            "lie above it" + (f", and **{int(tested.fast.sum())}** of them are fast." if len(tested) else
                              ": the bounded-influence theorem's prediction has no cell where its hypothesis is "
                              "certified, so at this scale it is not tested."))


def tested_table(tested: pd.DataFrame) -> Styler:
    """The cells above τ*, as the page shows them."""
    return show_table(tested[["table", "temperature", "length", "tau_star", "median_time", "met_fraction", "pairs",
                              "budget", "fast"]].rename(columns={"temperature": "τ", "length": "n",
                                                                 "tau_star": "τ* at n", "median_time": "median T",
                                                                 "met_fraction": "pairs met"})
                      .assign(fast=lambda d: d.fast.map({True: "yes", False: "no"})))


def _edges(v: list[float]) -> np.ndarray:
    """Cell edges on a log axis around the grid values `v` (midpoints in log; ±0.3 in log for a single value)."""
    v = np.log(np.asarray(v, float))
    mid = (v[1:] + v[:-1]) / 2 if len(v) > 1 else np.array([])
    lo = v[0] - (mid[0] - v[0] if len(mid) else 0.3)
    hi = v[-1] + (v[-1] - mid[-1] if len(mid) else 0.3)
    return np.exp(np.concatenate([[lo], mid, [hi]]))


def influence_phase_figure(total: pd.DataFrame, phase: pd.DataFrame, cells: pd.DataFrame, tested: pd.DataFrame,
                           crossing: pd.DataFrame, bounds: dict, ns: list[int], full_ns: list[int], taus: list[float],
                           mlm_name: str) -> Figure:
    """Top: total influence against τ per length; bottom: 02's phase diagram, τ*, its boundary, tested cells."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap, LogNorm

    fig, (a1, a2) = panels(2, width=8.4, height=3.9, per_row=1)  # one above the other: each has a long legend
    for k, n in enumerate(ns):
        sub = total[total.length == n]
        a1.plot(sub.temperature, sub.total_influence, "^-", color=f"C{k}", label=rf"$n = {n}$")
        if n in full_ns:  # the per-context mean needs many contexts: only at the lengths that have them
            a1.fill_between(sub.temperature, sub.per_context_low, sub.per_context_high, color=f"C{k}", alpha=0.15)
            a1.plot(sub.temperature, sub.per_context_mean, "--", color=f"C{k}", lw=1)
    a1.plot([], [], "^-", color="0.4", label="pooled max over contexts\n(lower bound)")
    a1.plot([], [], "--", color="0.4", lw=1, label="mean per context (95 %)")
    a1.axhline(1, color="k", lw=1)
    a1.set(yscale="log", xlabel=r"temperature $\tau$", ylabel=r"total influence $\alpha$",
           title=f"Dobrushin's sum, {mlm_name}")
    temperature_axis(a1, taus)
    legend_outside(a1, "right")

    p_taus, p_ns = sorted(phase.temperature.unique()), sorted(phase.length.unique())
    grid_T = (phase.pivot(index="temperature", columns="length", values="median_time")
              .reindex(index=p_taus, columns=p_ns))
    vals = grid_T.to_numpy(float)
    finite, slow = np.isfinite(vals), np.isposinf(vals)  # nan: the cell was not measured (left blank)
    cmap = plt.get_cmap("viridis_r").copy()
    cmap.set_bad("none")
    finite_T = cells.median_time[np.isfinite(cells.median_time)]
    norm = LogNorm(vmin=max(1.0, finite_T.min()) if len(finite_T) else 1.0, vmax=float(cells.budget.max()))
    mesh = a2.pcolormesh(_edges(p_ns), _edges(p_taus), np.ma.masked_where(~finite, vals), cmap=cmap, norm=norm)
    a2.pcolormesh(_edges(p_ns), _edges(p_taus), np.ma.masked_where(~slow, np.ones_like(vals)),
                  cmap=ListedColormap([SOME_MET]))
    extra = cells[cells.table == "scaling study"]  # 02's scaling cells, as squares in the same colours
    if len(extra):
        a2.scatter(extra.length, extra.temperature, s=90, marker="s", c=np.where(extra.fast, extra.median_time, np.nan),
                   cmap=cmap, norm=norm, edgecolors="0.3", plotnonfinite=False, label="scaling-study cell (02)")
        a2.scatter(extra.length[~extra.fast], extra.temperature[~extra.fast], s=90, marker="s", color=SOME_MET,
                   edgecolors="0.3")
    a2.scatter(tested.length, tested.temperature, s=190, marker="s", facecolors="none", edgecolors="red", lw=1.5,
               label=r"cell above $\tau^*$'s upper bound (tested)")
    cax = a2.inset_axes([1.04, 0, 0.04, 1])  # right beside the panel (the top panel's legend leaves the room)
    fig.colorbar(mesh, cax=cax, label="median coupling step\n(grey: the median lies beyond the\nbudget, as in Figure 02.1; blank: not measured)")
    b_n = [n for n in p_ns if np.isfinite(bounds.get(int(n), np.nan))]
    a2.plot(b_n, [bounds[int(n)] for n in b_n], "s--", color="white", mec="k", label="measured slow-to-fast boundary")
    bounded = crossing[~crossing.status.str.startswith("below")]  # below the grid, τ* bounds nothing
    interval_errorbar(a2, bounded.length, bounded.crossing_temperature, bounded.crossing_temperature, np.inf,
                      arrow=0.15, fmt="o-", color="red",
                      label=r"$\tau^*$: estimated $\alpha = 1$" "\n" "(true crossing at or above)")
    all_ns = sorted(set(p_ns) | set(cells.length) | set(ns))
    shown_taus = np.concatenate([p_taus, cells.temperature, bounded.crossing_temperature])
    a2.set(xscale="log", yscale="log", xlabel=r"length $n$", ylabel=r"temperature $\tau$",
           title="phase diagram with the Dobrushin crossing",
           xlim=(min(_edges(p_ns)[0], all_ns[0] / 1.3), max(_edges(p_ns)[-1], all_ns[-1] * 1.3)),
           ylim=(min(_edges(p_taus)[0], shown_taus.min() / 1.2), max(_edges(p_taus)[-1], shown_taus.max() * 1.6)))
    log_axis_at(a2, all_ns, "x")
    log_axis_at(a2, sorted(set(np.round(np.concatenate([p_taus, cells.temperature]), 6))), "y")
    legend_outside(a2, "below", ncol=2)
    return fig


def influence_finding(total: pd.DataFrame, crossing: pd.DataFrame, tested: pd.DataFrame, taus: list[float],
                      mlm_name: str) -> str:
    """Where the pooled estimate crosses 1 at each length, against the measured boundary and the cells above τ*."""
    near_one = min(taus, key=lambda t: abs(math.log(t)))
    rows = []
    for _, row in crossing.iterrows():
        at_one = total[(total.length == row.length) & (total.temperature == near_one)].iloc[0]
        side = "above" if at_one.total_influence > 1 else "not above"
        rows.append(f"- n = {row.length}: at τ = {near_one:g} the pooled estimate is {at_one.total_influence:.2f} "
                    f"({side} 1: Dobrushin {'fails' if side == 'above' else 'is not shown to fail'}); "
                    + (f"τ* {row.status}: nothing bounded" if row.status.startswith("below")
                       else f"true crossing ≥ τ* = {row.crossing_temperature:.2f} ({row.status})")
                    + (f"; measured slow-to-fast boundary τ = {row.boundary_temperature:g}"
                       if np.isfinite(row.boundary_temperature) else
                       "; no slow-to-fast boundary measured at this length"))
    inside = crossing[crossing.status == "inside the grid"]
    both = crossing[(crossing.status == "inside the grid") & np.isfinite(crossing.boundary_temperature)]
    opening = ((f"The pooled total influence of {mlm_name} crosses 1 at τ* = "
                + ", ".join(f"{r.crossing_temperature:.2f} (n = {r.length})" for r in inside.itertuples())
                if len(inside) else f"The pooled total influence of {mlm_name} crosses 1 inside the grid at no length")
               + (f"; at n = {', '.join(str(n) for n in crossing.length[crossing.status != 'inside the grid'])} it "
                  "does not cross inside the grid" if len(inside) < len(crossing) else "")
               + (f". The measured slow-to-fast boundary lies below τ* at "
                  f"{int((both.boundary_temperature < both.crossing_temperature).sum())} "
                  f"of the {len(both)} lengths that have both, where coupling is fast before the theorem's condition "
                  "holds" if len(both) else ". No length has both τ* and a measured slow-to-fast boundary")
               + f"; {len(tested)} cell{'s' * (len(tested) != 1)} of notebook 02's tables lie above the lower bound τ*, "
               + f"{int(tested.fast.sum())} of them fast.")
    return opening + "\n\n" + "\n".join(rows)


def print_constants(scaling_fit: pd.DataFrame | None, scaling_source: str, total: pd.DataFrame,
                    taus: list[float]) -> None:
    """Prints notebook 02's constant C(τ) of the n log n law beside the theorem's 1/δ(τ), where δ > 0."""
    if scaling_fit is None:
        print(f"no comparison of C(τ) with 1/δ: {scaling_source}.")
        return
    nlogn = scaling_fit[scaling_fit.law == "n log n"].set_index("temperature")
    for tau, row in nlogn.iterrows():
        at_tau = total[np.isclose(total.temperature, tau)]
        if at_tau.empty:
            print(f"τ = {tau:g}: no total influence measured at this temperature (grid {taus}).")
            continue
        worst = at_tau.loc[at_tau.total_influence.idxmax()]
        delta = 1 - worst.total_influence
        c_text = f"C(τ) of n log n = {row.C:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}] ({scaling_source})"
        if delta > 0:
            print(f"τ = {tau:g}: δ ≤ 1 − {worst.total_influence:.2f} = {delta:.2f} (the estimate bounds the sum from "
                  f"below; n = {worst.length:.0f}), so 1/δ ≥ {1 / delta:.2f}; {c_text}")
        else:
            print(f"τ = {tau:g}: total influence ≥ {worst.total_influence:.2f} > 1 at n = {worst.length:.0f} (δ ≤ 0): "
                  f"the theorem gives no constant; {c_text}")


# ---- section 4: local margins --------------------------------------------------------------------------------------

def chain_design(passages: int, length: int, p: dict, chain_taus: list[float]) -> str:
    """This run's chains: passages, chains per passage, temperatures, steps and the margins' schedule."""
    return (f"This run: {passages} passages of {length} tokens, {p['seeds']} chain{_s(p['seeds'])} each at τ = "
            f"{', '.join(f'{t:g}' for t in chain_taus)}, {p['steps']} steps, margins every {p['record_every']} steps; "
            f"the dwell study below measures the margins of at most {p['dwell_states']} dwells per temperature.")


def margin_rows(m: torch.Tensor, grid: list, snap_steps: list) -> pd.DataFrame:
    """One row per (record, chain, site) of the local margins `m` (S, B, n), with the chain's temperature and start."""
    S, B, L = m.shape
    return pd.DataFrame([dict(temperature=grid[b][0], passage=grid[b][1], seed=grid[b][2], chain=b, step=snap_steps[k],
                              site=i, margin=m[k, b, i].item())
                         for k in range(S) for b in range(B) for i in range(L)])


def margin_summary(margin_table: pd.DataFrame, changed: torch.Tensor, chain_temp: torch.Tensor,
                   seed: int) -> pd.DataFrame:
    """Per τ: median site margin (interval), median weakest-site margin, share with m/τ > 3, changes per step."""
    summary = []
    for tau, sub in margin_table.groupby("temperature"):
        per_state_min = sub.groupby(["chain", "step"]).margin.min()
        med, lo, hi = bootstrap_ci(sub.margin, np.median, seed=seed)
        summary.append(dict(temperature=tau, sites=len(sub), median_margin=med, ci_low=lo, ci_high=hi,
                            median_state_min_margin=per_state_min.median(),
                            frac_sites_margin_over_tau_above_3=(sub.margin / tau > 3).mean(),
                            changes_per_step=changed[:, (chain_temp == tau).numpy()].float().mean().item()))
    return pd.DataFrame(summary)


def margin_display(margin_summary: pd.DataFrame) -> Styler:
    """The margin summary with the page's column names."""
    return show_table(margin_summary.rename(columns={
        "temperature": "τ", "median_margin": "median site margin", "ci_low": "95 % low", "ci_high": "95 % high",
        "median_state_min_margin": "median weakest-site margin",
        "frac_sites_margin_over_tau_above_3": "share with m/τ > 3", "changes_per_step": "changes per step"}))


def margins_figure(margin_table: pd.DataFrame) -> Figure:
    """Histograms of the local margins per temperature, in logits (left) and in units of τ (right)."""
    fig, (a1, a2) = panels(2, height=3.8)
    bins = np.linspace(0, max(1.0, margin_table.margin.quantile(0.99)), 40)
    for k, (tau, sub) in enumerate(margin_table.groupby("temperature")):
        a1.hist(sub.margin, bins=bins, histtype="step", lw=1.5, density=True, color=f"C{k}", label=rf"$\tau = {tau:g}$")
        a2.hist(sub.margin / tau, bins=np.linspace(0, 40, 41), histtype="step", lw=1.5, density=True, color=f"C{k}",
                label=rf"$\tau = {tau:g}$")
    a1.set(xlabel=r"local margin $m$ (logit gap at $\tau = 1$)", ylabel="density", title="margins along the chains")
    a2.set(xlabel=r"tempered margin $m / \tau$", ylabel="density", title=r"the same, in units of $\tau$")
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), frameon=False)
    return fig


def margins_finding(margin_summary: pd.DataFrame) -> str:
    """The lowest temperature's typical and weakest-site margins, then one line per temperature."""
    rows = [f"- τ = {r.temperature:g}: median site margin {r.median_margin:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}] "
            f"logits, median weakest-site margin of a state {r.median_state_min_margin:.2f}, "
            f"{r.frac_sites_margin_over_tau_above_3:.0%} of sites with m/τ > 3, {r.changes_per_step:.3f} changes per "
            "step"
            for r in margin_summary.itertuples()]
    low = margin_summary.sort_values("temperature").iloc[0]
    return (f"At the lowest chain temperature, τ = {low.temperature:g}, the typical site holds its token by "
            f"{low.median_margin:.2f} logits [{low.ci_low:.2f}, {low.ci_high:.2f}] but a typical state's weakest site "
            f"by only {low.median_state_min_margin:.2f}, and the chains still change a token on "
            f"{low.changes_per_step:.1%} of steps: "
            + ("the uniform margin the theorem assumes is absent in a typical state."
               if low.median_state_min_margin < low.median_margin / 2 else
               "the weakest site holds its token by at least half the typical margin.")
            + "\n\n" + "\n".join(rows))


# ---- section 5: dwell against margin -------------------------------------------------------------------------------

def dwell_fit_table(fit: dict, chains: int, dwells: int, length: int) -> pd.DataFrame:
    """The censored geometric fit of log E[dwell] ≈ c·m/τ + b as one row, with log n beside b."""
    return pd.DataFrame([dict(fit="log E[dwell] ≈ c·m/τ + b (censored geometric)", c=fit["slope"],
                              c_low=fit["slope_low"], c_high=fit["slope_high"], b=fit["intercept"], traps=fit["count"],
                              censored_traps=fit["censored"], chains=chains, dwells=dwells, log_n=math.log(length))])


def dwell_fit_display(fit_table: pd.DataFrame) -> Styler:
    """The one fit as a list of its quantities rather than one wide row."""
    fit_row = fit_table.iloc[0]
    return show_table(pd.DataFrame(dict(quantity=[
        "fit", "rate c [95 % interval over chains]", "intercept b (against log n)", "traps (censored)", "chains",
        "dwells with margins measured"], value=[
        fit_row.fit, f"{fit_row.c:.2f} [{fit_row.c_low:.2f}, {fit_row.c_high:.2f}]",
        f"{fit_row.b:.2f} ({fit_row.log_n:.2f})", f"{fit_row.traps:.0f} ({fit_row.censored_traps:.0f})",
        f"{fit_row.chains:.0f}", f"{fit_row.dwells:.0f}"])))


def dwell_figure(dwell: pd.DataFrame, fit_rows: pd.DataFrame, fit: dict) -> Figure:
    """Dwell against m/τ: left the traps (m > 0) the fit reads, with the fit; right every measured visit (symlog)."""
    # left: the traps (m > 0) the fit reads, on an axis from 0 to their largest m/τ; right: every measured visit, on a
    # symmetric-log axis (linear within ±1), so that the many visits left of zero do not squeeze the traps
    fig, (ax, ax_all) = panels(2, height=4.0)
    for k, (tau, sub) in enumerate(dwell.groupby("temperature")):
        for a, rows in ((ax, sub[sub.trap]), (ax_all, sub)):
            done, cens = rows[~rows.censored], rows[rows.censored]
            a.scatter(done.margin_over_tau, done.dwell, s=10, alpha=0.5, color=f"C{k}",
                      label=rf"$\tau = {tau:g}$" if a is ax else None)
            a.scatter(cens.margin_over_tau, cens.dwell, s=30, marker="^", facecolors="none", color=f"C{k}")
    ax.scatter([], [], marker="^", facecolors="none", color="k", label="censored (still trapped at the end)")
    if np.isfinite(fit["slope"]):
        xs = np.linspace(0, max(1e-9, fit_rows.margin_over_tau.max()), 50)
        ax.plot(xs, np.exp(fit["intercept"] + fit["slope"] * xs), "k--",
                label=rf"censored fit: $c = {fit['slope']:.2f}$ [{fit['slope_low']:.2f}, {fit['slope_high']:.2f}]")
    # one range for both panels, set by the data (and valid with no trap)
    dwell_range = (0.8, 1.3 * max(1, dwell.dwell.max()))
    ax.set(yscale="log", ylim=dwell_range, xlim=(0, 1.05 * max(1e-9, fit_rows.margin_over_tau.max())),
           xlabel=r"smallest token margin of the state $/\,\tau$", ylabel="dwell (steps)",
           title=f"traps (m > 0): {int(dwell.trap.sum())} visits")
    ax_all.axvline(0, color="grey", lw=0.8)
    ax_all.set_xscale("symlog", linthresh=1.0)
    ax_all.set(yscale="log", ylim=dwell_range,
               xlim=(1.1 * min(-1.0, dwell.margin_over_tau.min()), 1.1 * max(1.0, dwell.margin_over_tau.max())),
               xlabel=r"smallest token margin $/\,\tau$ (symmetric log)", ylabel="dwell (steps)",
               title=f"every measured visit: {len(dwell)}")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return fig


def dwell_finding(fit: dict, dwell: pd.DataFrame, fit_rows: pd.DataFrame, vocab: int, length: int) -> str:
    """The rate c against the predicted 1, and whether the traps reach the margin bound's range m/τ > ln(V − 1)."""
    if not np.isfinite(fit["slope"]):
        return (f"Too few traps ({fit['count']}) with distinct margins, or every one censored: no fit of c; "
                f"{int(dwell.trap.sum())} of the {len(dwell)} measured dwells are traps (m > 0).")
    verdict = ("below the predicted 1" if fit["slope_high"] < 1 else "above the predicted 1" if fit["slope_low"] > 1
               else "consistent with the predicted 1")
    growth = "grows" if fit["slope_low"] > 0 else "is not shown to grow"
    return (f"Over {fit['count']} traps ({fit['censored']} censored), the dwell {growth} with m/τ at the rate "
            f"c = {fit['slope']:.2f} [{fit['slope_low']:.2f}, {fit['slope_high']:.2f}], {verdict} "
            f"(b = {fit['intercept']:.2f} against log n = {math.log(length):.2f}); {int(dwell.trap.sum())} of the "
            f"{len(dwell)} measured dwells are traps (m > 0). The largest m/τ among them is "
            f"{fit_rows.margin_over_tau.max():.1f}, against ln(V − 1) = {math.log(vocab - 1):.1f} (V = {vocab} tokens "
            "in the support), so "
            + ("the margin theorem is not testable at this scale: its bound is vacuous at every m/τ reached."
               if fit_rows.margin_over_tau.max() <= math.log(vocab - 1)
               else "its largest traps reach the bound's range.")
            + " Either way c ≈ 1 and b ≈ log n hold by construction for one state under random scan, so the fit "
              "decides nothing.")


# ---- the result box ------------------------------------------------------------------------------------------------

def margin_regime(fit_rows: pd.DataFrame, vocab: int) -> str:
    """Can this scale test the margin theorem? Its bound (V − 1)e^{−m/τ} < 1 only where m/τ > ln(V − 1)."""
    log_v1 = math.log(vocab - 1)
    if not len(fit_rows):
        return f"not testable at this scale: no traps (m > 0) to compare with ln(V − 1) = {log_v1:.1f}"
    largest, inside = fit_rows.margin_over_tau.max(), int((fit_rows.margin_over_tau > log_v1).sum())
    if inside == 0:
        return (f"not testable at this scale: the largest m/τ among the traps is {largest:.1f}, not above "
                f"ln(V − 1) = {log_v1:.1f}, where the bound is vacuous")
    return (f"{inside} of {len(fit_rows)} traps reach m/τ > ln(V − 1) = {log_v1:.1f} (largest {largest:.1f}), but a "
            "single state's dwell is geometric by construction: the theorem's escape from a basin is not tested here")


def key_numbers(crossing: pd.DataFrame, tested: pd.DataFrame, beside: pd.DataFrame, cells: pd.DataFrame,
                margin_summary: pd.DataFrame, fit: dict, finite_c: bool, fit_rows: pd.DataFrame,
                vocab: int) -> dict[str, str]:
    """The result box's key numbers, formatted with their intervals: `tested` the cells above τ*'s upper bound,
    `beside` those above its lower bound."""
    lowest = margin_summary.sort_values("temperature").iloc[0]
    regime_text = margin_regime(fit_rows, vocab)
    return {
        "crossing τ* of the pooled total influence by length, with the phase diagram's slow-to-fast boundary (τ* is "
        "a lower bound on the true crossing; a side reading: the grid's highest τ makes it cross, so it cannot fail)":
            "; ".join(f"n = {r.length}: "
                      + (f"{r.crossing_temperature:.2f}" if r.status == "inside the grid" else r.status)
                      + " (boundary " + (f"{r.boundary_temperature:g}" if np.isfinite(r.boundary_temperature)
                                         else "not measured") + ")"
                      for r in crossing.itertuples()),
        "τ*'s certified upper bound by length (head bound; the theorem's hypothesis holds in every context above it)":
            "; ".join(f"n = {r.length}: " + (f"{r.crossing_upper:.0f}" if np.isfinite(r.crossing_upper) else "none known")
                      for r in crossing.itertuples()),
        "cells of notebook 02's tables above τ*'s certified upper bound (fast / above / all)":
            f"{int(tested.fast.sum())} / {len(tested)} / {len(cells)}",
        "cells above τ*'s lower bound, the rule before 2026-12-06 (fast / above / all)":
            f"{int(beside.fast.sum())} / {len(beside)} / {len(cells)}",
        f"median weakest-site margin of a state at τ = {lowest.temperature:g}":
            f"{lowest.median_state_min_margin:.2f} logits",
        "dwell–margin rate c (censored geometric fit, 95% bootstrap over chains; c ≈ 1 by construction for one state "
        "under random scan, so a side reading)":
            f"{fit['slope']:.2f} [{fit['slope_low']:.2f}, {fit['slope_high']:.2f}] over {fit['count']} traps "
            f"({fit['censored']} censored)" if finite_c else f"not fitted: {fit['count']} traps",
        "the margin theorem (its bound says something only where m/τ > ln(V − 1))": regime_text,
    }
