"""Page 03 (metastability traps): its figures, display tables, table assembly and prose.

Imported only by notebooks/03_metastability_traps.py. Nothing here decides a check: the page's rules, their
calibrations and the library calls that measure the chains stay in the notebook; these functions lay out what those
calls returned (tables with reader names, the figures, the sentences glued into the page and its result box).

The long chains come in two halves of `PS` chains each (low τ first, then the hot control from the same starts with
the same seeds): chain `c` of either half starts from passage `chain_start[c % PS]` with seed `chain_seed[c % PS]`,
and `kinds` maps each half's name ("low τ", "control") to its temperature.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from glauber_mlm.measures import semantic
from glauber_mlm.pages.plots import interactive_map, interval_errorbar, legend_outside, panels, temperature_axis
from glauber_mlm.stats import bootstrap_ci, km_median, km_survival, proportion_ci

# tables show reader names, not variable names: τ for temperature, "95 % low/high" for interval ends, spaces
READER = {"temperature": "τ", "delta": "δ", "delta_quantile": "δ quantile"}


def reader(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with reader names for its columns (τ, δ, "95 % low/high", spaces for underscores)."""
    return df.rename(columns=lambda c: READER.get(c, c.replace("ci_low", "95 % low").replace("ci_high", "95 % high")
                                                  .replace("_", " ")))


def show(df: pd.DataFrame) -> None:
    """Display `df` as the page's tables are shown: reader names (`reader`), three decimals (`plots.show_table`)."""
    from IPython.display import display

    from glauber_mlm.pages.plots import show_table

    display(show_table(reader(df)))


def glue_md(name: str, text: str) -> None:
    """Glue `text` (Markdown) as `name` for the prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(text), display=False)


def glue_design(run, kinds: dict[str, float], q_radius: float, q_panel: list[float], q_deltas: list[float]) -> None:
    """Glue the design's values for the prose ({glue:text}`steps` and so on): the page names values, not variables."""
    from IPython.display import Markdown
    from myst_nb import glue

    for key in ("calibration_passages", "neighbours", "min_dwell", "steps", "seeds", "record_every", "chains",
                "reach_steps", "null_copies", "null_replicates"):
        glue(key, int(run[key]), display=False)
    glue("cal_replicates", int(run["calibration_replicates"]), display=False)
    glue("temperature", kinds["low τ"], display=False)
    glue("control_temperature", kinds["control"], display=False)
    glue("radius_quantile", q_radius, display=False)
    glue("radius_quantiles", Markdown(", ".join(f"{q:g}" for q in q_panel)), display=False)
    glue("delta_quantiles", Markdown(", ".join(f"{q:g}" for q in q_deltas)), display=False)


def glue_trap_calibration(trap_cal) -> None:
    """Glue the trap criterion's rule (its margin and level) and its calibration's size and power for the prose."""
    from myst_nb import glue

    from glauber_mlm.pages.planted.traps import TRAP_ALPHA, TRAP_MARGIN

    glue("trap_margin", f"{TRAP_MARGIN:g}", display=False)
    glue("trap_alpha", f"{TRAP_ALPHA:g}", display=False)
    glue("trap_size", f"{trap_cal.size:.3f}", display=False)
    glue("trap_power", f"{trap_cal.power:.3f}", display=False)


def say(name: str, printed: str, finding: str) -> None:
    """Print a section's summary and glue its finding (Markdown) as `name` for the prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    print(printed)
    glue(name, Markdown(finding), display=False)


def _half(kind: str, PS: int) -> slice:
    return slice(0, PS) if kind == "low τ" else slice(PS, 2 * PS)


def _colour(k: int, n: int):
    import matplotlib.pyplot as plt

    return plt.get_cmap("viridis")(k / max(1, n - 1))


# ---- calibration of the thresholds ----------------------------------------------------------------------------------

def calibration_table(radii: dict[float, float], q_radius: float, jitter: np.ndarray, q_deltas: list[float],
                      deltas: list[float], between: np.ndarray) -> pd.DataFrame:
    """One row per calibrated threshold: the trap radius, the panel's radii and the escape distances δ."""
    return pd.DataFrame(
        [dict(threshold="trap radius" if q == q_radius else "radius (panel)", source="one-token jitter", level=q,
              value=float(r), sample=len(jitter)) for q, r in radii.items()]
        + [dict(threshold="escape distance δ", source="independent passages", level=q, value=d, sample=len(between))
           for q, d in zip(q_deltas, deltas)])


def calibration_figure(jitter: np.ndarray, between: np.ndarray, radii: dict[float, float], q_radius: float,
                       q_deltas: list[float], deltas: list[float]):
    """Histograms of the one-token jitter (with the radii) and of the distances between passages (with the δ)."""
    fig, axes = panels(2, height=3.2)
    ax = axes[0]
    ax.hist(jitter, bins=40, color="0.6")
    for q, r in radii.items():
        ax.axvline(r, color="tab:red", lw=2 if q == q_radius else 0.8, ls="-" if q == q_radius else ":")
    ax.set(xlabel="embedding distance to a one-token neighbour", ylabel="neighbours",
           title=f"one-token jitter ({len(jitter)} neighbours)\nradius at q = {q_radius:g} (solid), panel (dotted)")
    ax = axes[1]
    ax.hist(between, bins=40, color="0.6")
    for (q, d), ls in zip(zip(q_deltas, deltas), ("-", "--", ":", "-.")):
        ax.axvline(d, color="tab:blue", lw=1.2, ls=ls, label=rf"$\delta$ = {d:.2f} (q = {q:g})")
    ax.set(xlabel="embedding distance between two passages", ylabel="pairs",
           title=f"independent passages ({len(between)} pairs)\n" r"escape distances $\delta$")
    # the δ lines are close together: their labels go under the panel, clear of its axis label
    legend_outside(ax, "below", ncol=1, bbox_to_anchor=(0.5, -0.3))
    return fig


def calibration_prose(passages: int, radius: float, q_radius: float, jitter: np.ndarray, q_deltas: list[float],
                      deltas: list[float], between: np.ndarray) -> tuple[str, str]:
    """(the printed summary, the glued finding) of the calibration."""
    said = (f"calibrated from {passages} passages, before any chain ran: trap radius r = {radius:.3f} "
            f"(q = {q_radius:g} of {len(jitter)} one-token jitters; median jitter {np.median(jitter):.3f}); "
            f"δ = {', '.join(f'{d:.3f}' for d in deltas)} (q = {', '.join(f'{q:g}' for q in q_deltas)} of {len(between)} "
            f"distances between passages; median {np.median(between):.3f})")
    finding = (
        f"The trap radius is r = {radius:.3f}, the {q_radius:g} quantile of {len(jitter)} one-token jitters (median "
        f"{np.median(jitter):.3f}); the escape distances δ = {', '.join(f'{d:.3f}' for d in deltas)} are the "
        f"{', '.join(f'{q:g}' for q in q_deltas)} quantiles of {len(between)} distances between independent passages "
        f"(median {np.median(between):.3f}), so one token change typically moves a passage "
        f"{np.median(between) / np.median(jitter):.1f}× less than the distance between two unrelated passages.")
    return said, finding


# ---- the long trajectories and their map ----------------------------------------------------------------------------

def motion_summary(kinds: dict[str, float], changed: np.ndarray, dist: np.ndarray, texts: np.ndarray) -> str:
    """Per half: the share of steps that changed a token, the distance from the start late in the run, distinct texts."""
    R, PS = dist.shape[0], dist.shape[1] // 2
    lines = []
    for k, tau in kinds.items():
        d2 = dist[R // 2:, _half(k, PS)]
        lines.append(f"{k} (τ = {tau:g}): {changed[_half(k, PS)].mean():.1%} of steps changed a token; distance from "
                     f"the start over the second half: median {np.median(d2):.2f} (range {d2.min():.2f}–{d2.max():.2f}); "
                     f"{len(set(texts[:, _half(k, PS)].ravel()))} distinct texts among {R * PS} records")
    return "\n".join(lines)


def trajectory_maps(chain0: np.ndarray, record_steps: np.ndarray, text: np.ndarray, distance: np.ndarray,
                    umap: bool, seed: int) -> tuple[pd.DataFrame, list[tuple[str, np.ndarray]]]:
    """One chain's embeddings (R, d) projected for the map: PCA, and UMAP when asked; the trajectory table."""
    pcs = semantic.pca_2d(chain0)
    trajectory = pd.DataFrame(dict(step=record_steps, pc1=pcs[:, 0], pc2=pcs[:, 1], text=text,
                                   distance_from_start=distance))
    maps = [("PCA", pcs)]
    if umap:
        um = semantic.umap_2d(chain0, seed=seed)
        trajectory["umap1"], trajectory["umap2"] = um[:, 0], um[:, 1]
        maps.append(("UMAP", um))
    return trajectory, maps


def start_colours(n: int) -> list:
    """One colour per starting passage, from a qualitative palette whose neighbours differ in hue (tab10, or tab20
    beyond ten starts): the book's colour-blind palette has three near-identical oranges among its ten."""
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(k % cmap.N) for k in range(n)]


def trajectory_map_figure(maps: list[tuple[str, np.ndarray]], record_steps: np.ndarray, dist: np.ndarray,
                          chain_start: np.ndarray, start_ids: list[str], kinds: dict[str, float], seeds: int,
                          model: str, steps: int):
    """Top: the first chain's projected embeddings (one panel per map, PCA then UMAP); bottom, across the width:
    every chain's distance from its start, one colour per starting passage, solid at low τ and dotted for its control."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from glauber_mlm.pages.plots import MAX_WIDTH

    PS = len(chain_start)
    tau_low, tau_ctl = kinds.values()
    names = [name for name, _ in maps]
    top = [names[0], names[0], names[1], names[1]] if len(maps) > 1 else [".", names[0], names[0], "."]  # one: centred
    fig, ax_of = plt.subplot_mosaic([top, ["distance"] * 4], figsize=(MAX_WIDTH - 0.25, 6.6), layout="constrained",
                                    height_ratios=[1.1, 1])
    for name, Y in maps:
        ax = ax_of[name]
        ax.plot(Y[:, 0], Y[:, 1], color="0.8", lw=0.5, zorder=1)
        sc = ax.scatter(Y[:, 0], Y[:, 1], c=record_steps, cmap="coolwarm_r", s=10, zorder=2)
        ax.scatter(*Y[0], marker="*", s=180, color="k", zorder=3)
        ax.set(title=f"{name} of the sentence embeddings (★: start)", xlabel=f"{name} 1", ylabel=f"{name} 2")
    fig.colorbar(sc, ax=ax_of[maps[-1][0]], label="step")
    ax = ax_of["distance"]
    colours = start_colours(len(start_ids))
    for c in range(2 * PS):
        k = c % PS
        ax.plot(record_steps, dist[:, c], lw=1.0 if c < PS else 0.9, color=colours[chain_start[k]],
                ls="-" if c < PS else ":", label=start_ids[chain_start[k]] if c < PS and k % seeds == 0 else None)
    ax.set(title=rf"distance of every chain from its start: solid $\tau = {tau_low:g}$, dotted $\tau = {tau_ctl:g}$ "
           "(its control)", xlabel="step", ylabel=r"$\|e_t - e_0\|$")
    handles = [Line2D([], [], color="0.3", ls="-", label=rf"$\tau = {tau_low:g}$ (solid)"),
               Line2D([], [], color="0.3", ls=":", label=rf"$\tau = {tau_ctl:g}$, control (dotted)")]
    ax.legend(handles=handles + ax.get_legend_handles_labels()[0], loc="upper center", bbox_to_anchor=(0.5, -0.22),
              ncol=3, frameon=False, title="line style: temperature; colour: starting passage")
    fig.suptitle(f"{model}: {steps} Glauber steps from {len(start_ids)} passages × {seeds} seed{'s' if seeds > 1 else ''}")
    return fig


def trajectory_finding(kinds: dict[str, float], changed: np.ndarray, dist: np.ndarray) -> str:
    """Where the two halves sit late in the run, and how often they change a token."""
    R, PS = dist.shape[0], dist.shape[1] // 2
    tau_low, tau_ctl = kinds.values()
    late = {k: np.median(dist[R // 2:, _half(k, PS)]) for k in kinds}
    return (f"Over the second half of the runs the low-temperature chains (τ = {tau_low:g}) lie at median distance "
            f"{late['low τ']:.2f} from their start and change a token at {changed[_half('low τ', PS)].mean():.1%} of "
            f"steps; the controls (τ = {tau_ctl:g}) lie at {late['control']:.2f} and change a token at "
            f"{changed[_half('control', PS)].mean():.1%} of steps.")


def explore_chains(emb: np.ndarray, dist: np.ndarray, texts: np.ndarray, record_steps: np.ndarray,
                   kinds: dict[str, float], start_ids: list[str], chain_start: np.ndarray, chain_seed: np.ndarray):
    """The interactive map of every chain (emb: R, 2·PS, d) on the principal axes of all their embeddings."""
    PS, R = len(chain_start), emb.shape[0]
    xy = semantic.pca_2d(emb.reshape(R * 2 * PS, -1)).reshape(R, 2 * PS, 2)
    tau_low, tau_ctl = kinds.values()
    explore = pd.DataFrame([dict(chain=f"τ = {tau_low if c < PS else tau_ctl:g}, {start_ids[chain_start[c % PS]]}, "
                                      f"seed {chain_seed[c % PS]}", step=int(record_steps[r]),
                                 **{"PC 1": xy[r, c, 0], "PC 2": xy[r, c, 1]}, distance=round(float(dist[r, c]), 3),
                                 text=texts[r, c])
                            for c in range(2 * PS) for r in range(R)])
    return interactive_map(explore, "PC 1", "PC 2", "chain", ["step", "distance"],
                           "chains on the principal axes of their embeddings", text="text")


# ---- traps at a radius ----------------------------------------------------------------------------------------------

def trap_tables(traps: pd.DataFrame, frac: np.ndarray, r: float, kinds: dict[str, float], start_ids: list[str],
                chain_start: np.ndarray, chain_seed: np.ndarray, steps: int, min_dwell: int
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """From `semantic.chain_traps` at radius r and `semantic.time_trapped`: the trap table labelled by chain, one
    summary row per temperature (bootstrap intervals over chains, Kaplan–Meier median dwell) and the paired
    comparison of time trapped, low τ − control."""
    PS = len(chain_start)
    t = traps
    t.insert(0, "kind", np.where(t.chain < PS, "low τ", "control") if len(t) else [])
    t.insert(1, "temperature", np.where(t.chain < PS, *kinds.values()) if len(t) else [])
    t.insert(2, "start_passage", [start_ids[chain_start[c % PS]] for c in t.chain])
    t.insert(3, "seed", [int(chain_seed[c % PS]) for c in t.chain])
    counts = t.groupby("chain").size().reindex(range(2 * PS), fill_value=0).to_numpy()
    out = []
    for k, tau in kinds.items():
        sel, tk = _half(k, PS), t[t.kind == k]
        med = km_median(tk.dwell, tk.escaped) if len(tk) else (np.nan, np.nan, np.nan)
        out.append(dict(kind=k, temperature=tau, chains=PS, steps=steps, radius=r, min_dwell=min_dwell,
                        **dict(zip(["traps_per_chain", "ci_low", "ci_high"], bootstrap_ci(counts[sel]))),
                        **dict(zip(["time_trapped", "time_trapped_ci_low", "time_trapped_ci_high"],
                                   bootstrap_ci(frac[sel]))),
                        median_dwell=med[0], median_dwell_ci_low=med[1], median_dwell_ci_high=med[2],
                        escaped=int(tk.escaped.sum()), censored=int((~tk.escaped).sum())))
    d, lo, hi = bootstrap_ci(frac[:PS] - frac[PS:])     # paired: same start, same seed
    criterion = dict(radius=r, pairs=PS, time_trapped_low=frac[:PS].mean(), time_trapped_control=frac[PS:].mean(),
                     difference=d, ci_low=lo, ci_high=hi, separates=bool(lo > 0))
    return t, pd.DataFrame(out), criterion


def traps_display(traps: pd.DataFrame, longest: int | None = None):
    """The table of traps with the decoded text at each entry, wrapped; `longest`: only that many, the longest first
    (the evidence a reader sees open, beside the folded full table)."""
    from glauber_mlm.pages.plots import show_table

    if longest is not None:
        traps = traps.sort_values(["dwell", "start_step"], ascending=[False, True], kind="stable").head(longest)
    return show_table(reader(traps[["kind", "start_passage", "seed", "start_step", "end_step", "dwell", "escaped",
                                    "entry_text"]])).set_properties(
        subset=["entry text"], **{"white-space": "normal", "min-width": "24em", "text-align": "left"})


def by_chain_table(start_ids: list[str], chain_start: np.ndarray, chain_seed: np.ndarray, frac: np.ndarray,
                   changed: np.ndarray) -> pd.DataFrame:
    """Per pair of chains (same start, same seed): time trapped and share of steps that changed a token, both τ."""
    PS = len(chain_start)
    return pd.DataFrame(dict(start_passage=[start_ids[chain_start[k]] for k in range(PS)], seed=chain_seed,
                             time_trapped_low=frac[:PS], time_trapped_control=frac[PS:],
                             changed_low=changed[:PS], changed_control=changed[PS:]))


def by_chain_summary(by_chain: pd.DataFrame, crit: dict, radius: float, q_radius: float, kinds: dict[str, float],
                     steps: int, min_dwell: int) -> str:
    """Time trapped chain by chain, and what the (side) comparison with the hot control says."""
    tau_low, tau_ctl = kinds.values()
    lines = [f"radius r = {radius:.3f} (jitter quantile {q_radius:g}), traps of ≥ {min_dwell} steps in "
             f"{steps}-step runs; fraction of time trapped per chain:"]
    for _, row in by_chain.iterrows():
        lines.append(f"  {row.start_passage}, seed {row.seed}: τ = {tau_low:g}: {row.time_trapped_low:.0%} "
                     f"(tokens changed at {row.changed_low:.1%} of steps); τ = {tau_ctl:g}: {row.time_trapped_control:.0%} "
                     f"({row.changed_control:.1%})")
    verdict = ("separates them: the low-temperature chains are trapped more than their controls"
               if crit["separates"] else
               "does NOT separate them: the interval of the difference reaches zero or below, so these traps are not "
               "evidence of metastability beyond what the detector finds in the hot control")
    lines.append(f"mean time trapped: {crit['time_trapped_low']:.0%} at τ = {tau_low:g} vs "
                 f"{crit['time_trapped_control']:.0%} at τ = {tau_ctl:g}; paired difference {crit['difference']:+.0%} "
                 f"[{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}] over {len(by_chain)} pairs. The comparison with the "
                 f"hot control (a side check) {verdict}.")
    return "\n".join(lines)


def twin_table(start_ids: list[str], chain_start: np.ndarray, chain_seed: np.ndarray, changed: np.ndarray,
               twin_rates: np.ndarray, scores: dict) -> pd.DataFrame:
    """Per low-temperature chain at the calibrated radius: its change rate and its twins' (below it only where no
    product law reaches it), time trapped and trap spread, its basin-free twins' (means), the excess spread in units
    of r², and its rank among its twins."""
    PS = len(chain_start)
    return pd.DataFrame(dict(start_passage=[start_ids[chain_start[k]] for k in range(PS)], seed=chain_seed,
                             change_rate=changed[:PS], twin_change_rate=twin_rates, time_trapped_low=scores["trapped"],
                             time_trapped_twins=scores["twin_trapped"], trap_spread_low=scores["spread"],
                             trap_spread_twins=scores["twin_spread"], excess_in_r2=scores["excess"],
                             rank_among_twins=scores["rank"]))


def twin_summary(radius: float, tau_low: float, scores: dict, copies: int, excess: tuple[float, float, float],
                 passes: bool, twins: pd.DataFrame) -> str:
    """The chains against their basin-free twins at the calibrated radius: time trapped, trap spread, the criterion;
    first, where there are some, the chains whose twins could not reach their change rate (`twin_table` `twins`)."""
    from glauber_mlm.pages.planted.traps import TRAP_ALPHA, TRAP_MARGIN

    slower = int((twins.twin_change_rate < twins.change_rate - 1e-6).sum())
    note = (f"{slower} of {len(scores['spread'])} chains changed tokens faster than any product law over the "
            "vocabulary can: their twins run at the flattest law, slower, which makes them look more trapped and "
            "the criterion harder to pass; " if slower else "")
    return (f"{note}at radius {radius:.3f}, τ = {tau_low:g}: time trapped {scores['trapped'].mean():.0%}, its {copies} basin-free "
            f"twins per chain {scores['twin_trapped'].mean():.0%}; trap spread {scores['spread'].mean():.3g} vs "
            f"{scores['twin_spread'].mean():.3g}; excess {excess[0]:+.2f} r² [{excess[1]:+.2f}, {excess[2]:+.2f}] "
            f"(95% bootstrap over {len(scores['spread'])} chains); permutation p = {scores['p']:.3g}; the criterion "
            f"(p < {TRAP_ALPHA:g} and mean excess ≥ {TRAP_MARGIN:g} r²) {'passes' if passes else 'does not pass'}.")


def calibration_rows(named: dict, **extra) -> pd.DataFrame:
    """One row per calibrated check: its power, size, replicates and whether it decides (plus `extra` columns)."""
    return pd.DataFrame([dict(check=name, power=c.power, size=c.size, replicates=c.replicates, decisive=c.decisive,
                              **extra) for name, c in named.items()])


def traps_figure(traps: pd.DataFrame, kinds: dict[str, float], start_ids: list[str], chain_start: np.ndarray,
                 chain_seed: np.ndarray, steps: int, radius: float, min_dwell: int):
    """Top: each chain's traps as bars over the steps (blue escaped, orange censored), low τ above the line and the
    controls below, each row labelled by its start (and seed, where there are several per start); bottom: the
    dwells' Kaplan–Meier survival per temperature."""
    PS = len(chain_start)
    several = len(set(chain_start.tolist())) < PS  # several seeds per start: the label needs the seed
    bars_height = 0.7 + 0.2 * 2 * PS  # one bar per chain (a row a label high), above the survival curves
    fig, (ax, a2) = panels(2, height=(bars_height + 2.3) / 2, per_row=1,
                           gridspec_kw=dict(height_ratios=[bars_height, 2.3]))
    labels = []
    for c in range(2 * PS):
        ax.plot([0, steps], [c, c], color="0.88", lw=7, solid_capstyle="butt")
        for _, t in traps[traps.chain == c].iterrows():
            ax.plot([t.start_step, t.end_step], [c, c], lw=7, solid_capstyle="butt",
                    color="tab:blue" if t.escaped else "tab:orange")
        labels.append(start_ids[chain_start[c % PS]] + (f" s{chain_seed[c % PS]}" if several else ""))
    ax.axhline(PS - 0.5, color="k", lw=0.8)
    ax.set(yticks=range(2 * PS), xlabel="step", xlim=(0, steps), title=rf"traps ($r = {radius:.3f}$, ≥ {min_dwell} "
           "steps): blue escaped, orange censored")
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    halves = ax.secondary_yaxis("right")  # which half a row belongs to, named once beside it
    halves.set_yticks([(PS - 1) / 2, PS + (PS - 1) / 2],
                      [rf"$\tau = {tau:g}$" + ("\n(control)" if k == "control" else "") for k, tau in kinds.items()])
    halves.tick_params(length=0)
    grid = np.arange(0, steps + 1)
    for k, color in zip(kinds, ("tab:blue", "tab:red")):
        tk = traps[traps.kind == k]
        if len(tk):
            Sv, S_low, S_high = km_survival(tk.dwell, tk.escaped, grid)
            a2.fill_between(grid, S_low, S_high, step="post", alpha=0.15, color=color)
            a2.step(grid, Sv, where="post", color=color, label=rf"{k} ($\tau = {kinds[k]:g}$), {len(tk)} traps")
    if len(traps):
        legend_outside(a2, "right")
    a2.set(xlabel="dwell (steps)", ylabel="share of traps\nnot yet left", ylim=(-0.03, 1.03),
           title="Kaplan–Meier survival of the traps (95 % log-log)")
    return fig


def traps_finding(traps: pd.DataFrame, trap_summary: pd.DataFrame, radius: float, scores: dict, crit: dict,
                  excess: tuple[float, float, float], passes: bool) -> str:
    """The traps at the calibrated radius: time trapped and trap spread against the basin-free twins and the control,
    and the criterion's answer."""
    from glauber_mlm.pages.planted.traps import TRAP_ALPHA, TRAP_MARGIN

    low_traps = traps[traps.kind == "low τ"]
    dwell_text = ("beyond every run" if not np.isfinite(trap_summary.median_dwell.iloc[0]) else
                  f"{trap_summary.median_dwell.iloc[0]:g} steps")
    return (f"At the calibrated radius r = {radius:.3f} the low-temperature chains spend {scores['trapped'].mean():.0%} of "
            f"their run in {len(low_traps)} traps ({int((~low_traps.escaped).sum())} still open when the run ends; "
            f"Kaplan–Meier median dwell {dwell_text}), their basin-free twins {scores['twin_trapped'].mean():.0%} and the "
            f"hot controls {crit['time_trapped_control']:.0%}. Their traps spread {excess[0]:+.2f} r² "
            f"[{excess[1]:+.2f}, {excess[2]:+.2f}] more than their twins' ({len(scores['spread'])} chains), "
            f"permutation p = {scores['p']:.3g}: the criterion (p < {TRAP_ALPHA:g} and at least {TRAP_MARGIN:g} r²) "
            + ("passes: the chains hold traps in more distinct places than basin-free chains changing tokens as often."
               if passes else "does not pass: these traps are no more spread out than a basin-free chain's at the same "
               "change rate, which sits in one place however slowly it moves."))


# ---- sensitivity to the radius --------------------------------------------------------------------------------------

SENSITIVITY_COLUMNS = ["radius_quantile", "radius", "kind", "time_trapped", "time_trapped_ci_low", "time_trapped_ci_high",
                       "traps_per_chain", "median_dwell", "median_dwell_ci_low", "median_dwell_ci_high"]
CRITERION_COLUMNS = ["radius_quantile", "radius", "pairs", "time_trapped_low", "time_trapped_twins", "spread_excess",
                     "excess_ci_low", "excess_ci_high", "permutation_p", "beats_twins", "time_trapped_control",
                     "difference", "ci_low", "ci_high", "separates"]


def criterion_row(q: float, q_radius: float, crit: dict, scores: dict, seed: int) -> dict:
    """The criterion at one radius of the panel: the basin-free twins' comparison and the hot control's."""
    from glauber_mlm.pages.planted.traps import criterion_passes

    ex = bootstrap_ci(scores["excess"], seed=seed)  # descriptive: the size of the excess spread
    return dict(radius_quantile=q, primary=q == q_radius, **crit, time_trapped_twins=scores["twin_trapped"].mean(),
                spread_excess=ex[0], excess_ci_low=ex[1], excess_ci_high=ex[2], permutation_p=scores["p"],
                beats_twins=criterion_passes(scores))


def sensitivity_tables(trap_analysis, radii: dict[float, float], q_radius: float, scores: list[dict], seed: int
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The page's `trap_analysis` at every radius of the panel: the summary rows, and the criterion row per radius
    (`scores`: `planted.trap_twin_scores` at each radius)."""
    sens_rows, crit_rows = [], []
    for (q, r), sc in zip(radii.items(), scores):
        _, _, summ, cr = trap_analysis(float(r))
        summ.insert(0, "radius_quantile", q)
        sens_rows.append(summ)
        crit_rows.append(criterion_row(q, q_radius, cr, sc, seed=seed))
    return pd.concat(sens_rows, ignore_index=True), pd.DataFrame(crit_rows)


def sensitivity_figure(sensitivity: pd.DataFrame, radii: dict[float, float], radius: float, kinds: dict[str, float],
                       PS: int, min_dwell: int):
    """Time trapped, traps per chain and KM median dwell at each radius of the panel, low τ beside the control. The
    radii sit evenly spaced, labelled by value and jitter quantile: on a scale of r the close ones (0.43 and 0.48, say)
    need their labels turned upright, which took more height than the panels."""
    fig, axes = panels(3, height=2.9)
    rows = [("time_trapped", "time_trapped_ci_low", "time_trapped_ci_high", "fraction of time trapped"),
            ("traps_per_chain", "ci_low", "ci_high", "traps per chain"),
            ("median_dwell", "median_dwell_ci_low", "median_dwell_ci_high", "KM median dwell (steps)")]
    at = {q: k for k, q in enumerate(radii)}  # the radius of quantile q sits at x = k
    calibrated = int(np.argmin(np.abs(np.array(list(radii.values())) - radius)))  # its place among the panel's radii
    for ax, (col, lo, hi, label) in zip(axes, rows):
        for (k, g), color, dx in zip(sensitivity.groupby("kind", sort=False), ("tab:blue", "tab:red"), (-0.06, 0.06)):
            x = g.radius_quantile.map(at).to_numpy() + dx  # side by side
            ok = np.isfinite(g[col]) & np.isfinite(g[lo])
            if ok.any():
                interval_errorbar(ax, x[ok], g[col][ok], g[lo][ok], g[hi][ok], marker="o", capsize=3, color=color,
                                  label=rf"{k} ($\tau = {kinds[k]:g}$)")
            inf = np.isinf(g[col]) & np.isfinite(g[lo])
            if inf.any():  # median beyond every run: only its lower end is known
                ax.plot(x[inf], g[lo][inf], "^", color=color, ms=8, label=f"{k}: median > every dwell seen")
        ax.axvline(calibrated, color="k", lw=0.6, ls=":")
        ax.set(xlabel=r"trap radius $r$ (jitter quantile $q$)", ylabel=label)
        ax.set_xticks(range(len(radii)), [f"{r:.2f}\nq={q:g}" for q, r in radii.items()])
    axes[0].set_ylim(-0.03, 1.03)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
    fig.suptitle(rf"sensitivity to the trap radius (dotted: the calibrated $r$)" "\n"
                 f"{PS} chains per temperature, traps of ≥ {min_dwell} steps")
    return fig


def sensitivity_prose(sensitivity: pd.DataFrame, criterion: pd.DataFrame) -> tuple[str, str]:
    """(the printed summary, the glued finding) of the radius panel."""
    held = int(criterion.beats_twins.sum())
    said = (f"the trap criterion (traps more spread out than the basin-free twins') holds at {held} of "
            f"{len(criterion)} radii (jitter quantiles "
            f"{', '.join(f'{q:g}' for q in criterion.radius_quantile[criterion.beats_twins])}"
            f"{'none' if held == 0 else ''}); more than the hot control at {int(criterion.separates.sum())} of "
            f"{len(criterion)}.")
    low_sens = sensitivity[sensitivity.kind == "low τ"]
    finding = (
        f"The trap criterion (traps more spread out than the basin-free twins') holds at {held} of {len(criterion)} "
        f"radii; the chains are trapped more than the hot control at {int(criterion.separates.sum())} of "
        f"{len(criterion)}; their time trapped goes from {low_sens.time_trapped.iloc[0]:.0%} at r = "
        f"{low_sens.radius.iloc[0]:.3f} to {low_sens.time_trapped.iloc[-1]:.0%} at r = {low_sens.radius.iloc[-1]:.3f}, "
        f"their twins' from {criterion.time_trapped_twins.iloc[0]:.0%} to {criterion.time_trapped_twins.iloc[-1]:.0%}.")
    return said, finding


# ---- the escape fraction and escape times ---------------------------------------------------------------------------

def escape_tables(reach_dist: np.ndarray, steps: np.ndarray, temps: list[float], chains: int, q_deltas: list[float],
                  deltas: list[float], reach_steps: int) -> tuple[pd.DataFrame, dict]:
    """Per temperature and δ: the chains reaching δ (Wilson interval) and the Kaplan–Meier median escape step; and
    the KM survival curves of the escape times, keyed by (τ, δ)."""
    rows_out, escape_curves = [], {}
    for k, tau in enumerate(temps):
        cols = slice(k * chains, (k + 1) * chains)
        for q, delta in zip(q_deltas, deltas):
            hit = int(semantic.reached_distance(reach_dist[:, cols], delta).sum())
            p, lo, hi = proportion_ci(hit, chains)
            t_esc, escaped = semantic.first_exit(reach_dist[:, cols] < delta, steps)
            med, mlo, mhi = km_median(t_esc, escaped)
            rows_out.append(dict(temperature=tau, chains=chains, reached=hit, fraction=p, ci_low=lo, ci_high=hi,
                                 delta=delta, delta_quantile=q, steps=reach_steps, median_escape_step=med,
                                 median_ci_low=mlo, median_ci_high=mhi))
            escape_curves[tau, delta] = km_survival(t_esc, escaped, steps)
    return pd.DataFrame(rows_out), escape_curves


def escape_fraction_figure(escape_fraction: pd.DataFrame, reach_dist: np.ndarray, steps: np.ndarray,
                           temps: list[float], chains: int, reach_steps: int, deltas: list[float]):
    """Left: the share of chains reaching each δ against τ (Wilson); right: the median distance from the start."""
    fig, axes = panels(2, height=3.8)
    ax = axes[0]
    for (q, delta), g in escape_fraction.groupby(["delta_quantile", "delta"]):
        interval_errorbar(ax, g.temperature, g.fraction, g.ci_low, g.ci_high, marker="o", capsize=3,
                          label=rf"$\delta = {delta:.2f}$ (q = {q:g})")
    temperature_axis(ax, temps)
    ax.set(xlabel=r"temperature $\tau$", ylabel=r"share of chains reaching $\geq \delta$", ylim=(-0.03, 1.03),
           title=rf"{chains} chains per $\tau$, {reach_steps} steps")
    legend_outside(ax, "below", ncol=1)
    ax = axes[1]
    for k, tau in enumerate(temps):
        d = reach_dist[:, k * chains:(k + 1) * chains]
        ax.plot(steps, np.median(d, 1), color=_colour(k, len(temps)), label=rf"$\tau = {tau:g}$")
    for delta in deltas:
        ax.axhline(delta, color="0.6", lw=0.6, ls=":")
    ax.set(xlabel="step", ylabel=r"median $\|e_t - e_0\|$ over chains", title=r"distance from the start (dotted: $\delta$)")
    legend_outside(ax, "below", ncol=3)
    return fig


def escape_survival_figure(escape_curves: dict, steps: np.ndarray, temps: list[float], q_deltas: list[float],
                           deltas: list[float]):
    """One panel per δ: the KM survival of the escape times (share still within δ) per temperature."""
    fig, axes = panels(len(deltas), height=3.0, sharey=True)
    for ax, q, delta in zip(axes, q_deltas, deltas):
        for k, tau in enumerate(temps):
            Sv, S_low, S_high = escape_curves[tau, delta]
            color = _colour(k, len(temps))
            ax.fill_between(steps, S_low, S_high, step="post", color=color, alpha=0.15)
            ax.step(steps, Sv, where="post", color=color, label=rf"$\tau = {tau:g}$")
        ax.set(xlabel="step", ylabel=r"share still within $\delta$", ylim=(-0.03, 1.03),
               title=rf"$\delta = {delta:.2f}$ (q = {q:g})")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), frameon=False)
    fig.suptitle("Kaplan–Meier survival of the escape times (95 % log-log)")
    return fig


def escape_prose(escape_fraction: pd.DataFrame) -> tuple[str, str]:
    """(the printed lines, the glued finding): per δ, the chains reaching it at the lowest and highest τ."""
    lines = []
    for (q, delta), g in escape_fraction.groupby(["delta_quantile", "delta"]):
        g = g.sort_values("temperature")
        lo_t, hi_t = g.iloc[0], g.iloc[-1]
        lines.append(
            f"δ = {delta:.2f} (q = {q:g}): {lo_t.fraction:.0%} [{lo_t.ci_low:.0%}, {lo_t.ci_high:.0%}] of "
            f"{int(lo_t.chains)} chains at τ = {lo_t.temperature:g}, {hi_t.fraction:.0%} [{hi_t.ci_low:.0%}, "
            f"{hi_t.ci_high:.0%}] at τ = {hi_t.temperature:g}; median escape step {lo_t.median_escape_step:g} "
            f"[{lo_t.median_ci_low:g}, {lo_t.median_ci_high:g}] and {hi_t.median_escape_step:g} [{hi_t.median_ci_low:g}, "
            f"{hi_t.median_ci_high:g}] (Kaplan–Meier; inf: not reached in the run)")
    return "\n".join(lines), "Chains that reach each δ within the run: " + "; ".join(lines) + "."


def escape_slope_table(slope_fit: dict, mid_delta: float, mid_q: float, chains: int, starts: int) -> pd.DataFrame:
    """The censored fit of log escape time on 1/τ at the middle δ, in one row."""
    return pd.DataFrame([dict(delta=mid_delta, delta_quantile=mid_q, chains=chains, starts=starts,
                              censored=slope_fit["censored"],
                              **{k: slope_fit[k] for k in ("slope", "slope_low", "slope_high", "intercept")})])


def escape_time_figure(inv_tau: np.ndarray, t_mid: np.ndarray, esc_mid: np.ndarray, escape_fraction: pd.DataFrame,
                       mid_q: float, mid_delta: float, slope_fit: dict):
    """Each chain's escape step against 1/τ (log scale), the censored ones, the KM medians and the censored fit."""
    fig, axes = panels(1, height=3.1)
    ax = axes[0]
    mid_rows = escape_fraction[escape_fraction.delta_quantile == mid_q].sort_values("temperature")
    x_mid = 1 / mid_rows.temperature.to_numpy()
    finite = np.isfinite(mid_rows.median_escape_step.to_numpy())
    ax.plot(inv_tau[esc_mid], t_mid[esc_mid], "o", ms=3, color="tab:blue", alpha=0.5, label="a chain's escape")
    ax.plot(inv_tau[~esc_mid], t_mid[~esc_mid], "^", ms=5, color="tab:orange", alpha=0.6,
            label="censored (never reached δ)")
    if finite.any():
        ax.plot(x_mid[finite], mid_rows.median_escape_step.to_numpy()[finite], "s", color="k", ms=6,
                label="Kaplan–Meier median")
    grid_x = np.linspace(inv_tau.min(), inv_tau.max(), 100)
    if np.isfinite(slope_fit["slope"]):
        ax.plot(grid_x, np.log(2) * np.exp(slope_fit["slope"] * grid_x + slope_fit["intercept"]), color="tab:red",
                label=rf"censored fit: median $\propto e^{{{slope_fit['slope']:.3g}/\tau}}$")
    ax.set(xlabel=r"$1/\tau$", ylabel="escape step", yscale="log",
           title=rf"time to reach $\delta = {mid_delta:.2f}$ (q = {mid_q:g}) against $1/\tau$")
    legend_outside(ax, "below", ncol=2, bbox_to_anchor=(0.5, -0.3))  # clear of the axis label of this short panel
    return fig


def slope_prose(slope_fit: dict, mid_delta: float, starts: int, chains: int, reach_steps: int, wilson_cal,
                slope_cal) -> tuple[str, str]:
    """(the printed summary, the glued finding) of the escape-time slope on 1/τ."""
    s = slope_fit
    finding = (
        f"For δ = {mid_delta:.2f} the slope of log escape time on 1/τ is {s['slope']:.3g} [{s['slope_low']:.3g}, "
        f"{s['slope_high']:.3g}] (95 %, bootstrap over {starts} starts; {s['censored']} of {chains} chains "
        f"censored at {reach_steps} steps): "
        + ("the fit has no finite maximum at this design (chains escape at fewer than two temperatures)."
           if not np.isfinite(s["slope_low"]) else
           "its interval lies above zero, so escape takes longer as τ falls." if s["slope_low"] > 0 else
           "its interval reaches zero or below, so this run does not show escape time growing with 1/τ."))
    said = (f"slope of log escape time on 1/τ: {s['slope']:.3g} [{s['slope_low']:.3g}, {s['slope_high']:.3g}] (95%, "
            f"bootstrap over {starts} starts; {s['censored']} of {chains} chains censored); calibration: Wilson rule "
            f"{wilson_cal}, slope rule {slope_cal}")
    return said, finding


# ---- the result box -------------------------------------------------------------------------------------------------

def key_numbers(radius: float, q_radius: float, kinds: dict[str, float], frac: np.ndarray, scores: dict,
                excess: tuple[float, float, float], crit: dict, trap_summary: pd.DataFrame,
                held: int, radii_n: int, mid_delta: float, mid_q: float, slope_fit: dict, chains_n: int,
                ends: pd.DataFrame) -> dict[str, str]:
    """The result box's key numbers: the radius, the trap criterion and its side readings, the dwell, the panel,
    the escape-time slope and the escape fractions at the ends of the τ grid."""
    tau_low, tau_ctl = kinds.values()
    PS = len(frac) // 2
    low_row = trap_summary.set_index("kind").loc["low τ"]
    return {
        "trap radius r, calibrated before any chain ran": f"{radius:.3f} (one-token jitter quantile {q_radius:g})",
        f"trap spread, τ = {tau_low:g} minus its basin-free twins' (independent sites at its change rate), in r² "
        "(95% bootstrap over chains; permutation test within chains)":
            f"{excess[0]:+.2f} [{excess[1]:+.2f}, {excess[2]:+.2f}]; p = {scores['p']:.3g}",
        f"time trapped, τ = {tau_low:g} vs its basin-free twins":
            f"{frac[:PS].mean():.0%} vs {scores['twin_trapped'].mean():.0%}",
        f"side reading, uncalibrated: time trapped, τ = {tau_low:g} vs the hot control τ = {tau_ctl:g}":
            f"{crit['time_trapped_low']:.0%} vs {crit['time_trapped_control']:.0%} (means over {PS} paired chains)",
        "side reading, uncalibrated: paired difference from the hot control (95% bootstrap over pairs)":
            f"{crit['difference']:+.0%} [{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}]",
        f"Kaplan–Meier median dwell at τ = {tau_low:g}":
            f"{low_row.median_dwell:g} [{low_row.median_dwell_ci_low:g}, {low_row.median_dwell_ci_high:g}] steps "
            f"({int(low_row.censored)} of {int(low_row.escaped + low_row.censored)} traps censored; inf: beyond every run)",
        "radii of the panel at which the criterion holds (traps more spread out than the twins')": f"{held} of {radii_n}",
        f"side reading: slope of log escape time on 1/τ (δ = {mid_delta:.2f}, censored fit, 95% bootstrap over starts)":
            f"{slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, {slope_fit['slope_high']:.3g}] "
            f"({slope_fit['censored']} of {chains_n} chains censored)",
        **{f"side reading: chains reaching δ = {r.delta:.2f} (q = {mid_q:g}) at τ = {r.temperature:g}":
           f"{r.fraction:.0%} [{r.ci_low:.0%}, {r.ci_high:.0%}] of {r.chains}" for r in ends.itertuples()},
    }
