"""Page 04 (political basins): its figures, display tables, table assembly and prose.

Imported only by notebooks/04_political_basins.py. Nothing here decides a check: the page's rules, their
calibrations and the library calls that measure the chains stay in the notebook; these functions lay out what those
calls returned (tables with reader names, the figures, the sentences glued into the page and its result box).

`meta` is the chains' table (one row per chain: temperature, start "political" / "not political", start_id, seed,
start_score, time_in_region); `p_pol` and `texts` are (records, chains) arrays over its rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from glauber_mlm.measures import political, semantic
from glauber_mlm.pages.plots import (interactive_map, interval_errorbar, legend_outside, panels, show_table,
                                     temperature_axis)
from glauber_mlm.stats import km_median, km_survival

# tables show reader names, not variable names: τ for temperature, "95 % low/high" for interval ends, spaces
READER = {"temperature": "τ"}


def reader(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with reader names for its columns (τ, "95 % low/high", spaces for underscores)."""
    return df.rename(columns=lambda c: READER.get(c, c.replace("ci_low", "95 % low").replace("ci_high", "95 % high")
                                                  .replace("_", " ")))


def show(df: pd.DataFrame) -> None:
    """Display `df` as the page's tables are shown: reader names (`reader`), three decimals (`plots.show_table`)."""
    from IPython.display import display

    display(show_table(reader(df)))


def glue_design(run) -> None:
    """Glue the design's values for the prose ({glue:text}`starts` and so on): the page names values, not variables."""
    from myst_nb import glue

    for key in ("starts", "seeds", "steps", "record_every", "length"):
        glue(key, int(run[key]), display=False)
    glue("test_fraction", float(run["test_fraction"]), display=False)


def glue_md(name: str, text: str) -> None:
    """Glue `text` (Markdown) as `name` for the prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    glue(name, Markdown(text), display=False)


def say(name: str, text: str) -> None:
    """Print `text` and glue it (Markdown) as `name` for the prose."""
    print(text)
    glue_md(name, text)


def _colour(k: int, n: int):
    """The k-th of n colours of the viridis map (one per temperature)."""
    import matplotlib.pyplot as plt

    return plt.get_cmap("viridis")(k / max(1, n - 1))


# ---- what is held out ---------------------------------------------------------------------------------------------

def roles_summary(manifest: dict, roles: pd.DataFrame, shared: set) -> str:
    """The document counts per role, the documents shared or of the training role, and each set's sources."""
    sources = {name: sorted(set(g.source)) for name, g in roles.groupby("text_set")}
    return ("documents per role (data/MANIFEST.json): "
            + ", ".join(f"{role} {n}" for role, n in manifest["documents"].items())
            + f"\ndocuments shared by the starting passages and the labelled text: {len(shared)}; "
            f"documents of the MLM's training role among either: "
            f"{int(roles[roles.roles.str.contains('train')].documents.sum())}\n"
            + "sources of each set: " + "; ".join(f"{name}: {', '.join(s)}" for name, s in sources.items())
            + f"; MLM training text: {', '.join(s['name'] for s in manifest['sources'])}")


def accuracy_table(score, emb: np.ndarray, labels: np.ndarray, method: str, train_rows: int,
                   threshold: float) -> pd.DataFrame:
    """The score's held-out accuracy (`political.accuracy_table`), overall and per class, with its design: the method,
    the rows it was trained on and the threshold of the region."""
    accuracy = political.accuracy_table(score, emb, labels)
    accuracy.insert(0, "method", method)
    accuracy["train_rows"], accuracy["threshold"] = train_rows, threshold
    return accuracy


def roles_table(rows: list[dict], start_ids: list[str], labelled: list[dict]) -> pd.DataFrame:
    """The documents behind each set of text (every starting passage, the chosen starts, the score's labelled text),
    their sources and their roles in the split (`political.document_roles`)."""
    by_id = {r["id"]: r for r in rows}
    return political.document_roles({"all starting passages": rows, "chosen starts": [by_id[i] for i in start_ids],
                                     "labelled text (score)": labelled})


def base_rate_table(inside: np.ndarray, topic: np.ndarray, docs: np.ndarray, seed: int) -> pd.DataFrame:
    """The static base rate: the fraction of passages in the region, overall and by topic, resampling documents."""
    base = []
    for group, mask in (("all passages", np.ones_like(topic)), ("topic politics", topic), ("other topics", ~topic)):
        f, lo, hi = political.fraction_ci(inside[mask], docs[mask], seed=seed)
        base.append(dict(passages=group, n=int(mask.sum()), documents=len(set(docs[mask])), fraction=f,
                         ci_low=lo, ci_high=hi))
    return pd.DataFrame(base)


# ---- time in the region -------------------------------------------------------------------------------------------

def chain_layout(temps: list[float], kinds: dict[str, tuple], seeds: int) -> tuple[pd.DataFrame, list]:
    """The batch's chains, one row each (temperature, start type, start_id, seed), and their initial states."""
    meta, inits = [], []
    for tau in temps:
        for kind, (x0, ids) in kinds.items():
            for p in range(len(ids)):
                for s in range(seeds):
                    meta.append(dict(temperature=tau, start=kind, start_id=ids[p], seed=s))
                    inits.append(x0[p])
    return pd.DataFrame(meta), inits


def start_scores(meta: pd.DataFrame):
    """The starting states' political score per start type, as a display table."""
    return show_table(meta.groupby("start")["start_score"].describe().reset_index().astype({"count": int})
                      .rename(columns={"start": "starts"}))


def time_in_region_table(meta: pd.DataFrame, threshold: float, seed: int) -> pd.DataFrame:
    """Per temperature and start type: the mean time in the region, with its interval over starting passages."""
    tir = []
    for (tau, kind), g in meta.groupby(["temperature", "start"]):
        f, lo, hi = political.fraction_ci(g.time_in_region, g.start_id, seed=seed)
        tir.append(dict(temperature=tau, start=kind, chains=len(g), fraction=f, ci_low=lo, ci_high=hi,
                        start_inside=float((g.start_score >= threshold).mean()), starts=g.start_id.nunique()))
    return pd.DataFrame(tir)


def time_in_region_figure(time_in_region: pd.DataFrame, base_rate: pd.DataFrame, null_families: pd.DataFrame,
                          meta: pd.DataFrame, record_steps: np.ndarray, p_pol: np.ndarray, temps: list[float], run):
    """Left: time in the region against τ with the static base rates and, left of the lowest τ, the deciding
    references of each null family (open: persistence, filled: attraction); right: the mean score along the chains."""
    static = base_rate.set_index("passages")
    fig, axes = panels(2, height=5.0)
    ax = axes[0]
    for kind, g in time_in_region.groupby("start"):
        interval_errorbar(ax, g.temperature, g.fraction, g.ci_low, g.ci_high, marker="o", capsize=3,
                          label="political start" if kind == "political" else "non-political start (dynamic base rate)",
                          color="tab:red" if kind == "political" else "tab:blue")
    for group, color in (("all passages", "0.4"), ("other topics", "tab:cyan")):
        r = static.loc[group]
        ax.axhspan(r.ci_low, r.ci_high, color=color, alpha=0.2, lw=0)
        ax.axhline(r.fraction, color=color, lw=1, ls="--", label=f"static base rate: {group}")
    markers = dict(zip(political.NULL_FAMILIES, ("s", "^", "D")))
    offsets = {("persistence", f): 0.86 ** (k + 1) for k, f in enumerate(political.NULL_FAMILIES)}
    offsets |= {("attraction", f): 0.86 ** (k + 4) for k, f in enumerate(political.NULL_FAMILIES)}
    for r in null_families.itertuples():
        colour = "tab:red" if r.claim == "persistence" else "tab:blue"
        interval_errorbar(ax, [r.temperature * offsets[r.claim, r.family]], [r.fraction], [r.ci_low], [r.ci_high],
                          marker=markers[r.family], capsize=2, color=colour, ls="none",
                          mfc="white" if r.claim == "persistence" else colour,
                          label=f"{r.claim} null: {r.family} ({r.changed:.0%} of sites changed)")
    temperature_axis(ax, temps)
    ax.set(xlabel=r"temperature $\tau$", ylabel="share of time in the political region", ylim=(-0.03, 1.03),
           title=f"{run['steps']} steps, {run['starts']} starts × {run['seeds']} chains")
    legend_outside(ax, "below", ncol=1)
    ax = axes[1]
    for k, tau in enumerate(temps):
        for kind, style in (("political", "-"), ("not political", ":")):
            cols = ((meta.temperature == tau) & (meta.start == kind)).to_numpy()
            ax.plot(record_steps, p_pol[:, cols].mean(1), style, color=_colour(k, len(temps)),
                    label=rf"$\tau = {tau:g}$" if kind == "political" else None)
    ax.axhline(run["threshold"], color="k", lw=0.6)
    ax.set(xlabel="step", ylabel="mean P(political) over chains", ylim=(-0.03, 1.03),
           title="score along the chains\n(solid: political start, dotted: not)")
    legend_outside(ax, "below", ncol=3)
    return fig


def explore_basin(meta: pd.DataFrame, emb: np.ndarray, p_pol: np.ndarray, texts: np.ndarray,
                  record_steps: np.ndarray, temps: list[float]):
    """The states at the lowest and highest τ on the principal axes of their embeddings, coloured by the score."""
    R = emb.shape[0]
    cols = np.flatnonzero(meta.temperature.isin([min(temps), max(temps)]).to_numpy())
    xy = semantic.pca_2d(emb[:, cols].reshape(-1, emb.shape[-1])).reshape(R, len(cols), 2)
    explore = pd.DataFrame([dict(group=f"{meta.start[c]} start, τ = {meta.temperature[c]:g}", start=meta.start_id[c],
                                 step=int(record_steps[r]), **{"PC 1": xy[r, k, 0], "PC 2": xy[r, k, 1]},
                                 political=round(float(p_pol[r, c]), 3), text=texts[r, c])
                            for k, c in enumerate(cols) for r in range(R)])
    return interactive_map(explore, "PC 1", "PC 2", "group", ["start", "step", "political"],
                           "chain states on the principal axes of their embeddings (colour: P(political))",
                           color="political", text="text")


def base_rate_summary(base_rate: pd.DataFrame, time_in_region: pd.DataFrame, temps: list[float]) -> str:
    """The static base rates, and per τ the political starts against the dynamic base rate."""
    static, wide = base_rate.set_index("passages"), time_in_region.set_index(["temperature", "start"])
    a, o = static.loc["all passages"], static.loc["other topics"]
    lines = [f"static base rate: {a.fraction:.0%} [{a.ci_low:.0%}, {a.ci_high:.0%}] of all starting passages and "
             f"{o.fraction:.0%} [{o.ci_low:.0%}, {o.ci_high:.0%}] of the non-political ones lie in the region"]
    for tau in temps:
        p, q = wide.loc[(tau, "political")], wide.loc[(tau, "not political")]
        lines.append(f"τ = {tau:g}: political starts {p.fraction:.0%} [{p.ci_low:.0%}, {p.ci_high:.0%}] of the time in "
                     f"the region; non-political starts (dynamic base rate) {q.fraction:.0%} [{q.ci_low:.0%}, "
                     f"{q.ci_high:.0%}]; {'political above the base rate' if p.ci_low > q.ci_high else 'political below the base rate' if p.ci_high < q.ci_low else 'intervals overlap'}")
    return "\n".join(lines)


# ---- escape -------------------------------------------------------------------------------------------------------

def escape_table(escape_chains: pd.DataFrame, temps: list[float], length: int, steps: int, seed: int) -> pd.DataFrame:
    """Per τ: the escape fraction (interval over starts), the Kaplan–Meier median and the first-sweep share."""
    esc = []
    for tau in temps:
        g = escape_chains[escape_chains.temperature == tau]
        if g.empty:
            continue
        f, lo, hi = political.fraction_ci(g.escaped.astype(float), g.start_id, seed=seed)
        med, mlo, mhi = km_median(g.escape_step, g.escaped)
        early = (g.escaped & (g.escape_step <= length)).sum()
        esc.append(dict(temperature=tau, chains=len(g), escaped=int(g.escaped.sum()), escape_fraction=f, ci_low=lo,
                        ci_high=hi, median_escape_step=med, median_ci_low=mlo, median_ci_high=mhi, censor_step=steps,
                        first_sweep=early / g.escaped.sum() if g.escaped.any() else np.nan))
    return pd.DataFrame(esc, columns=[
        "temperature", "chains", "escaped", "escape_fraction", "ci_low", "ci_high", "median_escape_step",
        "median_ci_low", "median_ci_high", "censor_step", "first_sweep"])


def escape_figure(escape_chains: pd.DataFrame, temps: list[float], record_steps: np.ndarray):
    """Kaplan–Meier survival of the political starts in the region, per τ, with 95 % log-log bands."""
    fig, (ax,) = panels(1, width=8.5, height=4.0)
    for k, tau in enumerate(temps):
        g = escape_chains[escape_chains.temperature == tau]
        if g.empty:
            continue
        S, S_low, S_high = km_survival(g.escape_step, g.escaped, record_steps)
        color = _colour(k, len(temps))
        ax.fill_between(record_steps, S_low, S_high, step="post", color=color, alpha=0.15)
        ax.step(record_steps, S, where="post", color=color, label=rf"$\tau = {tau:g}$ ({len(g)} chains)")
    ax.set(xlabel="step", ylabel="share still in the\npolitical region", ylim=(-0.03, 1.03),
           title="Kaplan–Meier survival of the political start (95 % log-log)")
    legend_outside(ax, "right")
    return fig


# ---- the trend in τ -----------------------------------------------------------------------------------------------

def trend_contrasts(meta: pd.DataFrame, escape_chains: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every pair of temperatures compared start by start (`political.temperature_contrasts`): time in the region from
    political and from non-political starts, and escaping from political starts in the region."""
    return pd.concat([
        political.temperature_contrasts(meta[meta.start == "political"], "time_in_region", seed=seed
                                        ).assign(start="political"),
        political.temperature_contrasts(meta[meta.start == "not political"], "time_in_region", seed=seed
                                        ).assign(start="not political"),
        political.temperature_contrasts(escape_chains.assign(escaped=escape_chains.escaped.astype(float)), "escaped",
                                        seed=seed).assign(start="political"),
    ], ignore_index=True)


def trend_verdicts(contrasts: pd.DataFrame) -> dict[tuple[str, str], str]:
    """Print each quantity's verdict (`political.trend_verdict`) and its pairwise contrasts; return the verdicts."""
    verdicts = {}
    for (quantity, kind), g in contrasts.groupby(["quantity", "start"], sort=False):
        verdicts[quantity, kind] = political.trend_verdict(g)
        print(f"{quantity} ({kind} starts): {verdicts[quantity, kind]}")
        for r in g.itertuples():
            relation = "indistinguishable from" if r.reading == "indistinguishable" else f"{r.reading} than"
            print(f"  at τ = {r.tau_a:g} {relation} at τ = {r.tau_b:g}: {r.mean_a:.2f} vs {r.mean_b:.2f}, "
                  f"difference {r.difference:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}] over {r.starts} starts")
    return verdicts


def show_trend_test(page_table: pd.DataFrame):
    """Page's test per quantity: the numbers, then the prose columns in their own table (so the numbers stay narrow)."""
    from IPython.display import display

    prose_cols = ["calibrated_on", "to_decide"]
    display(show_table(reader(page_table.drop(columns=prose_cols))))
    return show_table(reader(page_table[["quantity", *prose_cols]])).set_properties(
        subset=["calibrated on", "to decide"], **{"min-width": "16em", "text-align": "left"})


def at_temperatures(fpr: pd.DataFrame, edit_rate: pd.Series) -> pd.DataFrame:
    """`political.corrupted_false_positives`'s rows, one per rate of `edit_rate`, with the temperature whose
    non-political chains edited at that rate in front."""
    fpr.insert(0, "temperature", edit_rate.index.to_numpy())
    return fpr


def null_family_table(null_texts: pd.DataFrame, temperature: float, seed: int) -> pd.DataFrame:
    """Per claim and null family (`political.null_family_calls`' rows): the share of its texts called political, with
    an interval resampling documents, the share of sites the family was asked to change (rate) and changed."""
    rows = []
    for (claim, family), g in null_texts.groupby(["claim", "family"], sort=False):
        f, lo, hi = political.fraction_ci(g.called, g.document, seed=seed)
        rows.append(dict(claim=claim, family=family, temperature=temperature, rate=float(g.rate.iloc[0]),
                         changed=float(g.changed.mean()), texts=len(g), documents=g.document.nunique(), fraction=f,
                         ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


# ---- memory of the start ------------------------------------------------------------------------------------------

def memory_table(memory: pd.DataFrame, meta: pd.DataFrame, temps: list[float], seed: int) -> pd.DataFrame:
    """Per τ: the share of sites changed from the own start and from the others, their gap, with intervals."""
    memory_rows = []
    for tau in temps:
        on = (meta.temperature == tau).to_numpy()
        m = memory[on]
        own, others, gap = (political.fraction_ci(v, m.unit, seed=seed) for v in (m.own, m.others, m.others - m.own))
        memory_rows.append(dict(temperature=tau, chains=int(on.sum()), own_start=own[0], own_low=own[1],
                                own_high=own[2], other_starts=others[0], other_low=others[1], other_high=others[2],
                                gap=gap[0], gap_low=gap[1], gap_high=gap[2], remembers=bool(gap[1] > 0)))
    return pd.DataFrame(memory_rows)


def memory_prose(remembers: list[float], temps: list[float]) -> str:
    """At which τ the chains still remember their start, in a sentence."""
    if len(remembers) == len(temps):
        return ("At every τ the chains' last states are nearer their own start than the other starts: time in the "
                "region measures memory of the start as much as a basin at every temperature of this run.")
    if not remembers:
        return "At no τ are the chains' last states nearer their own start than the other starts, at the level of tokens."
    return (f"The chains' last states are nearer their own start than the other starts at τ = "
            f"{', '.join(f'{t:g}' for t in remembers)} (time in the region there measures memory of the start as "
            f"much as a basin), and not at τ = {', '.join(f'{t:g}' for t in temps if t not in remembers)}.")


def memory_note(start_memory: pd.DataFrame, held: list[float]) -> str:
    """What would decide a check confounded by memory at the τ in `held` ('' when none)."""
    if not held:
        return ""
    rows = start_memory.set_index("temperature")
    return ("chains long enough to forget their start: at τ = {taus} the chains' last states are nearer their own "
            "start than the other starts (token gap {gaps}), so this comparison reads memory of the start as much "
            "as a basin").format(taus=", ".join(f"{t:g}" for t in held),
                                 gaps=", ".join(f"{rows.gap[t]:.2f} [{rows.gap_low[t]:.2f}, {rows.gap_high[t]:.2f}]"
                                                for t in held))


def memory_said(confound: str, rule_passes: bool | None) -> str:
    """What the rule alone says, when memory of the start keeps the check from deciding."""
    said = {True: "pass", False: "fail", None: "no answer"}[rule_passes]
    return f" (the rule alone says {said}; memory of the start confounds it)" if confound else ""


# ---- the level checks ---------------------------------------------------------------------------------------------

def level_table(designs: dict[str, dict]) -> pd.DataFrame:
    """One row per level check and design: its calibration's power, size, replicates and what it was calibrated on."""
    return pd.DataFrame(
        [dict(check=name, design=d, power=c.power, size=c.size, replicates=c.replicates, calibrated_on=c.calibrated_on)
         for name, ds in designs.items() for d, c in ds.items()])


REFERENCE = {
    ("persistence", "clean text"): "the score calls political in unedited other-topic text",
    ("persistence", "uniform edits"): "the score calls political in politics passages with uniform random tokens at "
                                      "their share of changed sites",
    ("persistence", "conditional edits"): "the score calls political in politics passages edited at their share of "
                                          "changed sites from the model's conditional",
    ("attraction", "clean text"): "the score calls political in unedited other-topic text",
    ("attraction", "uniform edits"): "the score calls political in other-topic text with uniform random tokens at "
                                     "their share of changed sites",
    ("attraction", "conditional edits"): "the score calls political in other-topic text edited at their share of "
                                         "changed sites from the model's conditional",
}
"""What each (claim, null family) compares the chains' time in the region with, in words."""


def level_calibrated_on(t_lo: float, seeds: int, effect: float, null_families: pd.DataFrame) -> dict:
    """What each level check's calibration was planted on, with `{starts}` for the design's starts per type: keys
    "start", (claim, family) and (claim, "every family")."""
    kind = {"persistence": "political", "attraction": "non-political"}
    chains = "{kind} starts' chains at τ = " + f"{t_lo:g} ({{{{starts}}}} starts × {seeds})"
    on = {"start": f"non-political starts' chains at τ = {t_lo:g} ({{starts}} starts × {seeds}), resampled: political "
                   f"starts {effect:g} higher / the same"}
    for r in null_families.itertuples():
        on[r.claim, r.family] = (chains.format(kind=kind[r.claim]) + f" recentred {effect:g} above / at the share "
                                 f"called political ({r.fraction:.0%}) of {r.texts} texts ({r.family}, "
                                 f"{r.changed:.0%} of sites changed; {r.documents} documents resampled)")
    for claim, g in null_families.groupby("claim", sort=False):
        top = g.loc[g.fraction.idxmax()]
        on[claim, "every family"] = (chains.format(kind=kind[claim]) + f" recentred {effect:g} above / at the strictest "
                                     f"family ({top.family}, {top.fraction:.0%}), every family's texts resampled")
    return on


def gap_said(gap: tuple, confound: str) -> str:
    """A level check's value: the difference with its interval, and what the rule alone says under memory."""
    return _gap(gap) + memory_said(confound, bool(gap[1] > 0))


def families_said(gaps: dict[str, tuple], every: bool | None, confound: str) -> str:
    """The combined check's value: the difference under each null family, and what the rule alone says."""
    return "; ".join(f"{family} {_gap(g)}" for family, g in gaps.items()) + memory_said(confound, every)


def disagree_note(claim: str) -> str:
    """Why the combined rule gives no answer: the families disagree."""
    return (f"the null families disagree on {claim} (the interval lies above 0 under some and not others), so the "
            "outcome depends on which null is chosen; the per-family checks below say which")


def reversal_prose(contrasts: pd.DataFrame, escape_times: pd.DataFrame, verdicts: dict) -> str:
    """Whether escape reverses (more escapes at a lower τ), why near τ = 0 it can, and the two verdicts."""
    esc_t = escape_times.set_index("temperature")
    reversed_pairs = contrasts[(contrasts.quantity == "escaped") & (contrasts.reading == "higher")]
    unresolved = contrasts[(contrasts.quantity == "escaped") & (contrasts.reading == "indistinguishable")
                           & (contrasts.difference > 0)]
    if not reversed_pairs.empty:
        r = reversed_pairs.iloc[0]
        lo_t, hi_t = esc_t.loc[r.tau_a], esc_t.loc[r.tau_b]
        said = (f"Reversal: at τ = {r.tau_a:g} more political starts escape ({lo_t.escape_fraction:.0%} "
                f"[{lo_t.ci_low:.0%}, {lo_t.ci_high:.0%}]) than at τ = {r.tau_b:g} ({hi_t.escape_fraction:.0%} "
                f"[{hi_t.ci_low:.0%}, {hi_t.ci_high:.0%}]), a start-by-start difference of {r.difference:+.2f} "
                f"[{r.ci_low:+.2f}, {r.ci_high:+.2f}]. Of the escapes at τ = {r.tau_a:g}, {lo_t.first_sweep:.0%} "
                f"happen within the first sweep (at τ = {r.tau_b:g}: {hi_t.first_sweep:.0%}). Near τ = 0 Glauber "
                "dynamics moves each site to its most probable token, so a chain first descends to the nearest local "
                "mode of the model, which can lie on either side of the score's boundary; an escape counted from the "
                "start then measures where that descent ends, not the barrier the theorem is about.")
    elif not unresolved.empty:
        r = unresolved.iloc[0]
        said = (f"No resolved reversal: the escape fraction at τ = {r.tau_a:g} is above that at τ = {r.tau_b:g} "
                f"({r.mean_a:.0%} vs {r.mean_b:.0%}), but the start-by-start difference {r.difference:+.2f} "
                f"[{r.ci_low:+.2f}, {r.ci_high:+.2f}] includes 0: these starts cannot tell the two apart.")
    else:
        said = "No reversal: at no pair of temperatures do more political starts escape at the lower one."
    tir_pol = verdicts["time_in_region", "political"]
    return (said + "\n" + f"Time in the region from political starts: {tir_pol}; escaping: "
            f"{verdicts['escaped', 'political']}. "
            + ("The data contradict a monotone fall of the basin's hold with τ."
               if "not monotone" in (tir_pol, verdicts["escaped", "political"]) else
               "Within the intervals, nothing here contradicts a hold that weakens as τ rises."))


def end_states(meta: pd.DataFrame, pol_ids: list[str], texts: np.ndarray, p_pol: np.ndarray,
               record_steps: np.ndarray, temps: list[float]) -> str:
    """The most political start's text, and its chain's last state and score at each τ."""
    example = pol_ids[int(np.argmax(meta[meta.start == "political"].groupby("start_id", sort=False).start_score
                                    .first().reindex(pol_ids).to_numpy()))]
    lines = [f"start {example}: {str(texts[0, int(np.flatnonzero((meta.start_id == example).to_numpy())[0])])!r}"]
    for tau in temps:
        col = int(np.flatnonzero(((meta.start_id == example) & (meta.temperature == tau)).to_numpy())[0])
        lines.append(f"τ = {tau:g}, step {record_steps[-1]} (P(political) {p_pol[-1, col]:.2f}): {str(texts[-1, col])!r}")
    return "\n".join(lines)


# ---- the findings and the result box ------------------------------------------------------------------------------

def page_words(r: dict, direction: str) -> str:
    """What Page's test computed says of a quantity: the direction when p < 0.05, else that it is not resolved."""
    if np.isnan(r["p_value"]):
        return f"cannot be tested on {r['levels']} temperature(s)"
    said = direction if r["p_value"] < 0.05 else "shows no trend with τ that the test resolves"
    return f"{said} (Page's test over {r['units']} starts, p = {r['p_value']:.2g})"


def _ci(r, digits: str = ".0%") -> str:
    """A row's fraction with its interval, as "f [low, high]"."""
    return f"{r.fraction:{digits}} [{r.ci_low:{digits}}, {r.ci_high:{digits}}]"


def _gap(g: tuple) -> str:
    """A difference with its interval, signed: "+d [+low, +high]"."""
    return f"{g[0]:+.2f} [{g[1]:+.2f}, {g[2]:+.2f}]"


def tir_finding(time_in_region: pd.DataFrame, t_lo: float, start_gap: tuple, gaps: dict, null_families: pd.DataFrame,
                tir_words: str, memory_text: str) -> str:
    """The finding under the time-in-region figure: the start gap, the trend, each null family and the memory."""
    wide = time_in_region.set_index(["temperature", "start"])
    pol_lo, non_lo = wide.loc[(t_lo, "political")], wide.loc[(t_lo, "not political")]
    political_tir = time_in_region[time_in_region.start == "political"]
    nulls = null_families.set_index(["claim", "family"])

    def against(claim: str) -> str:
        return "; ".join(f"{family} {_ci(nulls.loc[(claim, family)])} (difference {_gap(gaps[claim, family])})"
                         for family in political.NULL_FAMILIES if (claim, family) in gaps)

    return (f"At τ = {t_lo:g}, chains from political starts spend {_ci(pol_lo)} of their recorded time in the political "
            f"region and chains from non-political starts {_ci(non_lo)} (difference {_gap(start_gap)}). From political "
            f"starts the time in the region {tir_words}: "
            + ", ".join(f"{r.fraction:.0%} at τ = {r.temperature:g}" for r in political_tir.itertuples())
            + f". The persistence references (open markers, left of τ = {t_lo:g}): {against('persistence')}. The "
            f"attraction references (filled markers): {against('attraction')}. {memory_text}")


def escape_finding(escape_times: pd.DataFrame, steps: int, escape_words: str) -> str:
    """The finding under the escape figure: how many chains escaped at each τ, and the trend."""
    return ("Of the political starts that begin in the region, "
            + ", ".join(f"{r.escaped} of {r.chains} chains escaped at τ = {r.temperature:g}"
                        for r in escape_times.itertuples())
            + f" within {steps} steps; escape {escape_words}.")


def key_numbers(time_in_region: pd.DataFrame, base_rate: pd.DataFrame, t_lo: float, null_families: pd.DataFrame,
                gaps: dict, combined: dict, per_family: dict, tir_words: str, escape_words: str,
                remembers: list[float], accuracy: pd.DataFrame) -> dict[str, str]:
    """The result box's key numbers: each claim's outcome under each null family (`per_family`: the checks by
    (claim, family)) and under every family at once (`combined`: the checks by claim)."""
    wide = time_in_region.set_index(["temperature", "start"])
    pol_lo, non_lo = wide.loc[(t_lo, "political")], wide.loc[(t_lo, "not political")]
    o = base_rate.set_index("passages").loc["other topics"]
    nulls = null_families.set_index(["claim", "family"])
    numbers = {
        f"time in the region at τ = {t_lo:g}, political vs non-political starts": f"{_ci(pol_lo)} vs {_ci(non_lo)}",
        "static base rate of other topics": _ci(o),
    }
    for claim in combined:
        said = [f"{family}: {_ci(nulls.loc[(claim, family)])} called political, difference "
                f"{_gap(gaps[claim, family])}, {per_family[claim, family].outcome}"
                for c, family in gaps if c == claim]
        numbers[f"{claim} at τ = {t_lo:g} under each null family (reference; chains − reference; outcome)"] = (
            "; ".join(said) + f" → under every family: {combined[claim].outcome}")
    numbers |= {
        "time in the region from political starts, against τ": tir_words,
        "escape from the region, against τ": escape_words,
        "chains nearer their own start than the other starts (tokens) at τ":
            ", ".join(f"{t:g}" for t in remembers) or "none",
        "political score, held-out accuracy": "; ".join(
            f"{r.subset} {r.accuracy:.0%} [{r.ci_low:.0%}, {r.ci_high:.0%}]" for r in accuracy.itertuples()),
    }
    return numbers


def not_shown(remembers: list[float], temps: list[float]) -> str:
    """What the page does not show: that the chains forgot their start (tokens are necessary, not sufficient)."""
    if len(remembers) == len(temps):
        return ("that the chains forgot their start: at every τ their last states are nearer their own start than "
                "the others, so time in the region measures memory of the start as much as a basin")
    return ("that a chain which forgot its start's tokens forgot its topic: token distance is necessary, not "
            "sufficient" + (f"; at τ = {', '.join(f'{t:g}' for t in remembers)} the chains still remember their "
                            "start" if remembers else ""))
