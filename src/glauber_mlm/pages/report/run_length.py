"""Page 07 (how long must I run?): its figures, display tables and prose, from the tables the page computes."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from IPython.display import Markdown

from ..plots import legend_outside, panels, show_table
from . import glue_text


def glue_design(run, p_level: float, tv_floor: float) -> None:
    """Glue the design's values (checked in the page's first cell) for the prose's {glue:text} roles: the page names
    values, not variables. `d_…`: sections 1 to 3; `t_…`: section 4 (its ladder is glued with the run)."""
    p = run.params
    lags = " and ".join(str(int(L)) for L in sorted(p["ising_lags"]))
    glue_text(d_ising_runs=int(p["ising_runs"]), d_ising_lags=lags,
              d_ising_n=int(p["ising_length"]), d_ising_J=f"{float(p['ising_coupling']):g}", d_pairs=int(p["pairs"]),
              d_lag=int(p["lag"]), d_budget=int(p["budget"]), d_ensembles=int(p["ensembles"]), d_rungs=int(p["rungs"]),
              d_hot=f"{float(p['hot']):g}", d_steps_per_round=int(p["steps_per_round"]),
              d_well_n=int(p["well_length"]), d_well_J=f"{float(p['well_coupling']):g}", d_rounds=int(p["rounds"]),
              d_replicates=int(p["replicates"]), d_p_level=f"{p_level:g}", d_tv_floor=float(tv_floor),
              t_ensembles=int(p["temper_ensembles"]),
              t_length=int(p["temper_length"]), t_rungs=int(p["temper_rungs"]), t_rounds=int(p["temper_rounds"]),
              t_steps_per_round=int(p["temper_steps_per_round"]), t_cold=f"{float(p['temper_cold']):g}",
              t_chunk=int(p["temper_rungs"]) * int(p["temper_steps_per_round"]),
              t_every=int(p["temper_record_every"]), t_radius_quantile=f"{float(p['radius_quantile']):g}",
              t_cal=int(p["calibration_passages"]), t_neighbours=int(p["neighbours"]), t_dwell=int(p["basin_dwell"]))


def _steps(value: float) -> str:
    """A number of steps, or 'not resolved' (nan)."""
    return f"{value:g}" if np.isfinite(value) else "not resolved"


# --- 1. the bound against the exact distance on an Ising chain --------------------------------------------------

def ising_rows(lag: int, grid: np.ndarray, ex: Mapping, mc) -> list[dict]:
    """One lag's rows of the Ising table: per t, the exact TV and exact L-lag bound (`exact_lag_bound`: `ex`) beside
    the Monte Carlo bound `mc`, its interval and the runs with a non-zero term (`tv_bound`)."""
    return [dict(lag=lag, t=int(t), exact_tv=ex["tv"][t], exact_bound=ex["bound"][t], bound=mc.bound[t],
                 bound_low=mc.low[t], bound_high=mc.high[t], contributing=int(mc.contributing[t]), runs=mc.runs)
            for t in grid]


def first_below(t, values, e: float) -> int | None:
    """The first t of the grid where `values` < e (None: not on the grid)."""
    below = np.flatnonzero(np.asarray(values) < e)
    return int(np.asarray(t)[below[0]]) if below.size else None


def _at_step(t: int | None, steps: int) -> str:
    """'t = T', or that no step of a grid of `steps` reaches it."""
    return f"t = {t}" if t is not None else f"no t up to {steps - 1}"


def ising_summary(ising_table: pd.DataFrame, targets: Sequence[float], tv_floor: float):
    """Per lag, the first step each curve falls below the first target, and the least margin where rule (i) reads."""
    e0 = f"{targets[0]:g}"
    summary = pd.DataFrame([dict(lag=L, runs=int(g.runs.iloc[0]), exact_tv_at_0=g.exact_tv.iloc[0],
                                 **{f"first_t_{k}_below_{e:g}": first_below(g.t, g[k], e)
                                    for e in targets[:1] for k in ("exact_tv", "exact_bound", "bound_high")},
                                 min_margin=float((g.bound_high - g.exact_tv)[g.exact_tv >= tv_floor].min())
                                 if (g.exact_tv >= tv_floor).any() else np.nan)
                            for L, g in ising_table.groupby("lag")]).astype({f"first_t_{k}_below_{e0}": "Int64"
                            for k in ("exact_tv", "exact_bound", "bound_high")})
    return show_table(summary.rename(columns={
        "lag": "L", "exact_tv_at_0": "exact TV at t = 0", f"first_t_exact_tv_below_{e0}": f"exact TV < {e0} from t =",
        f"first_t_exact_bound_below_{e0}": f"exact bound < {e0} from t =",
        f"first_t_bound_high_below_{e0}": f"MC upper end < {e0} from t =", "min_margin": "least margin (MC − exact)"}))


def ising_finding(ising_table: pd.DataFrame, grid: np.ndarray, lags: Sequence[int], coverage: Mapping[int, bool],
                  dominates: bool, targets: Sequence[float], tv_floor: float) -> Markdown:
    """Whether the exact and Monte Carlo bounds lie above the exact TV, and when each reaches the first target."""
    steps = len(grid)
    t_exact = first_below(grid, ising_table[ising_table.lag == lags[0]].exact_tv, targets[0])
    return Markdown(
        f"The exact L-lag bound lies {'at or above' if dominates else 'below'} the exact TV at every step at both lags, "
        f"and the Monte Carlo bound's upper end covers the exact TV wherever it is at least {tv_floor:g} at "
        + " and ".join(f"L = {L} ({'yes' if coverage.get(L, False) else 'no'})" for L in lags)
        + f". The exact TV falls below {targets[0]:g} at {_at_step(t_exact, steps)}; the exact bound says so at "
        + " and ".join(f"{_at_step(first_below(g.t, g.exact_bound, targets[0]), steps)} (L = {L})"
                       for L, g in ising_table.groupby("lag")) + ".")


def ising_bounds(ising_table: pd.DataFrame, lags: Sequence[int], n: int, coupling: float):
    """Per lag, the exact TV, the exact L-lag bound and the Monte Carlo bound with its band, against the step."""
    fig, axes = panels(len(lags), height=3.6, sharey=True)
    for ax, (L, g) in zip(axes, ising_table.groupby("lag")):
        ax.plot(g.t, g.exact_tv, color="black", lw=2, label=r"exact $d_{\mathrm{TV}}(\pi_t, \pi)$")
        ax.plot(g.t, g.exact_bound.clip(upper=1.0), color="C0", ls="--", label="exact L-lag bound")
        ax.plot(g.t, g.bound.clip(upper=1.0), color="C1", label=f"Monte Carlo bound ({g.runs.iloc[0]} runs)")
        ax.fill_between(g.t, g.bound_low.clip(upper=1.0), g.bound_high.clip(upper=1.0), color="C1", alpha=0.25, lw=0)
        ax.set(title=rf"lag $L = {L}$", xlabel="step $t$", ylim=(0, 1.05))
    axes[0].set_ylabel("distance to stationarity")
    legend_outside(axes[-1], "below", ncol=1)
    fig.suptitle(rf"Ising chain, $n = {n}$, $J = {coupling:g}$, from the all-zero state", fontsize="medium")
    return fig


def coverage_calibration(calibration, lag: int, runs: int) -> pd.DataFrame:
    """Rule (i)'s calibration in one row, as the page saves it."""
    return pd.DataFrame([dict(rule="MC bound covers the exact TV", lag=lag, runs=runs, power=calibration.power,
                              size=calibration.size, replicates=calibration.replicates,
                              calibrated_on=calibration.calibrated_on)])


def coverage_margin(ising_table: pd.DataFrame, read: pd.Series, lag: int) -> str:
    """Rule (i)'s observed value: the least margin of the MC upper end over the exact TV where the rule reads."""
    tested = ising_table[read & (ising_table.lag == lag)]
    return f"{(tested.bound_high - tested.exact_tv).min():.3g}"


# --- 2. the bound on the embedded model -------------------------------------------------------------------------

def steps_below(steps_table: pd.DataFrame, targets: Sequence[float]):
    """The recommended steps per (τ, n) as the page shows them."""
    return show_table(steps_table.astype({f"steps_below_{e:g}": "Int64" for e in targets}).rename(columns={
        "length": "n", "temperature": "τ", "median_meeting": "median τ_L", "max_meeting": "max τ_L",
        **{f"steps_below_{e:g}": f"steps to TV ≤ {e:g}" for e in targets}}))


def least_target(runs: int) -> float:
    """The least target ε that `TVBound.steps_below` reads with `runs` runs: it asks for at least ten over ε runs (a
    bound of ε is a mean of rare non-zero terms). Checked against the library's own reading, so the two cannot drift."""
    from glauber_mlm.samplers.lag_coupling import TVBound

    floor = 10 / runs
    probe = TVBound(np.zeros(1, dtype=int), *np.zeros((3, 1)), np.zeros(1, dtype=int), 0.95, runs, 1, True)
    if not (np.isfinite(probe.steps_below(floor * (1 + 1e-9))) and np.isnan(probe.steps_below(floor * (1 - 1e-6)))):
        raise AssertionError(f"TVBound.steps_below no longer reads targets from ten over the runs ({floor:g})")
    return floor


def mlm_bounds(curve_table: pd.DataFrame, steps_table: pd.DataFrame, lengths: Sequence[int], taus: Sequence[float],
               targets: Sequence[float], lag: int, pairs: int):
    """Per length, the upper end of the L-lag bound against the step, one line per τ, as `steps_below` reads it: a dot
    where it reads a target; a line ends where every run has met (past that the upper end is 0: no run is left to
    bound with); the grey band holds the targets too small for the runs (`least_target`)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    floor, low = least_target(pairs), min(targets) / 3
    colours = dict(zip(taus, plt.cm.viridis(np.linspace(0, 0.85, len(taus)))))
    fig, axes = panels(len(lengths), height=3.6, sharey=True)
    for ax, (n, g) in zip(axes, curve_table.groupby("length")):
        ax.axhspan(low, min(floor, 1.1), color="0.85", lw=0, zorder=0)
        for tau, c in g.groupby("temperature"):
            high = c.bound_high.clip(upper=1.0).where(c.bound_high > 0)  # 0: every run has met, nothing to bound with
            ax.plot(c.t, high, color=colours[tau])
            last = high.last_valid_index()
            if last is not None:
                ax.plot(c.t[last], high[last], "|", color=colours[tau], ms=8, mew=1.5)
            row = steps_table[(steps_table.length == n) & (steps_table.temperature == tau)].iloc[0]
            for e in targets:
                if np.isfinite(row[f"steps_below_{e:g}"]):
                    ax.plot(row[f"steps_below_{e:g}"], e, "o", color=colours[tau], ms=6, zorder=3)
        for e, style in zip(targets, ("--", ":")):
            ax.axhline(e, color="0.3", ls=style, lw=1)
        ax.set(title=rf"$n = {n}$", xlabel="step $t$", yscale="log", ylim=(low, 1.1))
    axes[0].set_ylabel("upper end of the L-lag bound")
    handles = ([Line2D([], [], color=colours[tau], label=rf"$\tau = {tau:g}$") for tau in taus]
               + [Line2D([], [], color="0.3", ls=style, lw=1, label=f"target {e:g}")
                  for e, style in zip(targets, ("--", ":"))]
               + [Line2D([], [], color="0.3", marker="o", ls="", label="read: first step at or below a target"),
                  Line2D([], [], color="0.3", marker="|", ls="", ms=8, mew=1.5, label="every run has met"),
                  Patch(color="0.85", label=f"below {floor:g}: not read with {pairs} runs")])
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle(rf"embedded model, $L = {lag}$, {pairs} runs per cell from random passages", fontsize="medium")
    return fig


def lag_cell(n: int, tau: float, part, targets: Sequence[float]) -> tuple[dict, list[dict]]:
    """One cell (τ, n) of the grid from its L-lag runs `part`: the bound (`tv_bound`, on every t up to one past the
    last meeting) and the steps it reads for each target (`TVBound.steps_below`), as its row of the steps table (with
    the meeting times) and its rows of the curve table (the bound and its interval at every t)."""
    import warnings

    from glauber_mlm.samplers.lag_coupling import tv_bound

    with warnings.catch_warnings():  # a censored cell gives a lower estimate: the table counts its censored runs
        warnings.simplefilter("ignore")
        bound = tv_bound(part, np.arange(0, int(part.meeting_times.max()) - part.lag + 2))
    row = dict(length=n, temperature=tau, runs=part.met.size, lag=part.lag, budget=part.budget, censored=part.censored,
               median_meeting=float(np.median(part.meeting_times)), max_meeting=int(part.meeting_times.max()),
               **{f"steps_below_{e:g}": bound.steps_below(e) for e in targets})
    return row, [dict(length=n, temperature=tau, t=int(t), bound=b, bound_low=lo, bound_high=hi)
                 for t, b, lo, hi in zip(bound.t, bound.bound, bound.low, bound.high)]


def mlm_readings(steps_table: pd.DataFrame, targets: Sequence[float], pairs: int) -> Markdown:
    """Per cell (τ, n), a list item: the median meeting time and the steps to each target, or why it is not read."""
    floor = least_target(pairs)
    readings = []
    for r in steps_table.itertuples():
        cells = []
        for e in targets:
            s = steps_table.loc[r.Index, f"steps_below_{e:g}"]
            why = [f"{pairs} runs" + (f", fewer than ten over {e:g}" if e < floor else "")]
            cells.append(f"below {e:g} from t = {s:g}" if np.isfinite(s) else f"below {e:g}: not resolved "
                         f"({'; '.join(why + (['censored runs'] if r.censored else []))})")
        readings.append(f"- n = {r.length}, τ = {r.temperature:g}: median τ_L {r.median_meeting:g}; "
                        + "; ".join(cells) + ".")
    return Markdown("\n".join(readings))


def mlm_finding(steps_table: pd.DataFrame, targets: Sequence[float], budget: int, pairs: int) -> Markdown:
    """How many cells reach each target within the budget, the fewest and most steps, the censored cells and the
    targets too small for the runs; then the readings per cell (`mlm_readings`)."""
    resolved = {e: steps_table[np.isfinite(steps_table[f"steps_below_{e:g}"])] for e in targets}
    first = resolved[targets[0]].sort_values(f"steps_below_{targets[0]:g}")
    floor = least_target(pairs)
    unread = [f"{e:g}" for e in targets if e < floor]
    return Markdown(
        f"Of the {len(steps_table)} cells (τ, n) of the grid, the bound's upper end falls below {targets[0]:g} within "
        f"the budget in {len(resolved[targets[0]])} and below {targets[1]:g} in {len(resolved[targets[1]])}"
        + (f"; the fewest steps to {targets[0]:g} are {first.iloc[0][f'steps_below_{targets[0]:g}']:g} (n = "
           f"{first.iloc[0].length:g}, τ = {first.iloc[0].temperature:g}) and the most "
           f"{first.iloc[-1][f'steps_below_{targets[0]:g}']:g} "
           f"(n = {first.iloc[-1].length:g}, τ = {first.iloc[-1].temperature:g})" if len(first) else "")
        + f"; {int((steps_table.censored > 0).sum())} cells have runs that had not met within {budget} coupled steps."
        + (f" With {pairs} runs per cell no target below {floor:g} is read (the grey band), so "
           f"{' and '.join(unread)} {'is' if len(unread) == 1 else 'are'} not resolved in any cell, wherever the "
           "lines end." if unread else "")
        + "\n\nThe recommended steps per cell, from the table above:\n\n"
        + mlm_readings(steps_table, targets, pairs).data)


# --- 3. tempering on the two-well model ---------------------------------------------------------------------------

def tempering(tempering_table: pd.DataFrame):
    """The two samplers' TV to the exact two-well law, its null test and the wells they visit, as the page shows it."""
    return show_table(tempering_table.rename(columns={
        "forward_rows": "forward rows", "tv": "TV to the exact law", "null_high": "null band up to", "p_value": "p",
        "both_wells": "chains visiting both wells", "wells_per_1000_rows": "wells per 1000 rows"}))


def swap_rates(result) -> pd.DataFrame:
    """A replica-exchange run's swaps per pair of neighbouring rungs: proposed, accepted and the rate."""
    taus = result.temperatures.tolist()
    return pd.DataFrame(dict(tau_low=taus[:-1], tau_high=taus[1:], proposed=result.swaps_proposed,
                             accepted=result.swaps_accepted, rate=result.swap_rates))


def ladder_text(result) -> str:
    """A replica-exchange run's ladder of temperatures, as the prose gives it."""
    return ", ".join(f"{t:.3g}" for t in result.temperatures.tolist())


def _swap_rates(ax, swaps: pd.DataFrame, rungs: int, rounds: int) -> None:
    """The swap rate between neighbouring rungs, at each pair's geometric mean temperature."""
    ax.plot(np.sqrt(swaps.tau_low * swaps.tau_high), swaps.rate, "o-")
    ax.set(xscale="log", ylim=(0, 1.02), xlabel=r"rung pair (geometric mean of $\tau$)", ylabel="swap rate",
           title=f"{rungs} rungs, {rounds} rounds")


def tempering_figure(tempering_table: pd.DataFrame, swaps: pd.DataFrame, rungs: int, rounds: int):
    """Left, each sampler's TV to the exact law with the null band's upper end; right, the swap rates."""
    fig, (left, right) = panels(2, height=3.6)
    left.bar(tempering_table.sampler, tempering_table.tv, color=["C2", "C3"])
    left.errorbar(tempering_table.sampler, tempering_table.null_high, fmt="_", color="black", ms=30,
                  label="upper end of the null band")
    left.set(ylabel="TV to the exact law (second half)", title="equal forward rows")
    legend_outside(left, "below", ncol=1)
    _swap_rates(right, swaps, rungs, rounds)
    return fig


def tempering_calibration(calibration, p_values: Mapping[str, Sequence[float]], level: float,
                          replicates: int) -> pd.DataFrame:
    """Rule (iii)'s calibration in one row, with how often each sampler's replicates passed or failed the test."""
    p = {name: np.asarray(v) for name, v in p_values.items()}
    return pd.DataFrame([dict(rule="tempered passes the TV null test, plain MH fails it", replicates=replicates,
                              power=calibration.power, size=calibration.size,
                              tempered_pass_rate=float(np.mean(p["right"] > level)),
                              wrong_rule_pass_rate=float(np.mean(p["wrong"] > level)),
                              plain_fail_rate=float(np.mean(p["plain"] < level)),
                              calibrated_on=calibration.calibrated_on)])


def tempering_table(tests: Mapping[str, Mapping], tempered, plain) -> pd.DataFrame:
    """Per sampler (the tempered run's cold replica, the plain MH run, in the order of `tests`): its TV null test
    against the exact law, the share of chains that visit both wells (all-zero and all-one) and the wells visited per
    thousand forward rows."""
    rows = []
    for (name, test), records, fwd in zip(tests.items(), (tempered.cold, plain.states),
                                          (tempered.forward_rows, plain.forward_rows)):
        zero, one = (records.sum(-1) == 0).any(0), (records.sum(-1) == records.shape[-1]).any(0)
        rows.append(dict(sampler=name, chains=records.shape[1], forward_rows=fwd, tv=test["tv"],
                         null_high=test["null_high"], p_value=test["p_value"],
                         both_wells=float((zero & one).float().mean()),
                         wells_per_1000_rows=1000 * float((zero.float() + one.float()).sum()) / fwd))
    return pd.DataFrame(rows)


def tempering_finding(t_row, p_row, holds: bool, replicates: int, calibration, tempering_table: pd.DataFrame,
                      swaps: pd.DataFrame, trips: np.ndarray) -> Markdown:
    """The two samplers' TV and p-values at equal cost, whether rule (iii) holds and its calibration; then the
    readings in detail (`tempering_readings`)."""
    return Markdown(
        f"At equal cost ({int(t_row.forward_rows):,} forward rows each), the tempered cold replica's visits lie at TV "
        f"{t_row.tv:.3f} from the exact two-well law (p = {t_row.p_value:.3g}) and plain MH's at {p_row.tv:.3f} "
        f"(p = {p_row.p_value:.3g}): rule (iii) {'holds' if holds else 'does not hold'} on this run. "
        f"{t_row.both_wells:.0%} of the tempered chains and {p_row.both_wells:.0%} of the plain ones visit both wells. "
        f"Across {replicates} replicates of this design, the rule held in {calibration.power:.0%} and, with every swap "
        f"accepted, in {calibration.size:.0%}.\n\nIn detail:\n\n"
        + tempering_readings(tempering_table, swaps, trips).data)


def tempering_readings(tempering_table: pd.DataFrame, swaps: pd.DataFrame, trips: np.ndarray) -> Markdown:
    """A list: per sampler its TV, null band and wells; the swap rates; the round trips."""
    return Markdown("\n".join([
        *(f"- {r.sampler}: TV {r.tv:.3f} (null band up to {r.null_high:.3f}, p = {r.p_value:.3g}); "
          f"{r.both_wells:.0%} of chains visit both wells; {r.wells_per_1000_rows:.3g} wells per thousand forward rows."
          for r in tempering_table.itertuples()),
        f"- swap rates between neighbouring rungs: {', '.join(f'{x:.2f}' for x in swaps.rate)}.",
        f"- round trips per ensemble: mean {trips.mean():.2g}, {int((trips > 0).sum())} of {trips.size} ensembles made "
        "at least one.",
    ]))


# --- 4. tempering on the embedded model ---------------------------------------------------------------------------

def mlm_tempering(mlm_tempering_table: pd.DataFrame):
    """The basins each sampler visits at equal forward rows, as the page shows them."""
    return show_table(mlm_tempering_table.rename(columns={
        "temperature": "τ", "cold_steps": "cold steps", "forward_rows": "forward rows", "basins_mean": "basins (mean)",
        "basins_min": "min", "basins_max": "max", "basins_per_1000_rows": "basins per 1000 rows", "low": "95 % low",
        "high": "95 % high"}))


def basins(embedder, model, tempered, plain, radius: float, dwell: int) -> dict[str, tuple]:
    """Per sampler (the tempered run's cold replica, the plain MH run): the basins each start's cold chain visits
    (`tempering.basins_visited` on the embedded records), the forward rows spent and the cold chain's last step."""
    from glauber_mlm.measures import semantic
    from glauber_mlm.samplers.tempering import basins_visited

    def embedded(records) -> np.ndarray:
        """(R, B, n) token records → (R, B, d) sentence embeddings."""
        R, B, n = records.shape
        return semantic.embed(embedder, model.decode(records.reshape(R * B, n))).reshape(R, B, -1)

    return {"tempered (cold replica)": (basins_visited(embedded(tempered.cold), tempered.steps.numpy(), radius, dwell),
                                        tempered.forward_rows, int(tempered.steps[-1])),
            "plain MH": (basins_visited(embedded(plain.states), plain.steps.numpy(), radius, dwell),
                         plain.forward_rows, int(plain.steps[-1]))}


def mlm_tempering_table(basins: Mapping[str, tuple], cold: float, starts: int, seed: int) -> pd.DataFrame:
    """Per sampler (its basins per start, forward rows, cold steps): the basins it visits and the basins per thousand
    forward rows per start (each start's share of the rows), with a percentile bootstrap over the starts."""
    from glauber_mlm.stats import bootstrap_ci

    rows = []
    for name, (b, fwd, steps_run) in basins.items():
        est, low, high = bootstrap_ci(1000 * b / (fwd / starts), seed=seed)
        rows.append(dict(sampler=name, temperature=cold, starts=starts, cold_steps=steps_run, forward_rows=fwd,
                         basins_mean=float(b.mean()), basins_min=int(b.min()), basins_max=int(b.max()),
                         basins_per_1000_rows=est, low=low, high=high))
    return pd.DataFrame(rows)


def basin_gain(tempered: np.ndarray, plain: np.ndarray, rows_t: float, rows_p: float, seed: int):
    """Basins per forward row, tempered over plain, with a percentile bootstrap over the starts (nan where the
    resampled plain chains visit no basin); `rows_t`, `rows_p`: each sampler's forward rows per start."""
    from glauber_mlm.stats import unit_bootstrap_ci

    def gain(idx) -> float:
        den = plain[idx].mean() / rows_p
        return float(tempered[idx].mean() / rows_t / den) if den > 0 else np.nan

    return unit_bootstrap_ci(np.arange(len(tempered)), gain, seed=seed)


def mlm_tempering_figure(tempered: np.ndarray, plain: np.ndarray, swaps: pd.DataFrame, cold: float, rungs: int,
                         rounds: int):
    """Left, the basins each start's tempered and plain cold chains visit, joined per start; right, the swap rates."""
    fig, (left, right) = panels(2, height=3.6)
    for k in range(len(tempered)):
        left.plot([0, 1], [tempered[k], plain[k]], color="grey", lw=0.8, alpha=0.6)
    left.scatter(np.zeros(len(tempered)), tempered, color="C2", zorder=3, label="tempered (cold replica)")
    left.scatter(np.ones(len(plain)), plain, color="C3", zorder=3, label="plain MH")
    left.set(xticks=[0, 1], xticklabels=["tempered", "plain MH"], xlim=(-0.4, 1.4), ylabel="basins visited per start",
             title=f"equal forward rows, τ = {cold:g}")
    left.yaxis.get_major_locator().set_params(integer=True)
    _swap_rates(right, swaps, rungs, rounds)
    return fig


def gain_text(estimate: float, low: float, high: float) -> str:
    """The gain in basins per forward row with its interval, or why it is not defined."""
    return (f"{estimate:.2g} (95% interval {low:.2g} to {high:.2g})" if np.isfinite(estimate)
            else "not defined (plain MH visited no basin)")


def mlm_tempering_finding(mlm_tempering_table: pd.DataFrame, gain: str, cold: float, starts: int,
                          swaps: pd.DataFrame, trips: np.ndarray) -> Markdown:
    """The basins per start of each sampler at equal cost, the gain, the swap rates and the round trips."""
    t_m, p_m = mlm_tempering_table.iloc[0], mlm_tempering_table.iloc[1]
    return Markdown(
        f"At τ = {cold:g} and equal cost ({int(t_m.forward_rows):,} and {int(p_m.forward_rows):,} forward rows), the "
        f"basins visited per start are {t_m.basins_mean:.2g} on average (range {t_m.basins_min} to {t_m.basins_max}) "
        f"for the tempered cold chains in {t_m.cold_steps} steps and {p_m.basins_mean:.2g} (range {p_m.basins_min} to "
        f"{p_m.basins_max}) for the plain chains in {p_m.cold_steps} steps: basins per forward row, tempered over "
        f"plain, {gain}, over {starts} starts. "
        f"Swap rates between neighbouring rungs: {', '.join(f'{x:.2f}' for x in swaps.rate)}; "
        f"{int((trips > 0).sum())} of {trips.size} ensembles made a round trip from the cold to the hot end "
        f"(mean {trips.mean():.2g}).")


# --- the result box -----------------------------------------------------------------------------------------------

def key_numbers(steps_table: pd.DataFrame, targets: Sequence[float], pairs: int, lag: int, budget: int,
                ising_table: pd.DataFrame, ising_lags: Sequence[int], coverage: Mapping[int, bool],
                tempering_table: pd.DataFrame, swaps: pd.DataFrame, trips: np.ndarray,
                mlm_tempering_table: pd.DataFrame, gain: str, cold: float, length: int, mlm_swaps: pd.DataFrame,
                mlm_trips: np.ndarray) -> dict[str, str]:
    """The page's key numbers for its result box."""
    t_row, p_row = tempering_table.iloc[0], tempering_table.iloc[1]
    t_m, p_m = mlm_tempering_table.iloc[0], mlm_tempering_table.iloc[1]
    return {
        **{f"n = {r.length}, τ = {r.temperature:g}: steps for TV ≤ {', '.join(f'{e:g}' for e in targets)} "
           f"(upper end of the L-lag bound)":
           ", ".join(_steps(steps_table.loc[r.Index, f"steps_below_{e:g}"]) for e in targets)
           for r in steps_table.itertuples()},
        "L-lag runs per cell, lag, budget": f"{pairs}, {lag}, {budget}",
        f"Ising: MC bound covers the exact TV at L = {', '.join(map(str, ising_lags))}":
            ", ".join("yes" if coverage.get(L, False) else "no" for L in ising_lags),
        "exact L-lag bound minus exact TV, its minimum over t and both lags (a theorem: a unit test, not a check)":
            f"{(ising_table.exact_bound - ising_table.exact_tv).min():.3g}",
        "two-well TV, tempered / plain MH (equal forward rows)": f"{t_row.tv:.3f} / {p_row.tv:.3f}",
        "chains visiting both wells, tempered / plain MH": f"{t_row.both_wells:.0%} / {p_row.both_wells:.0%}",
        "wells visited per thousand forward rows, tempered / plain MH":
            f"{t_row.wells_per_1000_rows:.3g} / {p_row.wells_per_1000_rows:.3g}",
        "swap rates (min, max); mean round trips per ensemble":
            f"{swaps.rate.min():.2f}, {swaps.rate.max():.2f}; {trips.mean():.2g}",
        f"embedded model, τ = {cold:g}, n = {length}: basins visited per start, tempered / plain MH (equal forward rows)":
            f"{t_m.basins_mean:.2g} / {p_m.basins_mean:.2g}",
        "embedded model: basins per forward row, tempered over plain (95% interval over starts)": gain,
        "embedded model: swap rates between neighbouring rungs; ensembles with a round trip":
            f"{', '.join(f'{x:.2f}' for x in mlm_swaps.rate)}; {int((mlm_trips > 0).sum())} of {mlm_trips.size}",
    }
