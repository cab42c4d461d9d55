"""Page 00 (calibration on exact models): its tables assembled from the library's results, its figures, the tables
it displays and the prose it glues. Nothing here decides a check: the page's rules stay in the notebook."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

if TYPE_CHECKING:  # annotations only
    from matplotlib.figure import Figure
    from pandas.io.formats.style import Styler

    from glauber_mlm.pages.checks import Calibration

from glauber_mlm.exact import calibration
from glauber_mlm.pages.plots import interval_errorbar, legend_outside, log_axis_at, panels, show_table
from glauber_mlm.stats import bootstrap_ci, censored_median_ci, fit_scaling_ci, proportion_ci, tv_null_test

from . import glue_text  # noqa: F401  (the page glues its design's values for its prose: report.glue_text)

LAW_COLUMNS = {"tv": "TV to π", "null_low": "null 95% low", "null_median": "null median", "null_high": "null 95% high",
               "p_value": "p", "effective_samples": "effective size", "iid_floor": "iid floor",
               "tv_to_wrong_law": "TV to the law at 1.25 τ", "p_value_wrong_law": "p (law at 1.25 τ)"}


def turned(df: pd.DataFrame, key: str, names: dict) -> Styler:
    """A table of few rows and many columns, one row per column (so it fits a phone); integers as integers."""
    t = df.rename(columns=names).set_index(key).T
    cell = lambda v: f"{v:,.0f}" if float(v).is_integer() and abs(v) >= 1 else f"{v:.3g}"  # noqa: E731
    return show_table(t.apply(lambda col: col.map(cell)).rename_axis(None, axis=1).reset_index(names=""))


# ---- section 1: the stationary law ---------------------------------------------------------------------------------

def stationary_tables(kept: dict[str, torch.Tensor], all_states: torch.Tensor, law: torch.Tensor,
                      wrong_law: torch.Tensor, q: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Each scan's TV null tests against π and the law at 1.25 τ on 1/8…all of its chains, and its visit frequencies."""
    law_rows, conv_rows, freqs = [], [], {}
    for scan, states in kept.items():
        n_chains = states.shape[1]
        for frac in (1 / 8, 1 / 4, 1 / 2, 1):  # the same chains, fewer of them: TV must fall with the iid floor
            sub = states[:, : max(2, round(frac * n_chains))]
            size = sub.shape[0] * sub.shape[1]
            counts = calibration.chain_counts(sub, q)
            test = tv_null_test(counts, law.numpy(), seed=seed)
            wrong = tv_null_test(counts, wrong_law.numpy(), seed=seed)
            conv_rows.append(dict(scan=scan, chains=sub.shape[1], samples=size, tv=test["tv"],
                                  null_low=test["null_low"], null_median=test["null_median"],
                                  null_high=test["null_high"], p_value=test["p_value"],
                                  effective_samples=test["effective_size"],
                                  iid_floor=calibration.iid_tv(law.numpy(), size, seed=seed),
                                  tv_to_wrong_law=wrong["tv"], p_value_wrong_law=wrong["p_value"]))
        law_rows.append(dict(conv_rows[-1], states=q ** all_states.shape[1]))
        counts = calibration.chain_counts(states, q).sum(0)
        freqs[scan] = counts / counts.sum()
    stationary = pd.DataFrame(law_rows)[["scan", "states", "chains", "samples", "tv", "null_low", "null_median",
                                         "null_high", "p_value", "effective_samples", "iid_floor", "tv_to_wrong_law",
                                         "p_value_wrong_law"]]
    per_state = pd.DataFrame({"state": ["".join(map(str, s)) for s in all_states.tolist()], "exact": law.numpy(),
                              "random_scan": freqs["random"], "systematic_scan": freqs["systematic"]})
    return stationary, pd.DataFrame(conv_rows), per_state


def law_table(stationary: pd.DataFrame) -> Styler:
    """The stationary-law tests, one row per quantity and one column per scan."""
    return turned(stationary, "scan", LAW_COLUMNS | {"scan": "scan"})


def calibration_table(calibrations: dict) -> pd.DataFrame:
    """One row per scan: the power, size and design of its test's calibration."""
    return pd.DataFrame([dict(scan=k, power=c.power, size=c.size, replicates=c.replicates,
                              calibrated_on=c.calibrated_on) for k, c in calibrations.items()])


def stationary_figure(stationary: pd.DataFrame, convergence: pd.DataFrame, per_state: pd.DataFrame, n: int, q: int,
                      tau: float) -> Figure:
    """Left: empirical against exact state probabilities; right: the TV against the sample size, with its null band."""
    fig, (a1, a2) = panels(2, height=4.6)
    for scan, marker in (("random", "o"), ("systematic", "x")):
        row = stationary.set_index("scan").loc[scan]
        a1.scatter(per_state["exact"], per_state[f"{scan}_scan"], s=12, marker=marker, alpha=0.7,
                   label=f"{scan} scan: TV = {row.tv:.4f}")
        c = convergence[convergence.scan == scan]
        line = a2.plot(c.samples, c.tv, marker=marker,
                       label=rf"{scan} scan vs exact $\pi$ (band: null at $N_{{\mathrm{{eff}}}}$)")
        a2.fill_between(c.samples, c.null_low, c.null_high, color=line[0].get_color(), alpha=0.15)
        a2.plot(c.samples, c.tv_to_wrong_law, marker=marker, ls=":", color="grey")
    top = per_state["exact"].max() * 1.1
    a1.plot([0, top], [0, top], "k--", lw=1, label="empirical = exact")
    a1.set(xlabel=r"exact $\pi(x)$", ylabel="empirical frequency",
           title=rf"Potts chain, $n = {n}$, $q = {q}$, $\tau = {tau}$")
    legend_outside(a1, "below", ncol=1)
    c = convergence[convergence.scan == "random"]
    a2.plot(c.samples, c.iid_floor, "k--", label=r"iid sample of the nominal size from $\pi$ (mean)")
    a2.plot([], [], ls=":", color="grey", label=r"vs the law at $1.25\,\tau$ (control)")
    a2.set(xscale="log", yscale="log", xlabel="recorded states", ylabel="TV", title="TV falls with the sample size")
    log_axis_at(a2, c.samples)  # the sample sizes only: the default log ticks overlapped
    legend_outside(a2, "below", ncol=1)
    return fig


def band_word(r: tuple) -> str:
    """Where the TV to π lies against its null's band (the test is one-sided: only a TV above the band rejects)."""
    return ("below" if r.tv < r.null_low else "inside" if r.tv <= r.null_high else "above")


def stationary_finding(stationary: pd.DataFrame) -> str:
    """The stationary-law finding: each scan's TV against its null band and against the control law."""
    return " ".join(
        f"With {r.scan} scan and all {r.samples:,} recorded states, the TV to π is {r.tv:.4f}, {band_word(r)} the "
        f"null's 95% band [{r.null_low:.4f}, {r.null_high:.4f}] (p = {r.p_value:.2f}); the TV to the law at 1.25 τ is "
        f"{r.tv_to_wrong_law:.4f} (p = {r.p_value_wrong_law:.4f})." for r in stationary.itertuples())


def convergence_table(convergence: pd.DataFrame) -> Styler:
    """Both tests for each scan and sample size."""
    return show_table(convergence[["scan", "chains", "samples", "effective_samples", "tv", "null_low", "null_high",
                                   "p_value", "tv_to_wrong_law", "p_value_wrong_law"]].rename(columns=LAW_COLUMNS))


# ---- section 2: coupling times -------------------------------------------------------------------------------------

def coupled_pairs(tau: float, n: int, n_pairs: int, budget: int, coupling: float, seed: int, ordered: bool) -> object:
    """Coupled Ising pairs at (τ, n) from 00…0 vs 11…1 (`ordered`) or from uniform starts drawn with `seed`."""
    import glauber_mlm as gm
    from glauber_mlm import exact

    g = torch.Generator().manual_seed(seed)
    x0, y0 = ((torch.zeros(n_pairs, n, dtype=torch.long), torch.ones(n_pairs, n, dtype=torch.long)) if ordered else
              (torch.randint(2, (n_pairs, n), generator=g), torch.randint(2, (n_pairs, n), generator=g)))
    return gm.coupling_times(exact.potts_chain(n, 2, coupling), x0, y0, budget, tau, seed=seed)


def coupling_tables(results: dict, coupling: float, n_pairs: int, budget: int,
                    seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per cell, per pair): each cell's censored median time and interval, T/(n log n), δ and path coupling's T."""
    coupling_rows, pair_rows = [], []
    for (regime, tau, n), res in results.items():
        med, lo, hi = censored_median_ci(res.times.numpy(), res.met.numpy(), seed=seed)
        delta = 1 - math.tanh(coupling / tau)
        coupling_rows.append(dict(regime=regime, start="00…0 vs 11…1" if regime == "low" else "independent uniform",
                                  temperature=tau, length=n, pairs=n_pairs, budget=budget,
                                  met_fraction=res.met.float().mean().item(), median_time=med, ci_low=lo, ci_high=hi,
                                  per_nlogn=med / (n * math.log(n)), dobrushin_delta=delta,
                                  path_coupling_estimate=(n / delta) * math.log(n / 2)))
        pair_rows += [dict(regime=regime, temperature=tau, length=n, time=t, met=m)
                      for t, m in zip(res.times.tolist(), res.met.tolist())]
    return pd.DataFrame(coupling_rows), pd.DataFrame(pair_rows)


def coupling_table(ising_coupling: pd.DataFrame) -> Styler:
    """The coupling times per cell, as the page shows them."""
    return show_table(ising_coupling[["regime", "temperature", "length", "met_fraction", "median_time", "ci_low",
                                      "ci_high", "per_nlogn", "path_coupling_estimate"]].rename(columns={
        "temperature": "τ", "length": "n", "met_fraction": "met", "median_time": "median T", "ci_low": "95% low",
        "ci_high": "95% high", "per_nlogn": "T / (n log n)", "path_coupling_estimate": "path coupling T"}))


def scaling_fits(pairs: pd.DataFrame, temperatures: list[float], coupling: float, seed: int) -> pd.DataFrame:
    """`stats.fit_scaling_ci` of the high-temperature pairs at each τ, with 1/δ beside it."""
    fit_rows = []
    for tau in temperatures:
        sub = pairs[(pairs.regime == "high") & (pairs.temperature == tau)]
        for law_name, (C, lo, hi, r2) in fit_scaling_ci(sub.length, sub.time, sub.met, seed=seed).items():
            fit_rows.append(dict(temperature=tau, law=law_name, C=C, ci_low=lo, ci_high=hi, r2_log=r2,
                                 one_over_delta=1 / (1 - math.tanh(coupling / tau))))
    return pd.DataFrame(fit_rows)


def slowdown_table(pairs: pd.DataFrame, ising_coupling: pd.DataFrame, slow: dict, coupling: float,
                   n_low: int) -> pd.DataFrame:
    """The slow-down fit log T ≈ b·J/τ + a (`slow`) as one row, with the log medians' R² and the censored pairs."""
    from glauber_mlm.measures import margins

    low = pairs[pairs.regime == "low"]
    lo_rows = ising_coupling[ising_coupling.regime == "low"]
    on_medians = margins.fit_log_linear(coupling / lo_rows.temperature, lo_rows.median_time, n_boot=10)
    return pd.DataFrame([dict(length=n_low, start="00…0 vs 11…1", fit="log T ≈ b·J/τ + a", **slow,
                              r2_of_medians=on_medians["r2"], censored=int((~low.met).sum()), pairs=len(low))])


def fit_tables(scaling: pd.DataFrame, slow_table: pd.DataFrame) -> Styler:
    """Shows the R² of each law per τ, and returns the slow-down fit turned (one row per quantity)."""
    from IPython.display import display

    display(show_table(scaling.pivot(index="temperature", columns="law", values="r2_log").reset_index()
                       .rename(columns={"temperature": "τ (R² of log T per law)", "n^2": "n²"})))
    return turned(slow_table.drop(columns=["start", "fit"]).assign(fit="log T ≈ b·J/τ + a"), "fit",
                  {"length": "n (ordered pair 00…0 vs 11…1)", "slope": "b", "slope_low": "b: 95% low",
                   "slope_high": "b: 95% high", "intercept": "a", "r2": "R² over pairs",
                   "r2_of_medians": "R² of the log medians", "censored": "censored pairs"})


def coupling_figure(ising_coupling: pd.DataFrame, slow: dict, coupling: float, lengths: list[int],
                    n_low: int) -> Figure:
    """Left: T/(n log n) against n and path coupling's estimate; right: the ordered pair's T against J/τ, fitted."""
    fig, (a1, a2) = panels(2, height=4.8)
    hi_rows = ising_coupling[ising_coupling.regime == "high"]
    for k, (tau, sub) in enumerate(hi_rows.groupby("temperature")):
        sub = sub[np.isfinite(sub.median_time)]  # a censored median (half the pairs or more unmet) has no point to draw
        nl = sub.length * np.log(sub.length)
        interval_errorbar(a1, sub.length, sub.median_time / nl, sub.ci_low / nl, sub.ci_high / nl,
                          marker="o", capsize=3, color=f"C{k}", label=rf"$\tau = {tau:g}$: median $T/(n \log n)$")
        a1.plot(sub.length, sub.path_coupling_estimate / nl, ":", color=f"C{k}",
                label=rf"$\tau = {tau:g}$: $(n/\delta) \log(n/2) \,/\, (n \log n)$")
    a1.set(xlabel=r"length $n$", ylabel=r"$T / (n \log n)$", title=r"high temperature: $T \approx C\, n \log n$")
    log_axis_at(a1, lengths)
    a1.set_ylim(bottom=0)
    legend_outside(a1, "below", ncol=1)
    lo_rows = ising_coupling[ising_coupling.regime == "low"]
    x = coupling / lo_rows.temperature
    drawn = np.isfinite(lo_rows.median_time)
    interval_errorbar(a2, x[drawn], lo_rows.median_time[drawn], lo_rows.ci_low[drawn], lo_rows.ci_high[drawn],
                      marker="o", capsize=3, ls="none", label=rf"median $T$, $n = {n_low}$, from 00…0 vs 11…1")
    xs = np.linspace(x.min(), x.max(), 50)
    a2.plot(xs, np.exp(slow["intercept"] + slow["slope"] * xs), "k--",
            label=rf"fit: $b = {slow['slope']:.2f}$ [{slow['slope_low']:.2f}, {slow['slope_high']:.2f}]")
    a2.set(yscale="log", xlabel=r"$J / \tau$", ylabel="coupling time (steps)",
           title="low temperature: exponential slow-down")
    legend_outside(a2, "below", ncol=1)
    return fig


def coupling_finding(ising_coupling: pd.DataFrame, slow_fit: pd.Series, slow_calibration: Calibration) -> str:
    """How T/(n log n) moves with n at each high τ, and the low-temperature rate b with its rule's calibration."""
    coupling_reading = []
    for tau, sub in ising_coupling[ising_coupling.regime == "high"].groupby("temperature"):
        sub = sub.sort_values("length")
        first, last = sub.iloc[0], sub.iloc[-1]
        if not (np.isfinite(first.median_time) and np.isfinite(last.median_time)):
            coupling_reading.append(f"At τ = {tau:g} some median is censored (raise the budget).")
            continue
        apart = (first.ci_high / (first.length * math.log(first.length))
                 < last.ci_low / (last.length * math.log(last.length)))
        change = last.per_nlogn / first.per_nlogn - 1
        coupling_reading.append(
            f"At τ = {tau:g} the median T/(n log n) goes from {first.per_nlogn:.2f} at n = {first.length} to "
            f"{last.per_nlogn:.2f} at n = {last.length} ({change:+.0%}; their 95% intervals "
            + ("are disjoint" if apart else "overlap") + "), the path-coupling estimate from "
            f"{first.path_coupling_estimate / (first.length * math.log(first.length)):.2f} to "
            f"{last.path_coupling_estimate / (last.length * math.log(last.length)):.2f}.")
    return (" ".join(coupling_reading)
            + f" At low temperature the rate is b = {slow_fit.slope:.2f} [{slow_fit.slope_low:.2f}, "
              f"{slow_fit.slope_high:.2f}] "
            + (f"(R² of the log medians on J/τ {slow_fit.r2_of_medians:.3f})" if np.isfinite(slow_fit.r2_of_medians)
               else "(too few temperatures for an R² of the medians)")
            + "; its interval "
            + ("meets" if slow_fit.slope_low <= 2 and slow_fit.slope_high >= 1 else "misses")
            + f" [1, 2], and the rule has power {slow_calibration.power:.2f} and size {slow_calibration.size:.2f} at "
              f"this design.")


# ---- section 3: the rectangle statistic ----------------------------------------------------------------------------

def measured_rectangles(models: dict, contexts: torch.Tensor, top_k: int, seed: int) -> tuple[dict, dict]:
    """(ρ, closed form) of one rectangle per context on each model: 0 if compatible, else `exact.exact_rectangle`."""
    import glauber_mlm as gm
    from glauber_mlm import exact

    rho, truth = {}, {}
    for name, toy in models.items():
        rects = gm.random_rectangles(toy, contexts, 1, top_k=top_k, seed=seed)
        rho[name] = gm.rectangle_test(toy, rects).rho.numpy()
        truth[name] = (exact.exact_rectangle(toy, rects.i, rects.j, rects.a, rects.a2, rects.b, rects.b2).numpy()
                       if not toy.compatible else np.zeros(contexts.shape[0]))
    return rho, truth


def forward_rounding(mlm: object, rects: object, rho: np.ndarray, m: int) -> float:
    """The fp32 forward's own rounding in ρ: the largest change of the first `m` ρ through a float64 copy."""
    import glauber_mlm as gm
    from glauber_mlm.measures.rectangle import float64_twin

    sub = gm.Rectangles(*(getattr(rects, f)[:m] for f in ("contexts", "i", "j", "a", "a2", "b", "b2")))
    return float(np.abs(gm.rectangle_test(float64_twin(mlm), sub).rho.numpy() - rho[:m]).max())


def rectangle_summary(rho: dict, truth: dict, tolerances: dict, seed: int) -> pd.DataFrame:
    """Per model: closed form, largest |ρ − closed form|, median |ρ| and share above its tolerance, with intervals."""
    rect_rows = []
    for name in rho:
        r, t = rho[name], truth[name]
        row_tol = tolerances[name]
        above = int((np.abs(r) > row_tol).sum())
        frac, lo, hi = proportion_ci(above, r.size)
        med, mlo, mhi = bootstrap_ci(np.abs(r), np.median, seed=seed)
        rect_rows.append(dict(model=name, rectangles=r.size, closed_form="ρ = 0" if np.all(t == 0) else
                              ("−Δ²(Wᵢⱼ − Wⱼᵢᵀ)" if np.isfinite(t).all() else "unknown"),
                              max_abs_error=float(np.abs(r - t).max()) if np.isfinite(t).all() else np.nan,
                              median_abs_rho=med, median_ci_low=mlo, median_ci_high=mhi, tolerance=row_tol,
                              fraction_above_tol=frac, fraction_ci_low=lo, fraction_ci_high=hi))
    return pd.DataFrame(rect_rows)


def rectangle_table(rect_cal: pd.DataFrame) -> Styler:
    """The columns a reader compares (the saved table has every interval)."""
    return show_table(pd.DataFrame({
        "model": rect_cal.model, "rectangles": rect_cal.rectangles, "closed form": rect_cal.closed_form,
        "largest |ρ − closed form|": [f"{v:.2g}" if np.isfinite(v) else "—" for v in rect_cal.max_abs_error],
        "median |ρ|": rect_cal.median_abs_rho, "tolerance": rect_cal.tolerance,
        "above the tolerance [95%]": [f"{r.fraction_above_tol:.1%} [{r.fraction_ci_low:.1%}, {r.fraction_ci_high:.1%}]"
                                      for r in rect_cal.itertuples()]}))


def rectangle_figure(rho: dict, truth: dict, tol: float, tol_mlm: float, incompatible: str) -> Figure:
    """Left: |ρ| per model with both tolerances; right: the incompatible toy's ρ against its closed form."""
    import matplotlib.ticker as mticker

    fig, (a1, a2) = panels(2, height=4.4)
    bins = np.logspace(-10, 2, 49)
    for name, r in rho.items():
        a1.hist(np.abs(r) + 1e-12, bins=bins, histtype="step", lw=1.5, label=name)
    a1.axvline(tol, color="k", ls="--", lw=1, label=f"tolerance, exact models {tol:.1e}")
    a1.axvline(tol_mlm, color="k", ls=":", lw=1, label=f"tolerance, MLM {tol_mlm:.1e}")
    a1.set(xscale="log", xlabel=r"$|\rho|$  (0 drawn at $10^{-12}$)", ylabel="rectangles", title=r"$|\rho|$ per model")
    a1.xaxis.set_major_locator(mticker.LogLocator(numticks=5))
    a1.xaxis.set_minor_formatter(mticker.NullFormatter())
    legend_outside(a1, "below", ncol=1)
    a2.scatter(truth[incompatible], rho[incompatible], s=10)
    lim = np.abs(truth[incompatible]).max() * 1.1
    a2.plot([-lim, lim], [-lim, lim], "k--", lw=1)
    a2.set(xlabel=r"closed form $-\Delta^2(W_{ij} - W_{ji}^{\top})$", ylabel=r"measured $\rho$",
           title="incompatible toy: measured = closed form")
    return fig


def rectangle_finding(rect_cal: pd.DataFrame, noise: float, tol: float, tol_mlm: float, closed_form_cal: Calibration,
                      incompatible: str, mlm_model: str, mlm_name: str) -> str:
    """The tolerance, the held-out models' shares above it, the toy's error and the MLM's share."""
    by_model = rect_cal.set_index("model")
    inc_err, mlm_row = by_model.loc[incompatible, "max_abs_error"], by_model.loc[mlm_model]
    held_out = by_model[by_model.index.str.contains("held out")]
    return (f"The noise reference's largest |ρ| is {noise:.1e}, so the exact models' tolerance is {tol:.1e}; "
            + ", ".join(f"{r.fraction_above_tol:.1%} of the {r.rectangles} rectangles of the {name}"
                        for name, r in held_out.iterrows())
            + f" lie above it. The incompatible toy's largest |measured ρ − closed form| is {inc_err:.1e}, "
            + f"{inc_err / tol:.2g}× the tolerance (the rule, below {tol:.1e}, has power {closed_form_cal.power:.2f} "
              f"and size {closed_form_cal.size:.2f} against a closed form off by 0.1%). On {mlm_name}, "
              f"{mlm_row.fraction_above_tol:.1%} [{mlm_row.fraction_ci_low:.1%}, {mlm_row.fraction_ci_high:.1%}] of "
              f"{mlm_row.rectangles} rectangles lie above its tolerance {tol_mlm:.1e}, median |ρ| "
              f"{mlm_row.median_abs_rho:.2g}.")


def tolerance_note(noise: float, forward_noise: float, tol: float, tol_mlm: float) -> str:
    """Why the MLM's tolerance (here and on page 01) is larger than the exact models': which noise level sets it."""
    return (f"The MLM's tolerance {tol_mlm:.1e} is {tol_mlm / tol:.2g}× the exact models' {tol:.1e}: "
            + (f"its fp32 forward changes ρ by up to {forward_noise:.1e} against a float64 copy of the network, "
               f"{forward_noise / noise:.2g}× the reference's float noise, and the larger of the two sets the "
               "tolerance."
               if forward_noise > noise else
               f"its fp32 forward changes ρ by {forward_noise:.1e} at most, below the reference's noise, which sets "
               f"both."))


# ---- section 4: influence ------------------------------------------------------------------------------------------

def influence_table(alpha: torch.Tensor, alpha3_exact: torch.Tensor, alpha3_few: torch.Tensor,
                    temperatures: list[float], coupling: float, n3: int) -> pd.DataFrame:
    """Ising influence (`alpha`: (T, n, n)) against its closed forms; the q = 3 model's 4-context estimate vs sup."""
    from glauber_mlm import total_influence

    n_infl = alpha.shape[-1]
    infl_rows = []
    mid = n_infl // 2
    for t, tau in enumerate(temperatures):
        for quantity, measured, closed in (
            ("interior α(i, i+1)", alpha[t, mid, mid + 1].item(), math.tanh(coupling / tau) / 2),
            ("end α(0, 1)", alpha[t, 0, 1].item(), math.tanh(coupling / (2 * tau))),
            ("total influence", total_influence(alpha[t]).item(), math.tanh(coupling / tau)),
        ):
            infl_rows.append(dict(model=f"Ising, n = {n_infl}", temperature=tau, quantity=quantity, measured=measured,
                                  truth=closed, truth_source="closed form", abs_error=abs(measured - closed)))
        exact3 = total_influence(alpha3_exact[t]).item()
        few3 = total_influence(alpha3_few[t]).item()
        infl_rows.append(dict(model=f"random pairwise, q = 3, n = {n3}", temperature=tau,
                              quantity="total influence, 4 contexts × 1 replacement", measured=few3, truth=exact3,
                              truth_source="all contexts and replacements", abs_error=abs(few3 - exact3)))
    return pd.DataFrame(infl_rows)


def influence_display(influence_cal: pd.DataFrame) -> Styler:
    """The influence table with the page's column names."""
    return show_table(influence_cal.rename(columns={"temperature": "τ", "truth_source": "truth from",
                                                    "abs_error": "|error|"}))


def influence_figure(influence_cal: pd.DataFrame, temperatures: list[float], coupling: float) -> Figure:
    """Measured influence on the closed-form curves; the q = 3 model's sampled estimate below its exact supremum."""
    fig, (ax,) = panels(1, width=6.5, height=5.4)
    ts = np.geomspace(min(temperatures) * 0.8, max(temperatures) * 1.2, 100)
    ax.plot(ts, np.tanh(coupling / ts), "k-", lw=1, label=r"$\tanh(J/\tau)$ (Ising, closed form)")
    ax.plot(ts, np.tanh(coupling / ts) / 2, "k:", lw=1, label=r"$\tanh(J/\tau)/2$ (interior $\alpha$)")
    mathtext = {"total influence": r"total influence $\alpha$", "interior α(i, i+1)": r"interior $\alpha_{i,i+1}$"}
    for quantity, marker in (("total influence", "o"), ("interior α(i, i+1)", "s")):
        sub = influence_cal[(influence_cal.quantity == quantity)]
        ax.scatter(sub.temperature, sub.measured, marker=marker, zorder=3, label=f"measured {mathtext[quantity]}")
    p3 = influence_cal[influence_cal.model.str.startswith("random")]
    ax.plot(p3.temperature, p3.truth, "C2-", marker="^", label=r"pairwise $q = 3$: exact sup")
    ax.plot(p3.temperature, p3.measured, "C3--", marker="v",
            label=r"pairwise $q = 3$: 4 sampled contexts (lower bound)")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set(xscale="log", xlabel=r"temperature $\tau$", ylabel="influence",
           title="Dobrushin influence: measured vs exact")
    log_axis_at(ax, temperatures)  # the temperatures run only: the default log ticks overlapped
    legend_outside(ax, "below", ncol=1)  # below: the panel keeps the width on a phone
    return fig


def influence_finding(influence_cal: pd.DataFrame, tolerance: float, ising_influence_cal: Calibration) -> str:
    """The Ising chain's largest error against the closed forms, and the share of the supremum sampled contexts find."""
    closed = influence_cal[influence_cal.truth_source == "closed form"]
    sampled = influence_cal[influence_cal.truth_source != "closed form"]
    return (f"On the Ising chain the largest |measured − closed form| over the interior α, the end α and the total "
            f"influence at every temperature is {closed.abs_error.max():.1e} (the rule, below {tolerance:g}, has power "
            f"{ising_influence_cal.power:.2f} and size {ising_influence_cal.size:.2f} against a chain whose J is off "
            f"by 0.1%). On the q = 3 pairwise model the sampled contexts recover between "
            f"{(sampled.measured / sampled.truth).min():.0%} and {(sampled.measured / sampled.truth).max():.0%} of the "
            f"exact supremum.")


# ---- notebook 02's growth rule on the Ising chain ------------------------------------------------------------------

def growth_rates(growth_cal: Calibration, lengths: list[int], tau: float, pairs: int, budget: int) -> dict:
    """`planted.judge_rates` of the rule's calibration (runs passed, one-sided 95 % bounds, whether it passes), with
    the exact two-sided 95 % intervals of both rates and the design they were measured at."""
    from glauber_mlm.pages.planted.growth import judge_rates
    from glauber_mlm.stats import clopper_pearson

    judged = judge_rates(growth_cal)
    runs, null_passes = judged["runs"], judged["null_passes"]
    return dict(judged, lengths=lengths, tau=tau, pairs=pairs, budget=budget, passes=judged["truth_passes"],
                rule_passes=judged["passes"], rate=clopper_pearson(judged["truth_passes"], runs),
                null_rate=(np.nan,) * 3 if null_passes is None else clopper_pearson(null_passes, runs))


def growth_table(g: dict) -> pd.DataFrame:
    """The rule's pass rate over independent runs where n log n is the truth and where the times grow as n^1.5."""
    lengths = "–".join(map(str, g["lengths"]))
    return pd.DataFrame([
        dict(planted="Ising chain (n log n)", temperature=g["tau"], lengths=lengths, pairs=g["pairs"], runs=g["runs"],
             passes=g["passes"], rate=g["rate"][0], ci_low=g["rate"][1], ci_high=g["rate"][2]),
        dict(planted="the same runs replanted as n^1.5", temperature=g["tau"], lengths=lengths, pairs=g["pairs"],
             runs=g["runs"], passes=g["null_passes"], rate=g["null_rate"][0], ci_low=g["null_rate"][1],
             ci_high=g["null_rate"][2])])


def growth_display(growth_table: pd.DataFrame) -> Styler:
    """The pass rates with the page's column names."""
    return show_table(growth_table.rename(columns={"temperature": "τ", "passes": "runs passed", "rate": "pass rate",
                                                   "ci_low": "95% low (exact)", "ci_high": "95% high (exact)"}))


def growth_finding(g: dict, passed: bool | None, ising_coupling: pd.DataFrame, coupling: float) -> str:
    """How close section 2's medians are to the path-coupling law at the rule's J/τ, and the rule's power and size."""
    ns, tau = g["lengths"], g["tau"]
    hi_rows = ising_coupling[ising_coupling.regime == "high"]
    near = hi_rows[(hi_rows.temperature == tau) & (hi_rows.length >= 16)]
    closeness = (f"At J/τ = {coupling / tau:g} the medians of section 2 lie within "
                 f"{(near.median_time / near.path_coupling_estimate - 1).abs().max():.0%} of the path-coupling "
                 f"estimate at n = {', '.join(str(n) for n in near.length)}. " if len(near) else "")
    path_exponent = float(np.polyfit(np.log(ns), np.log(np.array(ns) * np.log(np.array(ns) / 2)), 1)[0])
    rate, null_rate = g["rate"], g["null_rate"]
    return (closeness + f"On the exact Ising chain at J/τ = {coupling / tau:g} (n log n; the local exponent of its "
            f"path-coupling law over n = {', '.join(map(str, ns))} is {path_exponent:.2f}), notebook 02's rule at "
            f"02's design ({g['pairs']} pairs per length, budget {g['budget']}) passes {g['passes']} of {g['runs']} "
            f"independent runs: a rate of {rate[0]:.3f} [{rate[1]:.3f}, {rate[2]:.3f}] (exact 95 %). On the same "
            f"runs replanted as $n^{{1.5}}$ it passes {g['null_passes']} of {g['runs']}: {null_rate[0]:.3f} "
            f"[{null_rate[1]:.3f}, {null_rate[2]:.3f}]. The check below asks for a power whose one-sided 95 % lower "
            f"bound is at least 0.80 (here {g['power_low']:.3f}) and a size whose upper bound is at most 0.10 (here "
            f"{g['size_high']:.3f}): "
            + ("both hold, so a pass or a fail of the rule on 02's data means what it says." if passed else
               "the size is unknown at this design (no replanted run has a location at every length), so the rule's "
               "outcome on 02's data cannot be read against it." if passed is None else
               "they do not both hold, so the rule's outcome on 02's data must be read with that."))


# ---- the result box ------------------------------------------------------------------------------------------------

def key_numbers(stationary: pd.DataFrame, g: dict, coupling: float, slow_fit: pd.Series, inc_err: float, tol: float,
                rect_cal: pd.DataFrame, mlm_model: str, mlm_name: str, tol_mlm: float,
                influence_error: float) -> dict[str, str]:
    """The result box's key numbers, formatted with their intervals."""
    by_model = rect_cal.set_index("model")
    held_out, mlm_row = by_model[by_model.index.str.contains("held out")], by_model.loc[mlm_model]
    rate, null_rate = g["rate"], g["null_rate"]
    return {
        "TV to π, largest sample (null 95% band; p)": "; ".join(
            f"{r.scan} scan {r.tv:.4f} ({r.null_low:.4f}–{r.null_high:.4f}; p = {r.p_value:.2f})"
            for r in stationary.itertuples()),
        "TV to the control law at 1.25 τ (p)": "; ".join(
            f"{r.scan} scan {r.tv_to_wrong_law:.3f} (p = {r.p_value_wrong_law:.4f})" for r in stationary.itertuples()),
        f"notebook 02's growth rule on the exact Ising chain at J/τ = {coupling / g['tau']:g}, n = "
        f"{', '.join(map(str, g['lengths']))} (pass rate, exact 95% interval)":
            f"{g['passes']} of {g['runs']} runs, {rate[0]:.3f} [{rate[1]:.3f}, {rate[2]:.3f}]; "
            f"replanted as n¹·⁵: {g['null_passes']} of {g['runs']}, {null_rate[0]:.3f} [{null_rate[1]:.3f}, "
            f"{null_rate[2]:.3f}]",
        "low-τ slow-down rate b in log T ≈ b·J/τ + a":
            f"{slow_fit.slope:.2f} [{slow_fit.slope_low:.2f}, {slow_fit.slope_high:.2f}]",
        "incompatible toy: largest |measured ρ − closed form|": f"{inc_err:.1e} (tolerance {tol:.1e})",
        "held-out compatible rectangles above the tolerance": ", ".join(
            f"{r.fraction_above_tol:.1%} of {r.rectangles} ({name})" for name, r in held_out.iterrows()),
        f"MLM {mlm_name}: rectangles above its tolerance {tol_mlm:.1e}":
            f"{mlm_row.fraction_above_tol:.1%} [{mlm_row.fraction_ci_low:.1%}, {mlm_row.fraction_ci_high:.1%}]",
        "largest |measured − closed form| of the Ising influence": f"{influence_error:.1e}",
    }
