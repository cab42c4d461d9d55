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
# # Has my chain mixed? Diagnostics and an MH-corrected sampler
#
# **Claim.** There are two ways to ask whether a Glauber chain on an MLM has mixed, and they should agree.
# The practitioner's way runs several chains from dispersed starts (different real passages) and compares
# them through scalar summaries of the state with the rank-normalised split R̂ of Vehtari et al. (2021), the
# default of ArviZ and Stan: R̂ near 1 says the chains are indistinguishable, R̂ above a threshold says they
# still remember where they began. The theorist's way couples two chains and reads the distance to
# stationarity off the coupling time T, d(t) ≤ P(T > t) (equation {eq}`eq-coupling-bound` of the theory
# page, notebook 02). This notebook runs both on one model, one short length and a grid of temperatures that
# spans slow (low τ) and fast (high τ) mixing, and asks whether R̂ flags the temperatures where coupled chains
# fail to meet and clears those where they meet early.
#
# It then corrects Glauber by a Metropolis–Hastings step towards a target that can be written down and asks what
# the correction costs (below the result box).

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-06
# ```{glue:md} result
# :format: myst
# ```
# :::

# %% [markdown]
# **The MH-corrected sampler.** It replaces Glauber by a Metropolis–Hastings chain (`gm.metropolis`) that keeps the MLM conditionals as
# its proposal and corrects them towards a target that can be written down, π(x) ∝ exp(PLL(x)/τ) with the
# pseudo-log-likelihood $\mathrm{PLL}(x) = \sum_i \log q_i^1(x_i \mid x_{-i})$. For a one-site proposal at
# site i the acceptance ratio reduces to
#
# $$\log \alpha = \frac{1}{\tau} \sum_{j \ne i} \Delta_j,$$
#
# $$\Delta_j = \log \frac{q_j^1(x_j \mid x'_{-j})}{q_j^1(x_j \mid x_{-j})}:$$
#
# the proposal is rejected when the new token makes the other sites' own tokens less likely, a quantity that
# vanishes for a compatible model's joint and shrinks like 1/τ. What does the correction cost (rejections,
# forward rows), and does it move the slow-to-fast boundary of the coupling times?
#
# **The rule, fixed before the run.** Chains run {glue:text}`steps` steps; the coupling budget is the same, so
# both views judge the same horizon. R̂ reads the second half of each chain (the first half is warm-up). A
# temperature is *slow* when more than half of its coupled pairs have not met by the budget, *fast* when every
# pair met within the first half of it, and *between* otherwise (`gm.coupling_regime`). R̂ *flags* a
# temperature when the R̂ of the PLL energy reaches the threshold (the Hamming summary is shown too, but once every
# token has been replaced it is stuck and its R̂ says nothing). The two views **agree** at a
# threshold when R̂ flags every slow temperature and no fast one. The threshold is ArviZ's (Vehtari et al.
# recommend using a sample only when R̂ < 1.01); the laxer 1.05 is shown beside it. Either can fail: R̂ can
# miss chains that coupling calls slow (coupling only bounds d(t) from above, so it can also be the coupling
# that is slow), and R̂ can flag chains that have forgotten their starts when the run is too short to estimate
# their means precisely. The MH claim is fixed too: its acceptance rate among proposals that change a token is
# higher at the highest temperature of the grid than at the lowest (log α shrinks like 1/τ), chain by chain, with
# the 95 % interval of the mean paired difference above 0.

# %% tags=["parameters"]
profile = "cpu"        # smoke (tests, < 1 min) | cpu (embedded model, offline) | paper (GPU, hub models)
dtype = None           # None: bfloat16 where the device runs it natively, else float32; or "float32" | "bfloat16"
scale = 1.0            # < 1: a dry run, the profile's BUDGETS × scale (rounded up); its pages say so
output_dir = None
# every other parameter is a key of PROFILES below, set with `-p KEY VALUE` (None: the profile's value):
#   model: None: the profile's model; or a hub name / local folder
#   device: None: cuda when present, else cpu
#   seed
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (needs the internet)
#   length: tokens per chain (one short length)
#   temperatures: from slow (low τ) to fast (high τ) mixing
#   chains: independent Glauber chains per temperature, each from its own real passage
#   steps: steps of every chain, and the coupling budget: both views judge the same horizon
#   pll_every: the PLL energy is read every this many steps (n forward rows per chain and reading)
#   pairs: coupled Glauber pairs per temperature, two independent passages each
#   mh_chains: MH chains per temperature (the first mh_chains of the Glauber starts)
#   mh_pairs: coupled MH pairs per temperature (the first mh_pairs of the Glauber pairs)
#   mh_lengths: lengths of the MH acceptance study (`length` among them): acceptance against τ and n

# %%
import numpy as np
import pandas as pd
import torch
from myst_nb import glue

import glauber_mlm as gm
from glauber_mlm.pages.checks import Check, deciding_design, smallest_decisive
from glauber_mlm.diagnostics import RHAT_MAX, paired_difference
from glauber_mlm.pages.run import Run
from glauber_mlm.models.passages import load_passages, passage_pairs, sample_passages
from glauber_mlm.pages.planted.mixing import ar1_phi_for_ess, paired_difference_calibration, rhat_agreement_calibration
from glauber_mlm.pages.report import mixing_diagnostics as report
from glauber_mlm.stats import bootstrap_ci, km_median, proportion_ci, slow_to_fast_boundary

THRESHOLDS = (RHAT_MAX, 1.05)  # ArviZ's R̂ threshold (Vehtari et al. 2021) and a laxer one, for the sensitivity

# cpu: 4,800 steps, the run length at which the R̂ rule at 1.01 decides by its own calibration (302 draws per chain at
# pll_every = 8; the build at 2,400 steps named it); τ = 0.75 gives the grid a slow cell, which that build lacked (its
# τ = 1 pairs met by step 4,800 three times in four); about a quarter of an hour on a 2-core CPU (the MH pairs cost
# n rows per proposal that changes a token; the execution page gives each build's time)
PROFILES = {
    "smoke": dict(model=None, device=None, seed=0, passages="embedded", length=4, temperatures=[0.25, 8.0], chains=4,
                  steps=40, pll_every=4, pairs=2, mh_chains=2, mh_pairs=2, mh_lengths=[4, 6]),
    "cpu":   dict(model=None, device=None, seed=0, passages="embedded", length=8, temperatures=[0.75, 1.0, 1.5, 3.0],
                  chains=8, steps=4800, pll_every=8, pairs=8, mh_chains=4, mh_pairs=4, mh_lengths=[4, 8, 16]),
    "paper": dict(model="bert-base-uncased", device=None, seed=0, passages="ms_marco", length=16,
                  temperatures=[0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0], chains=16, steps=10_000, pll_every=16, pairs=40,
                  mh_chains=16, mh_pairs=20, mh_lengths=[8, 16, 32]),
}
# what `scale` (a dry run) multiplies, each with its least value: 2 chains or pairs (R̂ and the intervals need two),
# 128 steps (R̂ needs 8 readings at the paper's pll_every = 16); temperatures, lengths and thresholds are never scaled
BUDGETS = dict(chains=2, steps=128, pairs=2, mh_chains=2, mh_pairs=2)
run = Run("06_has_my_chain_mixed", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
          overrides=globals())
mlm = run.load_mlm(run["model"])  # clear error here for an unknown model
taus = sorted(run.temperatures("temperatures", 2))
n = run.integer("length", 2, mlm.max_length)
budget = run.integer("steps", 8)
run.integer("pll_every", 1, budget // 8)  # ≥ 8 PLL readings per chain, so ≥ 4 after the warm-up half
C, P = run.integer("chains", 2), run.integer("pairs", 1)
M, Q = run.integer("mh_chains", 2, C), run.integer("mh_pairs", 1, P)
mh_lengths = run["mh_lengths"]
if (not isinstance(mh_lengths, (list, tuple)) or n not in mh_lengths
        or any(int(L) != L or not 2 <= L <= mlm.max_length for L in mh_lengths)):
    raise ValueError(f"mh_lengths must be whole numbers of tokens in [2, {mlm.max_length}] that include length = {n} "
                     f"(the MH chains at length n are the ones compared with the coupled pairs), got {mh_lengths!r}.")
mh_lengths = sorted({int(L) for L in mh_lengths})
texts = load_passages(run["passages"])
# dispersed starts: one real passage per chain, from distinct documents; the same passages at every temperature
starts, _ = sample_passages(mlm, texts, n, C, seed=run.seed_for("starts", n=n))
x0, y0, _ = passage_pairs(mlm, texts, n, P, seed=run.seed_for("pairs", n=n))
print(f"R̂ thresholds: {', '.join(f'{h:g}' for h in THRESHOLDS)}")
run.show()

# %% tags=["plan"]
# the work this run does, as `glauber-mlm plan` counts it: the plan reads this cell, so both count by one rule
import math

from glauber_mlm.book.plan import Work, model_shape, show_plan


def planned_work(p: dict) -> list[Work]:
    """06_has_my_chain_mixed, with T temperatures, n = length and S = steps: the chains `gm.glauber(...)`
    (T · chains, S steps); `gm.pseudo_log_likelihood` on every pll_every-th state (n rows per chain and reading, in
    calls of `pll_chunk` rows); `gm.coupling_times` (≤ 2 · T · pairs · S); the MH chains `gm.metropolis(...)` (one
    proposal row per chain-step, ≤ n PLL rows for the start and for each proposal that changes a token), at n and at
    each other length L of mh_lengths (L rows per PLL there); and `gm.mh_coupling_times` (as many for 2 · T · mh_pairs
    chains). Upper bounds: pairs that meet leave the batch,
    and only proposals that change a token cost a PLL."""
    from glauber_mlm.samplers.metropolis import PLL_CHUNK_BYTES

    m, n, S, T = p["model"], p["length"], p["steps"], len(p["temperatures"])
    chains, mh_chains, mh_paired_chains = T * p["chains"], T * p["mh_chains"], 2 * T * p["mh_pairs"]
    readings = chains * (S // p["pll_every"] + 1) * n
    chunk = max(1, PLL_CHUNK_BYTES // (8 * model_shape(m).vocab))  # metropolis.pll_chunk, without loading the model

    def mh(part: str, B: int, L: int = n) -> Work:
        """B MH chains of L tokens: a proposal row per chain-step, and a PLL of the start and of every changed proposal."""
        pll_calls = math.ceil(B * L / chunk)
        return Work(part, m, L, B * (S + L * (S + 1)), S + (S + 1) * pll_calls, upper=True)

    return [Work("Glauber chains", m, n, chains * S, S),
            Work("PLL energy of the chains' states", m, n, readings, math.ceil(readings / chunk)),
            Work("coupled Glauber pairs", m, n, 2 * T * p["pairs"] * S, S, upper=True),
            mh("MH chains (proposals and PLL)", mh_chains),
            *(mh(f"MH chains at n = {L} (acceptance against n)", mh_chains, L) for L in sorted(set(p["mh_lengths"]))
              if L != n),
            mh("coupled MH pairs (proposals and PLL)", mh_paired_chains)]


show_plan(planned_work(run.params))

# %% tags=["hide-input"]
# the design's values, for the prose ({glue:text}`steps` and so on): the page names values, not variables
report.glue_design(mh_lengths, steps=budget, chains=C, length=n, pll_every=run["pll_every"], pairs=P, mh_chains=M,
                   mh_pairs=Q)

# %% [markdown]
# ## 1. R̂ from dispersed starts
#
# For each temperature, {glue:text}`chains` Glauber chains start from different real passages of
# {glue:text}`length` tokens and run {glue:text}`steps` steps, all temperatures in one batch. Two scalar summaries of each chain's state are compared across
# chains (`gm.convergence`):
#
# - the **PLL energy**, PLL(x) of the state, read every {glue:text}`pll_every` steps (`gm.pseudo_log_likelihood`, n
#   forward rows per reading): how typical the text is to the model, and the log-target of the MH chain below;
# - the **Hamming distance to the start**, the number of sites whose token differs from the chain's own
#   starting passage (`gm.hamming_to_start`), at every step. Once every token has been replaced it sits at n
#   and stops moving (status *stuck*): its R̂ is then undefined or meaningless and carries no evidence either
#   way; before that it says how far each chain has travelled from its passage, and a chain that keeps some of
#   its start's tokens for good stands out.

# %%
T = len(taus)
chain_taus = torch.tensor(taus).repeat_interleave(C)  # chain k·C + c: temperature taus[k], start c
traj = gm.glauber(mlm, starts.repeat(T, 1), budget, temperature=chain_taus,
                  seed=run["seed"] * 1_000_000 + torch.arange(T * C), progress=True,
                  checkpoint=run.checkpoint("chains"))
read_at = traj.steps[::run["pll_every"]]
pll = gm.pseudo_log_likelihood(mlm, traj.states[::run["pll_every"]].flatten(0, 1)).view(len(read_at), T * C)
hamming = gm.hamming_to_start(traj)  # (chain, step)
summaries = {"PLL energy": pll.T.numpy(), "Hamming to start": hamming}
rows = []
for k, tau in enumerate(taus):
    own = slice(k * C, (k + 1) * C)
    for name, values in summaries.items():
        row = gm.convergence({name: values[own]}, discard=values.shape[1] // 2).iloc[0]
        rows.append(dict(temperature=tau, summary=name, **row.drop("stuck_chains")))
rhat = run.save_table(pd.DataFrame(rows), "rhat")
report.rhat_table(rhat)

# %%
fig = report.pll_traces(read_at, pll, taus, C, n, budget)
run.save_figure(fig, "pll_traces")

# %% [markdown]
# :::{glue:figure} fig:pll_traces
# :name: fig-06-pll-traces
# :alt: One panel per temperature with the pseudo-log-likelihood of each chain's state against the step; the grey first half is the warm-up that R̂ does not read.
#
# **The PLL energy of every chain, per temperature.** Each line is one chain started from its own real passage. Chains that have mixed wander over one common band; chains that remember their start keep their own levels.
# :::

# %% [markdown]
# ## 2. Coupling times on the same grid
#
# For the other view, {glue:text}`pairs` pairs of chains per temperature start from two independent passages each and
# run coupled Glauber (`gm.coupling_times`, the same site and maximally coupled tokens) until they meet or
# the budget ({glue:text}`steps` steps) passes. Per temperature: P(T > budget) with its Wilson interval (pairs are
# independent), the Kaplan–Meier median of T with its interval (censored pairs count as censored, not as
# observed times) and the regime of the rule above.

# %%
pair_taus = torch.tensor(taus).repeat_interleave(P)
glauber_pairs = gm.coupling_times(mlm, x0.repeat(T, 1), y0.repeat(T, 1), budget, temperature=pair_taus,
                                  seed=run["seed"] * 1_000_000 + 500_000 + torch.arange(T * P), progress=True,
                                  speculate=1,  # one site per forward, like MH: the rows below count the algorithm
                                  checkpoint=run.checkpoint("coupling"))
records = [dict(sampler="Glauber", temperature=float(tau), pair=i % P, time=int(t), met=bool(m), budget=budget)
           for i, (tau, t, m) in enumerate(zip(pair_taus.tolist(), glauber_pairs.times.tolist(),
                                               glauber_pairs.met.tolist()))]


def coupling_summary(g: pd.DataFrame) -> pd.Series:
    """One (sampler, temperature) cell: P(T > budget) with its Wilson interval, the KM median, the regime."""
    late, late_low, late_high = proportion_ci(int((~g.met).sum()), len(g))
    median, median_low, median_high = km_median(g.time, g.met)
    return pd.Series(dict(pairs=len(g), p_late=late, p_late_low=late_low, p_late_high=late_high, median_time=median,
                          median_low=median_low, median_high=median_high,
                          regime=gm.coupling_regime(g.time, g.met, budget)))


glauber_cells = (pd.DataFrame(records).groupby("temperature").apply(coupling_summary, include_groups=False)
                 .reset_index())
report.coupling_table(glauber_cells)

# %% [markdown]
# ## 3. Do the two views agree?
#
# One row per temperature: R̂ of the PLL energy (the Hamming distance is left out: once every token has been
# replaced it is stuck, and its R̂ carries no evidence; an infinite R̂, chains frozen at different values, counts
# as flagged), whether it flags at each threshold, the coupling regime, and whether the two views agree there
# (blank between the regimes, where the rule makes no claim).
#
# **Calibration.** The rule "R̂ ≥ h on the slow cells, < h on the fast ones" runs at this design (the chains,
# and the draws per chain that R̂ reads) on planted AR(1) chains whose autocorrelation gives the fast cells'
# measured bulk ESS, with as many slow and fast cells as this page has: a planted truth, where each slow cell's
# chains each sit 1 sd from the others (they remember their start), and a planted null, where every cell is
# stationary (`planted.rhat_agreement_calibration`).
# The same calibration at 2, 4 and 8 times the draws (until one decides) says how long the chains must run for the
# rule to decide.
#
# An exact truth on the model itself exists only for a smaller chain: [notebook 08](08_exact_answers.ipynb)
# computes the exact distance to stationarity d(t) of the model's chain restricted to two candidates per site. The
# rule is not calibrated there in this build: R̂ here reads full-vocabulary chains through their pseudo-log-
# likelihood, and the restricted chain's states and summary are not these, so the planted AR(1)
# chains above, matched to this page's measured autocorrelation, remain its calibration.

# %%
pll_rhat = rhat[rhat.summary == "PLL energy"]
views = glauber_cells.merge(pll_rhat[["temperature", "rhat"]].rename(columns={"rhat": "pll_rhat"}))
for h in THRESHOLDS:
    flagged = views.pll_rhat >= h
    views[f"flagged_at_{h:g}"] = flagged
    views[f"agree_at_{h:g}"] = np.where(views.regime == "between", None, flagged == (views.regime == "slow"))
views = run.save_table(views, "rhat_and_coupling")
agreement = {h: bool(views[f"agree_at_{h:g}"].dropna().all()) if {"slow", "fast"} <= set(views.regime) else None
             for h in THRESHOLDS}
fast_ess = pll_rhat[pll_rhat.temperature.isin(views.temperature[views.regime == "fast"])].ess_bulk
draws = int(pll_rhat.draws.iloc[0])
phi = ar1_phi_for_ess(fast_ess.min() if len(fast_ess) else pll_rhat.ess_bulk.min(), C, draws)
# the page's own design: as many slow and fast cells as the coupling regimes name (at least one of each)
n_slow, n_fast = max(1, int((views.regime == "slow").sum())), max(1, int((views.regime == "fast").sum()))
designs, design_steps = {h: {} for h in THRESHOLDS}, {}
for h in THRESHOLDS:  # this design, then 2, 4 and 8 times the draws until one decides either way
    for k in (1, 2, 4, 8):
        cal_k = rhat_agreement_calibration(C, k * draws, phi, h, fast_cells=n_fast, slow_cells=n_slow, seed=run["seed"])
        designs[h][f"{k * draws} draws per chain"] = cal_k
        design_steps[f"{k * draws} draws per chain"] = {"steps": k * budget}  # draws per chain grow with the steps
        if cal_k.decisive:
            break
run.save_table(pd.DataFrame([dict(threshold=h, design=d, power=c.power, size=c.size, replicates=c.replicates,
                                  calibrated_on=c.calibrated_on) for h, ds in designs.items() for d, c in ds.items()]),
               "calibration")
for h, ds in designs.items():
    print(f"threshold {h:g}: at this design {ds[f'{draws} draws per chain']}; {smallest_decisive(ds)}")
report.views_table(views, THRESHOLDS)

# %%
fig = report.rhat_and_coupling(rhat, views, THRESHOLDS, taus, C, P, budget)
run.save_figure(fig, "rhat_and_coupling")
glue("views_readings", report.views_readings(views, rhat, pll_rhat, THRESHOLDS, agreement, C), display=False)
glue("views_finding", report.views_finding(agreement, designs, draws, pll_rhat), display=False)

# %% [markdown]
# :::{glue:figure} fig:rhat_and_coupling
# :name: fig-06-rhat-and-coupling
# :alt: Two panels against temperature: left, R̂ of the PLL energy and of the Hamming distance to the start with the thresholds as lines; right, the median coupling step with its interval and the share of pairs that did not meet.
#
# **R̂ beside coupling times.** Left: R̂ of each summary per temperature (dashed and dotted lines: the two thresholds). Right: the Kaplan–Meier median coupling step of the coupled Glauber pairs with its interval (an arrow: the median lies beyond the budget), labelled with P(T > budget) and the regime.
# :::

# %% [markdown]
# **What {numref}`fig-06-rhat-and-coupling` shows.** {glue:md}`views_finding` Per temperature, from the tables
# above:
#
# ```{glue:md} views_readings
# :format: myst
# ```
#
# The two views answer different questions, and that is where they can part. Coupling asks whether two chains
# started from different passages have forgotten them. R̂ compares the second halves of chains from different
# passages, so it asks that too, and also whether those halves are long enough to pin down the mean of each
# summary. For chains that *are* stationary, split R̂ is about $\sqrt{1 + 1/N_{\mathrm{eff}}}$, with
# $N_{\mathrm{eff}}$ the effective sample size of one half-chain: R̂ < 1.01 needs about fifty effective draws
# per half-chain (the reason Vehtari et al. pair the threshold with a minimum bulk ESS, in the table of section 1), the
# laxer threshold about ten. At a fast temperature a short run can therefore pass coupling's test and fail R̂'s
# at ArviZ's threshold while passing it at the laxer one; the bulk ESS above says how short the run is. At a
# slow temperature a flag is what both views expect, whichever of the two reasons raised it
# ({numref}`fig-06-pll-traces` shows the PLL energy of every chain).

# %% [markdown]
# ## 4. Glauber against Metropolis–Hastings with a PLL target
#
# The MH chain proposes exactly Glauber's move (one site, a token from $q_i^\tau$) and accepts it with
# probability min(1, α), α from the PLL target above: its stationary law is π ∝ exp(PLL/τ), which Glauber's is
# not. Per temperature, {glue:text}`mh_chains` MH chains from the first of the same starts (`gm.metropolis`) give,
# and the same number of chains from passages of each other length of the study (n = {glue:md}`mh_lengths`) give again, so the correction
# is read against τ and n:
#
# - the **share of proposals that change a token** (a proposal equal to the current state needs no test);
# - the **acceptance rate of the test** among those, per chain (`gm.acceptance_counts`), averaged over chains
#   with a bootstrap interval over chains (steps of one chain are correlated, chains are independent; with a
#   handful of chains the interval is rough);
# - the **forward rows per step**: one conditional for the proposal, plus n rows for the PLL of every
#   proposal that changes a token (computed before the decision, so rejected ones cost as much).
#
# Coupled MH (`gm.mh_coupling_times`, at length n) runs the first {glue:text}`mh_pairs` of the Glauber pairs with the same budget:
# both chains share the site, draw their proposals from the maximal coupling and share the acceptance uniform.

# %%
rows, mh_runs, chain_rates = [], {}, []
for L in mh_lengths:  # length n: the first M Glauber starts; other lengths: M passages of their own
    mh_starts = starts[:M] if L == n else sample_passages(mlm, texts, L, M, seed=run.seed_for("starts", n=L))[0]
    mh_runs[L] = gm.metropolis(mlm, mh_starts.repeat(T, 1), budget, temperature=torch.tensor(taus).repeat_interleave(M),
                               seed=run["seed"] * 1_000_000 + 600_000 + 1_000 * (L - n) + torch.arange(T * M),
                               energy="pll", progress=True)
    accepted, tested = gm.acceptance_counts(mh_runs[L])
    for k, tau in enumerate(taus):
        own = slice(k * M, (k + 1) * M)
        rate, low, high = bootstrap_ci((accepted[own] / tested[own]).numpy(), seed=run["seed"])
        share = float(tested[own].sum()) / (M * budget)
        rows.append(dict(length=L, temperature=tau, chains=M, steps=budget, changing_share=share, acceptance=rate,
                         acceptance_low=low, acceptance_high=high, rows_per_step=1 + L * share))
        chain_rates += [dict(length=L, temperature=tau, start=c, acceptance=a / t if t else np.nan)  # per chain
                        for c, (a, t) in enumerate(zip(accepted[own].tolist(), tested[own].tolist()))]
mh = mh_runs[n]
acceptance = run.save_table(pd.DataFrame(rows), "mh_acceptance")

mh_pair_taus = torch.tensor(taus).repeat_interleave(Q)
mh_pairs_run = gm.mh_coupling_times(mlm, x0[:Q].repeat(T, 1), y0[:Q].repeat(T, 1), budget,
                                    temperature=mh_pair_taus, seed=run["seed"] * 1_000_000 + 700_000 +
                                    torch.arange(T * Q), energy="pll", progress=True)
records += [dict(sampler="MH (PLL target)", temperature=float(tau), pair=i % Q, time=int(t), met=bool(m),
                 budget=budget)
            for i, (tau, t, m) in enumerate(zip(mh_pair_taus.tolist(), mh_pairs_run.times.tolist(),
                                                mh_pairs_run.met.tolist()))]
coupling = run.save_table(pd.DataFrame(records), "coupling_times")
cells = run.save_table(coupling.groupby(["sampler", "temperature"]).apply(coupling_summary, include_groups=False)
                       .reset_index(), "coupling_by_sampler")
boundary = {s: slow_to_fast_boundary(g.temperature, g.median_time) for s, g in cells.groupby("sampler")}
cost = run.save_table(pd.DataFrame([
    dict(sampler="Glauber", run="coupled pairs", forward_rows=glauber_pairs.forward_rows,
         chain_steps=2 * int(glauber_pairs.times.sum())),
    dict(sampler="MH (PLL target)", run="coupled pairs", forward_rows=mh_pairs_run.forward_rows,
         chain_steps=2 * int(mh_pairs_run.times.sum())),
    dict(sampler="MH (PLL target)", run="chains", forward_rows=mh.forward_rows, chain_steps=T * M * budget),
]).assign(rows_per_chain_step=lambda d: d.forward_rows / d.chain_steps), "forward_rows")
report.acceptance_table(acceptance)

# %%
report.side_by_side(cells)

# %%
fig = report.glauber_vs_mh(acceptance, cells, mh_lengths, taus, n, M, budget)
run.save_figure(fig, "glauber_vs_mh")
glue("mh_readings", report.mh_readings(acceptance, n, boundary, cost), display=False)
report.cost_table(cost)

# %% [markdown]
# :::{glue:figure} fig:glauber_vs_mh
# :name: fig-06-glauber-vs-mh
# :alt: Three panels against temperature: the MH acceptance rate and the share of proposals that change a token; the share of coupled pairs that did not meet for Glauber and MH with Wilson intervals; their median coupling steps.
#
# **What the MH correction costs.** Top left: the MH test's acceptance rate among proposals that change a token at each length n (bootstrap interval over chains) and the share of such proposals at the chains' length. Top right: P(T > budget) for coupled Glauber and coupled MH (Wilson intervals). Below: their Kaplan–Meier median coupling steps (an arrow: beyond the budget).
# :::

# %% [markdown]
# **What {numref}`fig-06-glauber-vs-mh` and the tables show.** {glue:md}`mh_finding`
#
# ```{glue:md} mh_readings
# :format: myst
# ```
#
# The acceptance rate is the size of the correction: a rejected proposal is a Glauber move that the PLL target
# disowns because it lowers the other sites' fit, the same cross-site dependence that makes the conditionals
# incompatible (notebook 01) and that Dobrushin's influence measures (notebook 05). Each step that proposes a
# new token pays n forward rows for its PLL, so one MH step costs up to n + 1 Glauber steps. Coupled MH chains
# also meet less easily than coupled Glauber chains: two chains that propose the same token can still part when
# one accepts and the other rejects, and a coupling time only bounds the mixing time from above, so a later
# boundary for MH is a statement about this coupling as much as about the chain. The MH chain samples a law that
# can be named (π ∝ exp(PLL/τ)); Glauber's stationary law cannot be written down (notebook 01). Which is the
# right target is a modelling choice, not a question these diagnostics answer.

# %% [markdown]
# **The acceptance check, fixed before the run.** At each length of the study the same starts run at every
# temperature, so the lowest and the highest τ are compared chain by chain: each (length, start) gives one paired
# difference of acceptance rates (highest − lowest τ), and the units are independent (each length draws its own
# passages, each chain its own seed). The rule: the 95 % t interval of the mean paired difference lies above 0
# (`diagnostics.paired_difference`). Its power and size at this number of units come from planted differences with
# this run's spread: a rise of 0.1, fixed in advance as the smallest worth a claim, and none
# (`planted.paired_difference_calibration`).

# %%
ACCEPT_EFFECT = 0.1
per_chain = run.save_table(pd.DataFrame(chain_rates), "mh_acceptance_chains")
paired = per_chain.pivot_table(index=["length", "start"], columns="temperature", values="acceptance").dropna()
accept_rise = paired_difference(paired[taus[-1]], paired[taus[0]])
accept_sd = float((paired[taus[-1]] - paired[taus[0]]).std())
accept_designs = {}
for k in (1, 2, 4):  # this design; if it cannot decide, what more chains would buy (planted data: a second)
    accept_designs[f"{k * accept_rise['units']} chains"] = paired_difference_calibration(
        k * accept_rise["units"], accept_sd, ACCEPT_EFFECT, seed=run["seed"])
    if accept_designs[f"{accept_rise['units']} chains"].decisive:
        break
accept_cal = accept_designs[f"{accept_rise['units']} chains"]
print(f"acceptance at τ = {taus[-1]:g} minus at τ = {taus[0]:g}, paired over {accept_rise['units']} (length, start) "
      f"chains: {accept_rise['difference']:+.3f} [{accept_rise['ci_low']:+.3f}, {accept_rise['ci_high']:+.3f}]; "
      f"the rule at this design: {accept_cal}")
glue("mh_finding", report.mh_finding(paired, taus, accept_rise, mh_lengths), display=False)

# %%
# the rule needs a slow and a fast cell: where the grid lacks one, the grid decides it, not the run length
missing = sorted({"slow", "fast"} - set(views.regime))
grid = (f"a grid with a {' and a '.join(missing)} τ at {budget} steps (the coupling regimes here: "
        + ", ".join(f"τ = {r.temperature:g} {r.regime}" for r in views.itertuples()) + ")") if missing else None
run.conclude(
    claim="(The book's own question.) R̂ over chains from dispersed starts and coupling times agree on whether a "
          "Glauber chain on an MLM has mixed; an MH correction towards π ∝ exp(PLL/τ) rejects fewer proposals "
          "as τ grows, at a cost of n forward rows per proposal that changes a token.",
    key_numbers=report.key_numbers(views, budget, n, acceptance, mh_lengths, boundary, cost),
    checks=[
        *[Check(f"R̂ and coupling agree at threshold {h:g}: R̂ ≥ {h:g} at every slow τ and < {h:g} at every fast τ",
                "R̂ of the PLL energy per τ against the coupling regime",
                f"passes when R̂ ≥ {h:g} exactly where coupling is slow",
                ", ".join(f"τ = {r.temperature:g}: {r.pll_rhat:.3f}" for r in views.itertuples()), agreement[h],
                designs[h][f"{draws} draws per chain"], to_decide=grid or smallest_decisive(designs[h]),
                decide_with=None if grid else deciding_design(designs[h], design_steps))
          for h in THRESHOLDS],
        Check("MH's acceptance rate among token-changing proposals is higher at the highest τ than at the lowest",
              "MH acceptance, highest − lowest τ, paired by (length, start) chain (95 % t interval)",
              "passes when the interval lies above 0",
              f"{accept_rise['difference']:+.2f} [{accept_rise['ci_low']:+.2f}, {accept_rise['ci_high']:+.2f}] over "
              f"{accept_rise['units']} chains", accept_rise["above"], accept_cal, core=False,
              to_decide=smallest_decisive(accept_designs)),
    ],
    question="book",
    not_shown="that any single chain has mixed: the agreement rests on few temperatures and underpowered R̂")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
