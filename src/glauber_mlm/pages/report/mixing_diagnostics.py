"""Page 06 (has my chain mixed?): its figures, display tables and prose, from the tables the page computes."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from IPython.display import Markdown

from ..plots import interval_errorbar, legend_outside, panels, show_table, temperature_axis

RHAT_CEILING = 2.0  # larger (or infinite) R̂ is drawn at the ceiling, with a triangle: the thresholds stay apart
ESS = ["bulk ESS", "tail ESS"]  # effective sample sizes: whole numbers of draws


def glue_design(mh_lengths: Sequence[int], **values) -> None:
    """Glue the design's values (steps, chains …) for the prose's {glue:text} roles, and the MH study's lengths."""
    from myst_nb import glue

    for key, value in values.items():
        glue(key, int(value), display=False)
    glue("mh_lengths", Markdown(", ".join(map(str, mh_lengths))), display=False)


def _yes_no(flags: pd.Series) -> pd.Series:
    """yes / no rather than True / False; blank where the rule makes no claim (None)."""
    return flags.map({True: "yes", False: "no"}).fillna("")


# --- 1. R̂ from dispersed starts ----------------------------------------------------------------------------------

def rhat_table(rhat: pd.DataFrame):
    """R̂ and the effective sample sizes per temperature and summary, as the page shows them."""
    return show_table(rhat.drop(columns=["chains"]).rename(columns={  # every row has the page's chains
        "draws": "draws per chain", "rhat": "R̂", "ess_bulk": ESS[0], "ess_tail": ESS[1],
        "mcse_mean": "MCSE of the mean", "n_stuck": "stuck chains"})).format("{:.0f}", subset=ESS)


def pll_traces(read_at, pll, taus: Sequence[float], chains: int, n: int, budget: int):
    """One panel per temperature: the PLL energy of each chain's state against the step, the warm-up half in grey."""
    fig, axes = panels(len(taus), height=2.8, sharey=True)
    for ax, k in zip(axes, range(len(taus))):
        ax.plot(read_at, pll[:, k * chains:(k + 1) * chains], lw=1, alpha=0.8)
        ax.axvspan(0, budget / 2, color="0.9", zorder=0)
        ax.set(title=rf"$\tau = {taus[k]:g}$", xlabel="step")
    for ax in axes[::2]:
        ax.set_ylabel(r"$\mathrm{PLL}(x)$ of the state")
    fig.suptitle(rf"{chains} Glauber chains per temperature from different passages ($n = {n}$); grey: warm-up, "
                 r"not read by $\widehat{R}$", fontsize="medium")
    return fig


# --- 2. coupling times ----------------------------------------------------------------------------------------------

def coupling_table(cells: pd.DataFrame):
    """The coupled pairs' summary per temperature, as the page shows it."""
    return show_table(cells.rename(columns={
        "p_late": "P(T > budget)", "p_late_low": "P low", "p_late_high": "P high", "median_time": "median T",
        "median_low": "T low", "median_high": "T high"}))


# --- 3. do the two views agree? ---------------------------------------------------------------------------------

def views_table(views: pd.DataFrame, thresholds: Sequence[float]):
    """Per temperature: R̂ of the PLL energy, the coupling summary and regime, and the rule's readings."""
    shown = views[["temperature", "pll_rhat", "p_late", "median_time", "regime"]].rename(columns={
        "pll_rhat": "R̂ of the PLL energy", "p_late": "P(T > budget)", "median_time": "median T"})
    for h in thresholds:
        shown[f"flagged at {h:g}"] = _yes_no(views[f"flagged_at_{h:g}"])
        shown[f"agree at {h:g}"] = _yes_no(views[f"agree_at_{h:g}"])
    return show_table(shown)


def _median_coupling(ax, x, g: pd.DataFrame, budget: int, **kwargs) -> np.ndarray:
    """The Kaplan–Meier median coupling step with its interval (censored: at the budget, an arrow upwards)."""
    censored = ~np.isfinite(g.median_time)
    estimate = np.where(censored, budget, g.median_time)
    interval_errorbar(ax, x, estimate, np.minimum(g.median_low, estimate), np.where(censored, np.inf, g.median_high),
                      marker="o", capsize=3, ls="none", **kwargs)
    return estimate


def rhat_and_coupling(rhat: pd.DataFrame, views: pd.DataFrame, thresholds: Sequence[float], taus: Sequence[float],
                      chains: int, pairs: int, budget: int):
    """Left, R̂ of each summary against τ with the thresholds; right, the median coupling step with its interval,
    labelled with P(T > budget) and the regime."""
    fig, (left, right) = panels(2, height=4.6)
    for name, g in rhat.groupby("summary", sort=False):
        shown = g.rhat.clip(upper=RHAT_CEILING)
        left.plot(g.temperature, shown, marker="o", label=name)
        over = g.rhat > RHAT_CEILING
        left.plot(g.temperature[over], shown[over], "^", ms=11, color="black")
    for h, style in zip(thresholds, ("--", ":")):
        left.axhline(h, color="black", ls=style, lw=1, label=f"threshold {h:g}")
    left.set(ylabel=r"$\widehat{R}$ (second half of each chain)", xlabel=r"temperature $\tau$",
             title=rf"$\widehat{{R}}$ over {chains} chains from different passages")
    legend_outside(left, "below", ncol=1)
    estimate = _median_coupling(right, views.temperature, views, budget, color="C2")
    for row, y in zip(views.itertuples(), estimate):  # on a white box, so that no line runs through a label
        right.annotate(f"P(T > budget) = {row.p_late:.0%}\n{row.regime}", (row.temperature, y), fontsize=8,
                       textcoords="offset points", xytext=(6, -18), zorder=5,
                       bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.9))
    right.axhline(budget, color="black", ls="--", lw=1, label="budget (arrow: median beyond it)")
    right.axhline(budget / 2, color="black", ls=":", lw=1, label="half the budget (fast: every pair met before)")
    right.set(yscale="log", ylabel="median coupling step\n(Kaplan–Meier)", xlabel=r"temperature $\tau$",
              title=f"coupled Glauber, {pairs} pairs per temperature")
    legend_outside(right, "below", ncol=1)
    for ax in (left, right):
        temperature_axis(ax, taus)
    return fig


def ess_text(pll_rhat: pd.DataFrame) -> str:
    """Whether the PLL energy's bulk ESS reaches ArviZ's minimum at every τ (below it, R̂ at ArviZ's threshold says
    nothing either way)."""
    from ...diagnostics import ESS_MIN, RHAT_MAX

    low_ess = [float(t) for t in pll_rhat[pll_rhat.ess_bulk < ESS_MIN].temperature]
    return (f"ArviZ asks for a bulk ESS of at least {ESS_MIN} before trusting R̂ < {RHAT_MAX:g}; the PLL energy's is "
            + (f"below it at τ = {', '.join(f'{t:g}' for t in low_ess)}, so there the comparison at {RHAT_MAX:g} is "
               "inconclusive whatever R̂ reads" if low_ess else "above it at every τ"))


def views_readings(views: pd.DataFrame, rhat: pd.DataFrame, pll_rhat: pd.DataFrame, thresholds: Sequence[float],
                   agreement: Mapping[float, bool | None], chains: int) -> Markdown:
    """A list: per τ, R̂ of the PLL energy, its flags and the coupling regime; the bulk ESS; whether the views agree."""
    rows = []
    for _, r in views.iterrows():
        say = "; ".join(f"at {h:g}: {'flagged' if r[f'flagged_at_{h:g}'] else 'clear'}" for h in thresholds)
        rows.append(f"- τ = {r.temperature:g}: R̂ of the PLL energy {r.pll_rhat:.3f} ({say}); P(T > budget) = "
                    f"{r.p_late:.0%} [{r.p_late_low:.0%}, {r.p_late_high:.0%}], regime **{r.regime}**.")
    for name, g in rhat.groupby("summary", sort=False):
        rows.append(f"- bulk ESS of the {name} over the {chains} chains: "
                    + ", ".join(f"{r.ess_bulk:.0f} at τ = {r.temperature:g}" for r in g.itertuples()) + ".")
    rows.append(f"- {ess_text(pll_rhat)}.")
    rows.append("- the two views agree (the rule above): " + "; ".join(
        f"at {h:g}: {'cannot be judged on this grid' if a is None else ('yes' if a else '**no**')}"
        for h, a in agreement.items()) + ".")
    return Markdown("\n".join(rows))


def views_finding(agreement: Mapping[float, bool | None], designs: Mapping[float, Mapping[str, object]], draws: int,
                  pll_rhat: pd.DataFrame) -> Markdown:
    """What the rule found at each threshold, whether its calibration lets it decide, and the ESS caveat."""
    def words(h: float) -> str:
        a, cal = agreement[h], designs[h][f"{draws} draws per chain"]
        found = ("cannot be judged on this grid" if a is None else "agree" if a else "disagree")
        return (f"at threshold {h:g} R̂ and coupling {found}"
                + ("" if cal.decisive else f" (a reading, not a decision: power {cal.power:.2f}, size {cal.size:.2f} "
                                            f"at {draws} draws per chain)"))

    finding = "; ".join(words(h) for h in agreement)
    return Markdown(finding[0].upper() + finding[1:] + f". {ess_text(pll_rhat)}.")


# --- 4. Glauber against MH ------------------------------------------------------------------------------------------

def acceptance_table(acceptance: pd.DataFrame):
    """MH's acceptance per length and temperature, as the page shows it."""
    return show_table(acceptance)


def side_by_side(cells: pd.DataFrame):
    """P(T > budget) and the median coupling step per τ, Glauber beside MH."""
    side = cells.pivot(index="temperature", columns="sampler", values=["p_late", "median_time"])
    side.columns = [f"{'P(T > budget)' if v == 'p_late' else 'median T'}, {sampler}" for v, sampler in side.columns]
    return show_table(side.reset_index())


def glauber_vs_mh(acceptance: pd.DataFrame, cells: pd.DataFrame, mh_lengths: Sequence[int], taus: Sequence[float],
                  n: int, mh_chains: int, budget: int):
    """MH's acceptance rate against τ per length (and the share of proposals that change a token); P(T > budget) and
    the median coupling step of coupled Glauber and coupled MH."""
    at_n = acceptance[acceptance.length == n]
    fig, axes = panels(3, height=4.0)
    for (L, g), shift in zip(acceptance.groupby("length"), np.linspace(0.96, 1.04, len(mh_lengths))):
        interval_errorbar(axes[0], g.temperature * shift, g.acceptance, g.acceptance_low, g.acceptance_high,
                          marker="o", capsize=3, label=rf"accepted, of the proposals tested ($n = {L}$)")
    axes[0].plot(at_n.temperature, at_n.changing_share, "s--", color="grey",
                 label=rf"proposals that change a token ($n = {n}$)")
    axes[0].set(ylim=(0, 1.02), ylabel="share", title=rf"MH with PLL target, {mh_chains} chains per $\tau$ and $n$")
    for (sampler, g), shift in zip(cells.groupby("sampler"), (0.97, 1.03)):
        x = g.temperature * shift  # side by side on the log axis
        interval_errorbar(axes[1], x, g.p_late, g.p_late_low, g.p_late_high, marker="o", capsize=3, ls="none",
                          label=f"{sampler} ({g.pairs.iloc[0]} pairs)")
        _median_coupling(axes[2], x, g, budget, label=sampler)
    axes[1].set(ylim=(-0.02, 1.02), ylabel=r"$P(T > \mathrm{budget})$", title="pairs not met within the budget")
    axes[2].axhline(budget, color="black", ls="--", lw=1, label="budget (arrow: median beyond it)")
    axes[2].set(yscale="log", ylabel="median coupling step\n(Kaplan–Meier)", title="coupling time")
    for ax in axes:
        temperature_axis(ax, taus)
        ax.set_xlabel(r"temperature $\tau$")
        legend_outside(ax, "below", ncol=1)
    return fig


def _rows_per_step(cost: pd.DataFrame) -> pd.Series:
    return cost.set_index(["sampler", "run"]).rows_per_chain_step


def mh_readings(acceptance: pd.DataFrame, n: int, boundary: Mapping[str, float], cost: pd.DataFrame) -> Markdown:
    """A list: per τ at length n, the share of token-changing proposals, the acceptance and the rows per step; per τ,
    the acceptance against n; the samplers' boundaries; the rows per chain-step of the coupled pairs."""
    by_sampler = _rows_per_step(cost)
    return Markdown("\n".join([
        *(f"- τ = {r.temperature:g}: {r.changing_share:.0%} of the MH proposals change a token, and the test accepts "
          f"{r.acceptance:.0%} [{r.acceptance_low:.0%}, {r.acceptance_high:.0%}] of those; "
          f"{r.rows_per_step:.1f} forward rows per step (n = {n})."
          for r in acceptance[acceptance.length == n].itertuples()),
        *(f"- τ = {tau:g}, against n: the test accepts "
          + ", ".join(f"{r.acceptance:.0%} [{r.acceptance_low:.0%}, {r.acceptance_high:.0%}] at n = {r.length}"
                      for r in g.itertuples()) + "."
          for tau, g in acceptance.groupby("temperature")),
        "- slow-to-fast boundary of the coupling times (lowest τ from which every median is within the budget): "
        + "; ".join(f"{s} {b:g}" if np.isfinite(b) else f"{s}: none on this grid" for s, b in boundary.items()) + ".",
        f"- forward rows per chain-step of the coupled pairs: Glauber {by_sampler['Glauber', 'coupled pairs']:.2f}, "
        f"MH {by_sampler['MH (PLL target)', 'coupled pairs']:.2f}.",
    ]))


def cost_table(cost: pd.DataFrame):
    """The forward rows each run spent, per chain-step, as the page shows them."""
    return show_table(cost.rename(columns={"forward_rows": "forward rows", "chain_steps": "chain-steps",
                                           "rows_per_chain_step": "rows per chain-step"}))


def mh_finding(paired: pd.DataFrame, taus: Sequence[float], rise: Mapping, mh_lengths: Sequence[int]) -> Markdown:
    """MH's acceptance at the highest and the lowest τ, and the paired rise with its interval."""
    return Markdown(
        f"MH's test accepts {paired[taus[-1]].mean():.0%} of the token-changing proposals at τ = {taus[-1]:g} and "
        f"{paired[taus[0]].mean():.0%} at τ = {taus[0]:g} (means over {rise['units']} chains at lengths "
        f"{', '.join(map(str, mh_lengths))}); chain by chain the rise is {rise['difference']:+.2f} "
        f"[{rise['ci_low']:+.2f}, {rise['ci_high']:+.2f}].")


# --- the result box -----------------------------------------------------------------------------------------------

def key_numbers(views: pd.DataFrame, budget: int, n: int, acceptance: pd.DataFrame, mh_lengths: Sequence[int],
                boundary: Mapping[str, float], cost: pd.DataFrame) -> dict[str, str]:
    """The page's key numbers for its result box."""
    at_n = acceptance[acceptance.length == n].reset_index(drop=True)
    lowest, highest = at_n.iloc[0], at_n.iloc[-1]
    by_sampler = _rows_per_step(cost)
    return {
        **{f"τ = {r.temperature:g}: R̂ of the PLL energy; P(T > budget) (Wilson); regime":
           f"{r.pll_rhat:.3f}; {r.p_late:.0%} [{r.p_late_low:.0%}, {r.p_late_high:.0%}]; {r.regime}"
           for r in views.itertuples()},
        "budget (steps per chain and coupling budget), length n": f"{budget}, {n}",
        **{f"MH acceptance among token-changing proposals at τ = {r.temperature:g} (bootstrap over chains)":
           f"{r.acceptance:.0%} [{r.acceptance_low:.0%}, {r.acceptance_high:.0%}]" for r in (lowest, highest)},
        f"MH acceptance at τ = {highest.temperature:g} against n = {', '.join(map(str, mh_lengths))}":
            ", ".join(f"{r.acceptance:.0%}" for r in acceptance[acceptance.temperature == highest.temperature]
                      .itertuples()),
        "slow-to-fast boundary of the coupling times, Glauber / MH":
            " / ".join(f"{b:g}" if np.isfinite(b) else "none on the grid" for b in boundary.values()),
        "forward rows per chain-step of the coupled pairs, Glauber / MH":
            f"{by_sampler['Glauber', 'coupled pairs']:.2f} / {by_sampler['MH (PLL target)', 'coupled pairs']:.2f}",
    }
