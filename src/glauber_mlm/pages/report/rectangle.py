"""Page 01 (the rectangle test): its figures, display tables and prose, from the tables the page computes."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from IPython.display import Markdown

from ..plots import interval_errorbar, legend_outside, panels, show_table, temperature_axis
from . import glue_text  # noqa: F401  (the page glues its design's values for its prose: report.glue_text)

READABLE = {"logit_std": "logit sd", "compatible_max_abs_rho": "compatible model: largest |ρ|",
            "compatible_rectangles": "compatible rectangles", "fraction_certified": "certified", "ci_low": "95% low",
            "ci_high": "95% high", "median_abs_rho": "median |ρ|", "median_ci_low": "median |ρ|: 95% low",
            "median_ci_high": "median |ρ|: 95% high", "forward_noise": "fp32 vs float64 change of ρ",
            "context_sd_log_rho": "sd over contexts of log |ρ|", "compatible_max_rms": "compatible model: largest RMS",
            "median_rms": "median RMS", "flagged": "flagged by the residual", "flagged_given_certified":
            "flagged, of the certified", "calibrated_on": "calibrated on"}
FLAGGED_BY = {(True, True): "both", (True, False): "rectangle only", (False, True): "residual only",
              (False, False): "neither"}


# --- display tables -------------------------------------------------------------------------------------------

def readable(df: pd.DataFrame) -> pd.DataFrame:
    """Column names a reader reads: the names of READABLE, spaces for underscores."""
    return df.rename(columns=READABLE).rename(columns=lambda c: str(c).replace("_", " "))


def table(df: pd.DataFrame):
    """A table as the page shows it, its columns readable."""
    return show_table(readable(df))


def turned(df: pd.DataFrame):
    """A table of one row per model and many columns, one row per column (so it fits a phone)."""
    def cell(v):
        if isinstance(v, str):
            return v
        return f"{v:,.0f}" if float(v).is_integer() and abs(v) >= 1 else f"{v:.3g}"
    t = readable(df).set_index("model").T
    return show_table(t.apply(lambda col: col.map(cell)).rename_axis(None, axis=1).reset_index(names=""))


def calibration_rows(calibrations: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per rule and model: its calibration's power, size, replicates and what it was calibrated on."""
    return pd.DataFrame([
        dict(rule=rule, model=m, power=c.power, size=c.size, replicates=c.replicates,
             null_replicates=c.null_replicates, calibrated_on=c.calibrated_on)
        for rule, per_model in calibrations.items() for m, c in per_model.items()])


# --- figures --------------------------------------------------------------------------------------------------

def rho_distribution(rectangles: pd.DataFrame, compat_rho: Mapping[str, np.ndarray], summary: pd.DataFrame,
                     floor: float):
    """Per model, histograms of |ρ| on the compatible exact model and on the MLM's rectangles, with the tolerance."""
    import matplotlib.ticker as mticker

    fig, model_axes = panels(len(summary), height=4.2)
    for ax, row in zip(model_axes, summary.to_dict("records")):
        name = row["model"]
        mine = np.maximum(rectangles.loc[rectangles.model == name, "abs_rho"].to_numpy(), floor)
        ref = np.maximum(compat_rho[name], floor)
        bins = np.logspace(np.log10(min(mine.min(), ref.min())), np.log10(max(mine.max(), ref.max())) + 0.1, 60)
        ax.hist(ref, bins=bins, alpha=0.6, color="tab:gray", label="compatible exact model")
        ax.hist(mine, bins=bins, alpha=0.7, color="tab:blue", label=f"{name}")
        ax.axvline(row["tolerance"], color="black", ls="--", label=f"tolerance {row['tolerance']:.1e}")
        ax.set(xscale="log", xlabel=rf"$|\rho| = |\log R|$ (0 drawn at $10^{{{np.log10(floor):.0f}}}$)",
               ylabel="rectangles", title=f"{name}: {row['fraction_certified']:.1%} certified")
        ax.xaxis.set_major_locator(mticker.LogLocator(numticks=5))  # a few decades labelled: the labels never touch
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        legend_outside(ax, "below", ncol=1)
    return fig


def fraction_against_temperature(by_temperature: pd.DataFrame, models: Sequence[str], temps: Sequence[float],
                                 practical: float):
    """The share of rectangles above the tolerance (solid) and the practical threshold (dotted) against τ."""
    fig, (ax,) = panels(1, width=6.5, height=4.6)
    for k, name in enumerate(models):
        for kind, style in (("tolerance", "-"), ("practical", ":")):
            g = by_temperature[(by_temperature.model == name) & (by_temperature.threshold_kind == kind)]
            interval_errorbar(ax, g.temperature, g.fraction_above, g.ci_low, g.ci_high, marker="o", capsize=3,
                              ls=style, color=f"C{k}",
                              label=rf"{name}: $|\rho_\tau| >$ {'tolerance' if kind == 'tolerance' else practical}")
    temperature_axis(ax, temps)
    ax.set(xlabel=r"temperature $\tau$", ylabel="share of rectangles\nabove the threshold", ylim=(-0.02, 1.02))
    legend_outside(ax, "below", ncol=2)  # below: the panel keeps the width on a phone
    return fig


def rho_against_influence(rectangles: pd.DataFrame, influence_bins: pd.DataFrame, models: Sequence[str],
                          floor: float):
    """Each rectangle's |ρ| against its token-level influence, with the binned medians and their intervals."""
    fig, (ax,) = panels(1, width=6.5, height=4.6)
    for name in models:
        t = rectangles[rectangles.model == name]
        ax.scatter(t.influence, np.maximum(t.abs_rho, floor), s=4, alpha=0.25)
        g = influence_bins[influence_bins.model == name]
        interval_errorbar(ax, g.influence_median, g.median_abs_rho, g.ci_low, g.ci_high,
                          marker="o", capsize=3, label=rf"{name}: binned median $|\rho|$")
    ax.set(xscale="log", yscale="log", xlabel=r"token-level influence $\frac{1}{2}\,[\mathrm{TV}_i + \mathrm{TV}_j]$",
           ylabel=r"$|\rho|$")
    legend_outside(ax, "below", ncol=2)  # below: the panel keeps the width on a phone
    return fig


def residual_against_rho(compat_pairs: pd.DataFrame, compat_summary: pd.DataFrame, summary: pd.DataFrame,
                         floor: float):
    """Per model, the Arnold–Press residual against |ρ| on the same pairs, coloured by which measure flags each."""
    import seaborn as sns

    fig, model_axes = panels(len(compat_summary), height=4.6)
    for ax, row in zip(model_axes, compat_summary.to_dict("records")):
        t = compat_pairs[compat_pairs.model == row["model"]]
        shown = pd.DataFrame({"|ρ|": np.maximum(t.abs_rho, floor), "residual RMS": np.maximum(t.rms, floor),
                              "flagged by": [FLAGGED_BY[c, f] for c, f in zip(t.certified, t.flagged)]})
        sns.scatterplot(data=shown, x="|ρ|", y="residual RMS", hue="flagged by", hue_order=list(FLAGGED_BY.values()),
                        s=18, alpha=0.7, ax=ax)
        ax.axvline(summary.set_index("model").tolerance[row["model"]], color="black", ls="--", lw=1,
                   label=r"tolerance of $\rho$")
        ax.axhline(row["tolerance"], color="black", ls=":", lw=1, label="tolerance of the residual")
        ax.set(xscale="log", yscale="log", xlabel=r"$|\rho|$", ylabel="residual RMS",
               title=rf"{row['model']}: $k = {row['k']}$, Spearman {row['spearman']:+.2f}")
        legend_outside(ax, "below", ncol=2)
    return fig


# --- prose ----------------------------------------------------------------------------------------------------

def rho_finding(summary: pd.DataFrame) -> Markdown:
    """Per model: the certified share with its interval, the tolerance and the median |ρ| as a multiple of it."""
    return Markdown(" ".join(
        f"On {r.model}, {r.fraction_certified:.1%} [{r.ci_low:.1%}, {r.ci_high:.1%}] of {r.rectangles} rectangles lie "
        f"above the tolerance {r.tolerance:.1e}, with median |ρ| {r.median_abs_rho:.3g}, "
        f"{r.median_abs_rho / r.tolerance:,.0f}× it."
        for r in summary.itertuples()))


def tolerance_source(summary: pd.DataFrame) -> Markdown:
    """Per model, which of the two noise levels sets the tolerance (the rule is `rectangle.noise_tolerance`)."""
    return Markdown(" ".join(
        f"For {r.model} the fp32-versus-float64 change of the forward ({r.forward_noise:.1e}) is "
        + (f"{r.forward_noise / r.compatible_max_abs_rho:,.0f}× the compatible model's largest |ρ| "
           f"({r.compatible_max_abs_rho:.1e}), so the network's own rounding sets the tolerance {r.tolerance:.1e}."
           if r.forward_noise > r.compatible_max_abs_rho else
           f"below the compatible model's largest |ρ| ({r.compatible_max_abs_rho:.1e}), which sets the tolerance "
           f"{r.tolerance:.1e}.")
        for r in summary.itertuples()))


def _share_at(by_temperature: pd.DataFrame, model: str, kind: str, tau: float) -> str:
    """The share of `model`'s rectangles above threshold `kind` at τ, with its interval."""
    r = by_temperature[(by_temperature.model == model) & (by_temperature.threshold_kind == kind)
                       & (by_temperature.temperature == tau)].iloc[0]
    return f"{r.fraction_above:.1%} [{r.ci_low:.1%}, {r.ci_high:.1%}]"


def temperature_finding(by_temperature: pd.DataFrame, temps: Sequence[float]) -> Markdown:
    """Per model: the shares still above each threshold at the hottest and coldest τ, and the identity's error."""
    hot, cold = max(temps), min(temps)
    return Markdown(" ".join(
        f"On {name}, at τ = {hot:g}, {_share_at(by_temperature, name, 'tolerance', hot)} of the rectangles stay above "
        f"the float-noise tolerance and {_share_at(by_temperature, name, 'practical', hot)} above the practical "
        f"threshold (at τ = {cold:g}, {_share_at(by_temperature, name, 'practical', cold)} above the practical "
        f"threshold); the largest |τ·ρ(τ) − ρ(1)| over the temperatures is {err:.1e}."
        for name, err in by_temperature.groupby("model").identity_error.max().items()))


def influence_finding(correlation: pd.DataFrame, influence_cal) -> Markdown:
    """Per model, the Spearman correlation of |ρ| with influence; the rule's power and size at this design."""
    return Markdown(" ".join(
        f"On {r.model} the Spearman correlation of |ρ| with the influence is {r.spearman:+.2f} [{r.ci_low:+.2f}, "
        f"{r.ci_high:+.2f}] (95%, resampling its {r.contexts} contexts)." for r in correlation.itertuples())
        + f" The rule (lower bound above zero for every model) has power {influence_cal.power:.2f} and size "
          f"{influence_cal.size:.2f} at this design ({influence_cal.replicates} planted truths, "
          f"{influence_cal.null_replicates} planted nulls).")


def compat_agreement(compat_summary: pd.DataFrame, residual_cal: Mapping) -> Markdown:
    """Per model, a list item: how far the residual and the rectangle agree on the same pairs."""
    return Markdown("\n".join(
        f"- **{r.model}** ({r.pairs} pairs, k = {r.k}): the residual flags {r.flagged:.1%} of the pairs (the rule asks "
        f"for 90%; its power {residual_cal[r.model].power:.2f}, size {residual_cal[r.model].size:.2f} at this design); "
        f"Spearman correlation of the residual RMS with |ρ| {r.spearman:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}]; "
        f"flagged by both measures {r.both:.1%} of the pairs, by the rectangle only {r.rectangle_only:.1%}, by the "
        f"residual only {r.residual_only:.1%}, by neither {r.neither:.1%}."
        for r in compat_summary.itertuples()))


def per_model(df: pd.DataFrame, column: str, spec: str) -> str:
    """'model value, model value' for a check's observed value (`spec` a format spec, e.g. '.1%')."""
    return ", ".join(f"{r.model} {getattr(r, column):{spec}}" for r in df.itertuples())


def key_numbers(summary: pd.DataFrame, correlation: pd.DataFrame, by_temperature: pd.DataFrame,
                compat_summary: pd.DataFrame) -> dict[str, str]:
    """The page's key numbers for its result box, formatted with their intervals."""
    identity = by_temperature.groupby("model").identity_error.max()
    return {
        **{f"{r.model}: rectangles certified incompatible": f"{r.fraction_certified:.1%} [{r.ci_low:.1%}, "
           f"{r.ci_high:.1%}] of {r.rectangles} (Wilson 95%)" for r in summary.itertuples()},
        **{f"{r.model}: median |ρ|": f"{r.median_abs_rho:.3g} [{r.median_ci_low:.3g}, {r.median_ci_high:.3g}], "
           f"{r.median_abs_rho / r.tolerance:.0f}× the tolerance {r.tolerance:.1e}" for r in summary.itertuples()},
        **{f"{r.model}: Spearman(|ρ|, influence)": f"{r.spearman:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}]"
           for r in correlation.itertuples()},
        "largest |ρ_τ·τ − ρ_1| over the temperatures": f"{identity.max():.1e}",
        **{f"{r.model}: Spearman(|ρ|, Arnold–Press residual, k = {r.k})": f"{r.spearman:+.2f} [{r.ci_low:+.2f}, "
           f"{r.ci_high:+.2f}] over {r.pairs} pairs" for r in compat_summary.itertuples()},
        **{f"{r.model}: pairs the Arnold–Press residual flags (of them, with a certified rectangle)":
           f"{r.flagged:.1%} ({r.flagged_given_certified:.1%})"
           for r in compat_summary.itertuples()},
    }
