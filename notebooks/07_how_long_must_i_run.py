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
# # How long must I run? L-lag coupling bounds, and tempering out of the traps
#
# **Claim.** Before a long run, a researcher sampling from an MLM wants a number of steps with a guarantee at their
# temperature τ and length n. L-lag couplings (Biswas, Jacob and Vanetti, NeurIPS) give one: a chain X runs L steps
# ahead of a chain Y from the same initial law π₀, then the two move coupled (the same site and the maximal coupling of
# the two conditionals, as notebook 02's `coupling_times`) until they meet at τ_L; over independent runs,
#
# $$d_{\mathrm{TV}}(\pi_t, \pi) \le \mathbb{E}\left[\max\left(0, \left\lceil \frac{\tau_L - L - t}{L} \right\rceil\right)\right],$$
#
# with π_t the law after t steps (`samplers.lag_coupling`: `lag_coupling`, `tv_bound`). The page checks the bound
# against the exact distance on an Ising chain small enough to enumerate, then reads on the embedded model, over a grid
# of τ and n, the steps after which its upper interval end falls below each target distance (`steps_below`). At low τ,
# where the paper's traps live, no number of steps is affordable: replica exchange of Metropolis–Hastings chains over a
# temperature ladder (`samplers.tempering.replica_exchange`) is compared with plain MH at equal forward rows on an exact
# two-well model, then on the embedded model with the pseudo-log-likelihood energy, by the basins (notebook 03's
# traps) a cold chain visits per forward row.
#
# **The rules, fixed before the run.** (i) On the Ising chain, at each lag, the Monte Carlo bound's upper interval end
# lies at or above the exact TV at every t of the grid where the exact TV is at least {glue:text}`d_tv_floor:g`;
# calibrated by replicate Monte Carlo runs (power) and by the same rule on the bound of a wrong chain, the same Ising
# chain at a higher temperature, which mixes faster (size). (ii) The exact bound (enumerated) lies above the exact
# TV at every t: the theorem, with no sampling error to calibrate. (iii) On the two-well model, the cold replica's
# law passes the TV null test against the exact law (p > 0.01) where plain MH with the same forward rows fails it
# (p < 0.01); calibrated by replicate tempered and plain runs (power) and by a planted wrong swap rule that accepts
# every swap (size). The basin criterion of section 4 (notebook 03's radius rule and a least dwell) is fixed before the
# run too; its count is a reading, not a check.

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-07
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
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (needs the internet)
#   lengths, temperatures, lag: the grids of n (tokens per chain) and τ, and the lag L, on the MLM; pairs: L-lag runs
#     per (τ, n), each from two independent passages; budget: coupled steps after the lag (then a run is censored)
#   ising_length: sites of the exact Ising chain; ising_coupling: its coupling J; ising_lags: two lags L on it
#   ising_runs: Monte Carlo L-lag runs per lag on the Ising chain; ising_steps: steps t read on it, from 0
#   replicates: replicate Monte Carlo runs of the coverage rule's calibration (each of ising_runs runs)
#   well_length, well_coupling: sites and coupling J of the exact two-well model (Potts, two states; leaving a well
#     costs about exp(−J)); rungs: temperatures of the tempering ladder, from 1 to `hot`; hot: the hottest rung
#   ensembles: independent tempered ensembles, and plain MH chains; rounds: swap rounds; steps_per_round: MH steps per
#     replica between swap rounds

# %%
import numpy as np
import pandas as pd

import torch

import glauber_mlm as gm
from glauber_mlm import exact
from glauber_mlm.exact.calibration import chain_counts
from glauber_mlm.pages.checks import Check, calibrate
from glauber_mlm.samplers.lag_coupling import LagCoupling, exact_lag_bound, lag_coupling, tv_bound
from glauber_mlm.pages.run import Run
from glauber_mlm.measures import semantic
from glauber_mlm.models.passages import load_passages, passage_pairs, sample_passages
from glauber_mlm.pages.report import run_length as report
from glauber_mlm.stats import tv_null_test
from glauber_mlm.samplers.tempering import always_swap, ladder, plain_at_rows, replica_exchange

TARGETS = (0.25, 0.01)  # the distances to stationarity the page reads the steps for
TV_FLOOR = 0.02  # rule (i) is read where the exact TV is at least this
WRONG_TEMPERATURE = 4.0  # rule (i)'s size: the bound of the same Ising chain at this τ (it mixes faster)
P_LEVEL = 0.01  # rule (iii): the TV null test passes a sampler when its p-value exceeds this, fails it below

# section 4's basin criterion, fixed before the run (notebook 03's trap detector): the trap radius is this
# quantile of the one-token embedding jitter of `calibration_passages` real passages with `neighbours`
# one-token neighbours each; a basin is a trap lasting at least `basin_dwell` MH steps of the cold chain
RULES = dict(radius_quantile=0.9, neighbours=4, embedder=None)

# cpu: sized to run in under 4 minutes on two loaded CPU cores (the L-lag runs on the MLM dominate)
PROFILES = {
    "smoke": dict(model=None, device=None, seed=0, passages="embedded", lengths=[4], temperatures=[3.0, 5.0],
                  pairs=8, lag=8, budget=400, ising_length=4, ising_coupling=1.2, ising_lags=[1, 8], ising_runs=200,
                  ising_steps=60, replicates=4, well_length=4, well_coupling=6.0, rungs=4, hot=8.0, ensembles=8,
                  rounds=60, steps_per_round=5, temper_length=6, temper_ensembles=2, temper_rungs=3, temper_cold=0.1,
                  temper_hot=1.0, temper_rounds=2, temper_steps_per_round=5, temper_record_every=5,
                  calibration_passages=4, basin_dwell=5, **RULES),
    "cpu":   dict(model=None, device=None, seed=0, passages="embedded", lengths=[8, 16], temperatures=[2.0, 3.0, 5.0],
                  pairs=40, lag=32, budget=3000, ising_length=5, ising_coupling=1.2, ising_lags=[1, 8], ising_runs=400,
                  ising_steps=120, replicates=30, well_length=5, well_coupling=8.0, rungs=6, hot=8.0, ensembles=32,
                  rounds=200, steps_per_round=5, temper_length=12, temper_ensembles=6, temper_rungs=4,
                  temper_cold=0.1, temper_hot=1.0, temper_rounds=16, temper_steps_per_round=10, temper_record_every=5,
                  calibration_passages=32, basin_dwell=40, **RULES),
    "paper": dict(model="bert-base-uncased", device=None, seed=0, passages="ms_marco", lengths=[16, 32],
                  temperatures=[1.5, 2.0, 3.0, 5.0], pairs=1000, lag=64, budget=20_000, ising_length=6,
                  ising_coupling=1.2, ising_lags=[1, 16], ising_runs=2000, ising_steps=200, replicates=50,
                  well_length=6, well_coupling=8.0, rungs=8, hot=8.0, ensembles=64, rounds=1000, steps_per_round=5,
                  temper_length=16, temper_ensembles=32, temper_rungs=6, temper_cold=0.1, temper_hot=1.0,
                  temper_rounds=100, temper_steps_per_round=10, temper_record_every=5, calibration_passages=256,
                  basin_dwell=100, **RULES),
}
# section 4 (tempering on the MLM): temper_length tokens, temper_ensembles ensembles of temper_rungs MH chains on a
# geometric ladder from temper_cold to temper_hot, temper_rounds swap rounds of temper_steps_per_round steps, a
# record every temper_record_every steps; plain MH at temper_cold from the same starts with the same forward rows
# what `scale` (a dry run) multiplies, each with its least value: 2 runs per cell (the interval needs two), 100
# coupled steps, 2 replicates; grids, lags, lengths and temperatures are never scaled
BUDGETS = dict(pairs=2, budget=100, ising_runs=20, replicates=2, ensembles=4, rounds=20, temper_ensembles=2,
               temper_rounds=2, calibration_passages=4)
run = Run("07_how_long_must_i_run", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
          overrides=globals())
mlm = run.load_mlm(run["model"])  # clear error here for an unknown model
taus = sorted(run.temperatures("temperatures", 1))
lengths_ = run["lengths"]
if (not isinstance(lengths_, (list, tuple)) or not lengths_
        or any(isinstance(L, bool) or int(L) != L or not 2 <= L <= mlm.max_length for L in lengths_)):
    raise ValueError(f"lengths must be a non-empty list of whole numbers of tokens in [2, {mlm.max_length}], got "
                     f"{lengths_!r}.")
lengths_ = sorted({int(L) for L in lengths_})
P, L_mlm, B = run.integer("pairs", 2), run.integer("lag", 1), run.integer("budget", 1)
ising_n, ising_R = run.integer("ising_length", 2, 8), run.integer("ising_runs", 2)
ising_T, reps = run.integer("ising_steps", 2), run.integer("replicates", 1)
ising_lags = run["ising_lags"]
if (not isinstance(ising_lags, (list, tuple)) or len(ising_lags) != 2
        or any(isinstance(L, bool) or int(L) != L or L < 1 for L in ising_lags)):
    raise ValueError(f"ising_lags must be two whole numbers ≥ 1 (the two lags compared), got {ising_lags!r}.")
ising_lags = sorted(int(L) for L in ising_lags)
J = run.positive("ising_coupling")
well_n, well_J = run.integer("well_length", 2, 8), run.positive("well_coupling")
K, hot_tau = run.integer("rungs", 2), run.positive("hot")
if not hot_tau > 1:
    raise ValueError(f"hot must exceed the target's temperature 1, got {hot_tau}.")
E, R_rounds, S_round = run.integer("ensembles", 2), run.integer("rounds", 2), run.integer("steps_per_round", 1)
n_t, E_t = run.integer("temper_length", 2, mlm.max_length), run.integer("temper_ensembles", 2)
K_t, R_t, S_t = run.integer("temper_rungs", 2), run.integer("temper_rounds", 1), run.integer("temper_steps_per_round", 1)
every_t, dwell_t = run.integer("temper_record_every", 1), run.integer("basin_dwell", 1)
cold_t, hot_t = run.positive("temper_cold"), run.positive("temper_hot")
if not hot_t > cold_t:
    raise ValueError(f"temper_hot must exceed temper_cold (the ladder runs from the target up), got {hot_t} ≤ {cold_t}.")
if S_t % every_t:
    raise ValueError(f"temper_record_every = {every_t} must divide temper_steps_per_round = {S_t}.")
q_radius = semantic.quantile_levels([run["radius_quantile"]], "radius_quantile")[0]
n_cal, n_neighbours = run.integer("calibration_passages", 2), run.integer("neighbours", 1)
emb_model = semantic.load_embedder(run["embedder"], device=run.device)  # clear error here for an unknown embedder
texts = load_passages(run["passages"])
print(f"target distances: {', '.join(f'{e:g}' for e in TARGETS)}; rule (i) read where the exact TV ≥ {TV_FLOOR:g}")
report.glue_design(run, P_LEVEL, TV_FLOOR)  # the design's values, for the prose ({glue:text}`d_pairs` and so on)
run.show()

# %% tags=["plan"]
# the work this run does, as `glauber-mlm plan` counts it: the plan reads this cell, so both count by one rule
import math

from glauber_mlm.book.plan import EMBED_BATCH, Work, ising_meeting, meeting, show_plan


def planned_work(p: dict) -> list[Work]:
    """07_how_long_must_i_run (T temperatures, P pairs, lag L, budget B): per length n, L-lag runs on all T · P pairs
    (T · P · L lag rows, ≤ 2 · T · P · B coupled); exact: Ising L-lag runs and their calibration, replica exchange
    and plain MH with rule (iii)'s calibration; on the MLM, the trap radius's neighbours, replica exchange with the
    PLL energy against plain MH at equal rows, the unbiased estimate against a plain run at equal rows, and the
    embedder. Upper bounds: pairs that meet leave the batch."""
    m, T, P, L, B = p["model"], len(p["temperatures"]), p["pairs"], p["lag"], p["budget"]
    # MLM L-lag pairs at τ ≥ 2 meet after about 2 n ln n coupled steps, a batch's slowest 8 (cpu build: 1.3–3.2; 5.4–7.2)
    typical, slowest = 2.0, 8.0
    work = [Work("L-lag runs (lag phase and coupled pairs)", m, n, T * P * (L + 2 * B), L + B, upper=True,
                 expected=meeting(T * P, B, typical * n * math.log(n), slowest * n * math.log(n), lag=L))
            for n in sorted(set(p["lengths"]))]
    runs, budget, lags = p["ising_runs"], 100 * p["ising_steps"], sorted(p["ising_lags"])
    ising_runs = [(lag, 1) for lag in lags] + [(lags[-1], 2 * p["replicates"])]
    # expected at τ = 1 (the calibration's null runs at a higher τ meet sooner), by path coupling
    n_i, J = p["ising_length"], p["ising_coupling"]
    per_lag = {lag: ising_meeting(n_i, [1.0], runs, budget, J, lag=lag) for lag in lags}
    work.append(Work("Ising L-lag runs and the coverage calibration", "Ising chain", n_i,
                     sum(k * runs * (lag + 2 * budget) for lag, k in ising_runs),
                     sum(k * (lag + budget) for lag, k in ising_runs), kind="exact", upper=True,
                     expected=tuple(sum(k * per_lag[lag][i] for lag, k in ising_runs) for i in (0, 1))))
    mh_steps = p["rounds"] * p["steps_per_round"]
    rows = p["ensembles"] * p["rungs"] * mh_steps
    work.append(Work("replica exchange and plain MH (equal rows)", "two-well Potts chain", p["well_length"], 2 * rows,
                     mh_steps * (1 + p["rungs"]), kind="exact", upper=True))
    work.append(Work("rule (iii)'s calibration: replica exchange (right and wrong swap rule) and plain MH",
                     "two-well Potts chain", p["well_length"], 3 * p["replicates"] * rows, mh_steps * (2 + p["rungs"]),
                     kind="exact", upper=True))
    n, E, K = p["temper_length"], p["temper_ensembles"], p["temper_rungs"]
    steps, chunk = p["temper_rounds"] * p["temper_steps_per_round"], p["temper_rungs"] * p["temper_steps_per_round"]
    tempered = E * K * (p["temper_rounds"] * n + steps * (1 + n))
    plain = tempered + E * (n + chunk * (1 + n))
    work.append(Work("trap radius: one-token neighbours", m, n, p["calibration_passages"] * p["neighbours"], 1))
    plain_steps = plain // E  # at least one row a chain-step
    work.append(Work("MLM tempering: replica exchange (PLL energy) and plain MH at the same rows", m, n, tempered + plain,
                     p["temper_rounds"] * (1 + p["temper_steps_per_round"]) + plain_steps, upper=True))
    sentences = E * ((steps + plain_steps) // p["temper_record_every"] + 2) + p["calibration_passages"] * (1 + p["neighbours"])
    # section 5: m = 5k with k ≤ a pilot meeting time ≤ L + B, so each unbiased run lasts ≤ `horizon` steps; the plain
    # run spends the same rows
    horizon = 6 * (L + B)
    work.append(Work("unbiased estimate (L-lag runs to m) and the plain run at the same rows", m, max(p["lengths"]),
                     2 * P * (L + 2 * horizon), 2 * (L + horizon), upper=True))
    work.append(Work("sentences embedded (cold chains' records, radius calibration)", p["embedder"], n, sentences,
                     math.ceil(sentences / EMBED_BATCH), "float32", kind="embedder", upper=True))
    return work


show_plan(planned_work(run.params))

# %% [markdown]
# ## 1. The bound against the exact distance on an Ising chain
#
# An Ising chain (`exact.potts_chain`) is small enough to enumerate: from the all-zero state (π₀ a point mass), the
# exact law π_t after t random-scan Glauber steps, its exact distance to π, and the exact expected L-lag bound
# (`exact_lag_bound`, by enumerating the coupled pair chain) are computed beside the Monte Carlo bound of
# {glue:text}`d_ising_runs` independent L-lag runs with its normal interval, at the lags L =
# {glue:text}`d_ising_lags`, on a chain of {glue:text}`d_ising_n` sites with coupling J = {glue:text}`d_ising_J`.

# %%
ising = exact.potts_chain(ising_n, 2, coupling=J)
point = np.zeros(2**ising_n)
point[0] = 1.0
x_ising = torch.zeros(ising_R, ising_n, dtype=torch.int64)
grid = np.arange(ising_T)
rows = []
for L in ising_lags:
    ex = exact_lag_bound(ising, point, L, ising_T)
    mc = tv_bound(lag_coupling(ising, x_ising, x_ising.clone(), L, 100 * ising_T, seed=run["seed"] * 1000 + L), grid)
    rows += report.ising_rows(L, grid, ex, mc)
ising_table = run.save_table(pd.DataFrame(rows), "ising_bounds")
read = ising_table.exact_tv >= TV_FLOOR
coverage = ising_table[read].groupby("lag").apply(lambda g: bool((g.bound_high >= g.exact_tv).all()),
                                                   include_groups=False)
dominates = bool((ising_table.exact_bound >= ising_table.exact_tv - 1e-12).all())
report.glue_text(ising_finding=report.ising_finding(ising_table, grid, ising_lags, coverage, dominates, TARGETS,
                                                    TV_FLOOR))
fig = report.ising_bounds(ising_table, ising_lags, ising_n, J)
run.save_figure(fig, "ising_bounds")
report.ising_summary(ising_table, TARGETS, TV_FLOOR)

# %% [markdown]
# **Calibration of rule (i).** At the larger lag (the tighter bound, where coverage is hardest), {glue:text}`d_replicates`
# fresh Monte Carlo runs of {glue:text}`d_ising_runs` L-lag runs each: the share whose upper end covers the exact TV
# wherever the rule reads it is the power; the share that covers it with the wrong, hotter chain's meeting times is the
# size (`checks.calibrate`).

# %%
L_cal = ising_lags[-1]
exact_cal = ising_table[ising_table.lag == L_cal].set_index("t").exact_tv.to_numpy()
tested = exact_cal >= TV_FLOOR


def covers(high) -> bool | None:
    return None if not tested.any() else bool((high[tested] >= exact_cal[tested]).all())


def mc_high(rng, temperature):
    res = lag_coupling(ising, x_ising, x_ising.clone(), L_cal, 100 * ising_T, temperature=temperature,
                       seed=int(rng.integers(1 << 40)))
    return tv_bound(res, grid).high


coverage_cal = calibrate(covers, lambda rng: mc_high(rng, 1.0), lambda rng: mc_high(rng, WRONG_TEMPERATURE), reps,
                         f"Ising chain, n = {ising_n}, J = {J:g}, L = {L_cal}, {ising_R} runs; null: the bound of the "
                         f"chain at τ = {WRONG_TEMPERATURE:g}", seed=run["seed"])
run.save_table(report.coverage_calibration(coverage_cal, L_cal, ising_R), "calibration")
print(f"rule (i) at L = {L_cal}: {coverage_cal}")

# %% [markdown]
# :::{glue:figure} fig:ising_bounds
# :name: fig-07-ising-bounds
# :alt: Two panels, one per lag, with the exact total-variation distance against the step, the exact L-lag bound and the Monte Carlo bound with its interval band, all decreasing.
#
# **The L-lag bound against the exact distance.** Black: the exact TV of the Ising chain after t steps. Dashed: the exact expected L-lag bound. Orange: the Monte Carlo bound with its normal interval (all drawn clipped at one, the largest TV).
# :::
#
# **What {numref}`fig-07-ising-bounds` shows.** {glue:md}`ising_finding` How to read it: a bound is useful where its
# curve lies close above the black one; the table above gives, per lag, the first step at which each curve falls below
# the first target distance and the least margin of the Monte Carlo upper end over the exact TV where rule (i) reads it.
#
# ## 2. The bound on the embedded model
#
# For each (τ, n) of the grid, {glue:text}`d_pairs` L-lag runs start from two independent real passages each (π₀: a
# random passage of n tokens, `passage_pairs`), with lag L = {glue:text}`d_lag` and at most {glue:text}`d_budget`
# coupled steps. The table gives the recommended run lengths, the steps after which the bound's upper interval end
# falls below each target distance; a blank means the grid of t, the runs or the budget cannot resolve it.
# Notebook 02's coupling time of two chains started apart bounds the *worst-case* distance at the same (τ, n); this
# bound, for a random-passage start, is typically tighter at a lag near the mixing time (same moves, other estimator).
#
# No check here decides whether these readings hold on the embedded model: its exact distance is unknown at these n,
# and the page's checks run on the Ising and two-well models. [Notebook 08](08_exact_answers.ipynb) runs this same
# estimator and rule (i) on the model's own chain, restricted to its top two candidates per site and enumerated, where
# the exact distance is known: its paragraph *The L-lag bound on the real chain* and its side check give the reading.

# %%
cells = []  # per (τ, n): its row of the steps table and its rows of the curve table
for n in lengths_:
    x0, y0, _ = passage_pairs(mlm, texts, n, P, seed=run.seed_for("pairs", n=n))
    T = len(taus)
    res = lag_coupling(mlm, x0.repeat(T, 1), y0.repeat(T, 1), L_mlm, B,
                       temperature=torch.tensor(taus).repeat_interleave(P),
                       seed=run["seed"] * 1_000_000 + 800_000 + 10_000 * n + torch.arange(T * P), progress=True)
    for k, tau in enumerate(taus):  # each cell's bound (`tv_bound`) and the steps it reads for each target
        own = slice(k * P, (k + 1) * P)
        cells.append(report.lag_cell(n, tau, LagCoupling(res.meeting_times[own], res.met[own], L_mlm, B, 0), TARGETS))
steps_table = run.save_table(pd.DataFrame([row for row, _ in cells]), "steps_below")
curve_table = run.save_table(pd.DataFrame([c for _, curve in cells for c in curve]), "mlm_bounds")
fig = report.mlm_bounds(curve_table, steps_table, lengths_, taus, TARGETS, L_mlm, P)
run.save_figure(fig, "mlm_bounds")
report.glue_text(mlm_finding=report.mlm_finding(steps_table, TARGETS, B, P))
report.steps_below(steps_table, TARGETS)

# %% [markdown]
# :::{glue:figure} fig:mlm_bounds
# :name: fig-07-mlm-bounds
# :alt: One panel per length with the upper end of the L-lag bound on a log scale against the step, one line per temperature, and grey lines at the two target distances.
#
# **How long to run on the embedded model.** The upper interval end of the L-lag bound on the distance to stationarity from a random passage, per temperature (colour) and length (panel); dashed and dotted lines: the two target distances. A dot is a reading, the first step at which the upper end is at or below a target: the recommended number of steps. A line ends (tick) where every run has met: past that step every term of the bound is zero and so is its interval, which shows no run left to bound with, not a distance of zero. Grey band: the targets too small for the runs per cell (a target ε is read only with at least ten over ε runs); a line that ends inside it reads nothing there.
# :::
#
# **What {numref}`fig-07-mlm-bounds` shows.**
# ```{glue:md} mlm_finding
# :format: myst
# ```
#
# ## 3. Tempering out of the traps
#
# A two-well model (`exact.potts_chain`, {glue:text}`d_well_n` sites with two states, a strong coupling J =
# {glue:text}`d_well_J`) has its mass split between the all-zero and all-one states; single-site moves leave a well
# only by crossing a wall. Replica exchange runs {glue:text}`d_ensembles` ensembles of {glue:text}`d_rungs` MH chains
# on a geometric ladder from the target τ = 1 to τ = {glue:text}`d_hot`, {glue:text}`d_rounds` rounds of
# {glue:text}`d_steps_per_round` steps with a swap of neighbours after each, accepted from the energies (an MH chain
# has one; incompatible Glauber lacks one, section 4). Plain MH at the target runs the same chains {glue:text}`d_rungs`
# times as long, so both spend the same forward rows; both start in the all-zero well. Per sampler: the second half's
# TV to the exact law with its null test (`stats.tv_null_test`), the chains visiting both wells and the wells visited
# per thousand forward rows; per rung pair, the swap rate; per ensemble, the round trips from the cold to the hot end.

# %%
wells = exact.potts_chain(well_n, 2, coupling=well_J)
law = wells.joint(1.0)[1].numpy()
start = torch.zeros(E, well_n, dtype=torch.int64)
temp = replica_exchange(wells, start, ladder(1.0, hot_tau, K), R_rounds, S_round, seed=run["seed"], energy="joint")
plain = gm.metropolis(wells, start, K * R_rounds * S_round, 1.0, seed=run["seed"], energy="joint",
                      record_every=S_round)
tests = {name: tv_null_test(chain_counts(rec[rec.shape[0] // 2:], 2), law, seed=run["seed"])  # the second half
         for name, rec in (("tempered (cold replica)", temp.cold), ("plain MH", plain.states))}
tempering_table = run.save_table(report.tempering_table(tests, temp, plain), "tempering")
swaps = run.save_table(report.swap_rates(temp), "swap_rates")
trips = temp.round_trips
report.tempering(tempering_table)

# %% [markdown]
# **Calibration of rule (iii).** It passes when the tempered cold replica's p-value exceeds {glue:text}`d_p_level` and
# plain MH's falls below it. Power: {glue:text}`d_replicates` fresh replicates of this design (each
# {glue:text}`d_ensembles` tempered ensembles and as many plain MH chains at the same rows); size: the same with a
# planted wrong swap rule that accepts every swap (`tempering.always_swap`: hot states reach the cold slot unweighted,
# so its law is the ladder's mixture). Each sampler's replicates run in one batch, the plain chains serving both worlds.

# %%
def rule_iii(p_values) -> bool:
    """Rule (iii) on (tempered p-value, plain p-value)."""
    return bool(p_values[0] > P_LEVEL and p_values[1] < P_LEVEL)


cal_start = torch.zeros(reps * E, well_n, dtype=torch.int64)
cal_seed = run.seed_for("tempering calibration")
cal_runs = {
    "right": replica_exchange(wells, cal_start, ladder(1.0, hot_tau, K), R_rounds, S_round, seed=cal_seed,
                              energy="joint").cold,
    "wrong": replica_exchange(wells, cal_start, ladder(1.0, hot_tau, K), R_rounds, S_round, seed=cal_seed + 100_000,
                              energy="joint", swap_rule=always_swap).cold,
    "plain": gm.metropolis(wells, cal_start, K * R_rounds * S_round, 1.0, seed=cal_seed + 200_000, energy="joint",
                           record_every=S_round).states,
}
cal_p = {name: [tv_null_test(chain_counts(rec[rec.shape[0] // 2:, r * E:(r + 1) * E], 2), law,
                             seed=run["seed"] + r)["p_value"] for r in range(reps)]
         for name, rec in cal_runs.items()}
draws = {world: iter(zip(cal_p[world], cal_p["plain"])) for world in ("right", "wrong")}
tempering_cal = calibrate(rule_iii, lambda rng: next(draws["right"]), lambda rng: next(draws["wrong"]), reps,
                          f"two-well Potts chain, n = {well_n}, J = {well_J:g}, {E} ensembles of {K} rungs, "
                          f"{R_rounds} rounds of {S_round} steps; null: the same with every swap accepted",
                          seed=run["seed"])
run.save_table(report.tempering_calibration(tempering_cal, cal_p, P_LEVEL, reps), "tempering_calibration")
print(f"rule (iii): {tempering_cal}")
fig = report.tempering_figure(tempering_table, swaps, K, R_rounds)
run.save_figure(fig, "tempering")
t_row, p_row = tempering_table.iloc[0], tempering_table.iloc[1]
cold_ok = rule_iii((t_row.p_value, p_row.p_value))
report.glue_text(tempering_finding=report.tempering_finding(t_row, p_row, cold_ok, reps, tempering_cal,
                                                            tempering_table, swaps, trips))

# %% [markdown]
# :::{glue:figure} fig:tempering
# :name: fig-07-tempering
# :alt: Left, bars of the TV between each sampler's visits and the exact two-well law with the upper end of the null band; right, the swap rate between neighbouring temperatures of the ladder.
#
# **Tempering against plain MH at equal cost.** Left: the TV between the second half's visits and the exact law for the tempered cold replica and for plain MH (black mark: the upper end of the band the TV would fall in if the visits were draws from the exact law). Right: the swap acceptance rate between neighbouring rungs.
# :::
#
# **What {numref}`fig-07-tempering` shows.**
# ```{glue:md} tempering_finding
# :format: myst
# ```
#
# ## 4. Tempering on the embedded model
#
# **Why MH and not Glauber.** Glauber dynamics on the MLM's incompatible conditionals has a stationary law nobody can
# write down, even up to a constant, and its laws at different τ are not one energy's tempered family: there is no
# ratio to accept a swap with, and swapping on a guessed energy would leave none of them invariant. MH towards the
# pseudo-log-likelihood target π_τ ∝ exp(PLL/τ) (notebook 06) has an energy, −PLL, to swap on (energy "pll").
#
# **The design.** The law is unknown here: what counts is the basins a sampler visits at low τ.
# {glue:text}`t_ensembles` ensembles, each from its own real passage of {glue:text}`t_length` tokens (one per
# document), run {glue:text}`t_rungs` MH chains on the geometric ladder τ = {glue:text}`t_ladder`,
# {glue:text}`t_rounds` rounds of {glue:text}`t_steps_per_round` steps with a swap round after each. Plain MH at the
# cold τ = {glue:text}`t_cold` runs from the same passages until it has spent the same forward rows
# (`tempering.plain_at_rows`, in chunks of {glue:text}`t_chunk` steps). Every {glue:text}`t_every` steps the cold
# chain's state is decoded and embedded.
#
# **The basin criterion, fixed before the run (notebook 03's).** The trap radius is the {glue:text}`t_radius_quantile`
# quantile of the one-token embedding jitter of {glue:text}`t_cal` real passages of the same length with
# {glue:text}`t_neighbours` one-token neighbours each (`semantic.one_token_neighbours`, before any chain runs); a
# basin is a trap (`semantic.find_traps`) lasting at least {glue:text}`t_dwell` steps of the cold chain, and a trap
# centred within the radius of an earlier basin's centre is a return, not a new basin (`tempering.basins_visited`).
# The gain, basins per forward row tempered over plain, has a percentile bootstrap over the starting passages (each
# gives one tempered ensemble and one plain chain, independent of the others).

# %%
cal_states, _ = sample_passages(mlm, texts, n_t, n_cal, seed=run["seed"] + 1)
nb_states, parent = semantic.one_token_neighbours(mlm, cal_states, per_state=n_neighbours, temperature=1.0,
                                                  seed=run["seed"])
jitter = semantic.one_token_jitter(semantic.embed(emb_model, mlm.decode(cal_states)),
                                   semantic.embed(emb_model, mlm.decode(nb_states)), parent)
radius = float(semantic.calibrated_thresholds(jitter, [q_radius])[0])
print(f"trap radius r = {radius:.3f}: the {q_radius:g} quantile of {len(jitter)} one-token jitters, before any chain ran")

x_t, start_ids = sample_passages(mlm, texts, n_t, E_t, seed=run["seed"])
temp_mlm = replica_exchange(mlm, x_t, ladder(cold_t, hot_t, K_t), R_t, S_t, seed=run.seed_for("tempering"),
                            energy="pll", record_every=every_t)
plain_mlm = plain_at_rows(mlm, x_t, cold_t, temp_mlm.forward_rows, K_t * S_t,
                          seed=run.seed_for("plain MH"), energy="pll", record_every=every_t)
basins = report.basins(emb_model, mlm, temp_mlm, plain_mlm, radius, dwell_t)  # per sampler: basins per start
mlm_tempering = run.save_table(report.mlm_tempering_table(basins, cold_t, E_t, run["seed"]), "mlm_tempering")
b_t, b_p = basins["tempered (cold replica)"][0], basins["plain MH"][0]
gain = report.gain_text(*report.basin_gain(b_t, b_p, temp_mlm.forward_rows / E_t, plain_mlm.forward_rows / E_t,
                                           run["seed"]))
run.save_table(pd.DataFrame(dict(start=start_ids, tempered_basins=b_t, plain_basins=b_p)), "mlm_basins")
mlm_swaps = run.save_table(report.swap_rates(temp_mlm), "mlm_swap_rates")
trips_t = temp_mlm.round_trips
fig = report.mlm_tempering_figure(b_t, b_p, mlm_swaps, cold_t, K_t, R_t)
run.save_figure(fig, "mlm_tempering")
report.glue_text(t_ladder=report.ladder_text(temp_mlm), mlm_tempering_finding=report.mlm_tempering_finding(
    mlm_tempering, gain, cold_t, E_t, mlm_swaps, trips_t))
report.mlm_tempering(mlm_tempering)

# %% [markdown]
# :::{glue:figure} fig:mlm_tempering
# :name: fig-07-mlm-tempering
# :alt: Left, the number of basins each start's tempered cold chain and plain MH chain visited, joined by a line per start; right, the swap acceptance rate between neighbouring temperatures of the ladder on the embedded model.
#
# **Tempering on the embedded model, at equal cost.** Left: basins visited (notebook 03's trap criterion) by the cold chain of each start, tempered and plain, joined per start. Right: the swap acceptance rate between neighbouring rungs of the ladder.
# :::
#
# **What {numref}`fig-07-mlm-tempering` shows.** {glue:md}`mlm_tempering_finding` How to read it: a line rising to
# the left is a start where tempering found more basins for the same cost. The count depends on the basin criterion,
# fixed before the run, and on how long each cold chain runs (plain chains take more steps for the same rows, none
# going to hotter rungs): it is a reading of this design, not a check.

# %% [markdown]
# ## 5. An unbiased estimate with an honest interval
#
# The coupled chains that bound the distance also give estimates with no burn-in bias (Jacob, O'Leary and Atchadé,
# [arXiv 1708.03625](https://arxiv.org/abs/1708.03625); `samplers.unbiased`): each L-lag coupled run yields $H_{k:m}$, the average of $h(X_k), …, h(X_m)$ plus a
# correction from the steps before the chains met, and $E[H_{k:m}] = \pi(h)$ exactly for every k and m. Independent
# runs give i.i.d. replicates, so their mean and its t-interval are honest whatever k. Here h is the share of sites
# holding a word-piece continuation token ('##…': a trait of the text the chain writes, read without a forward), at
# the grid's longest length and highest τ; k is the step by which all but one in a hundred of section 2's runs at that
# cell had met (fixed before these runs), m = 5k, from fresh pairs of starts. Beside it, plain Glauber chains from the same
# starts run for the same forward rows in all, their first k steps discarded: their interval rests on that burn-in
# being long enough. On small exact chains, including the embedded model's own chain restricted to two candidates at
# four sites, the same estimator's intervals cover the exact π(h) within the binomial range of the nominal rate
# (tests/test_unbiased.py).

# %%
from glauber_mlm.pages.report import unbiased_estimate as unbiased_report

n_u, tau_u = lengths_[-1], taus[-1]
x_u, y_u, _ = passage_pairs(mlm, texts, n_u, P, seed=run.seed_for("pairs", n=n_u, s=1))
pilot = res.meeting_times[(len(taus) - 1) * P:]  # section 2's runs at (n_u, tau_u): the last length, the last τ
unbiased_table = run.save_table(unbiased_report.unbiased_against_plain(
    mlm, x_u, y_u, unbiased_report.continuation_share(mlm), tau_u, L_mlm, pilot, B,
    seed=run["seed"] * 1_000_000 + 900_000), "unbiased_estimate")
report.glue_text(unbiased_finding=unbiased_report.unbiased_finding(unbiased_table, n_u, tau_u))
unbiased_report.show(unbiased_table)

# %% [markdown]
# **What the table shows.**
# ```{glue:md} unbiased_finding
# :format: myst
# ```

# %%
run.conclude(
    claim="(The book's own question.) On an exact Ising chain, the Monte Carlo L-lag bound lies at or above the "
          "exact distance to stationarity at every step; on an exact two-well model at low τ, replica exchange of MH "
          "chains samples the law that plain MH at equal cost does not. On the embedded model the same bound reads "
          "how many steps reach a target distance at each τ and n, a reading no check of this page decides "
          "(notebook 08 reads the bound's rule on the model's own restricted chain).",
    # section 4 (tempering on the embedded model) is a reading, not a check: no planted truth of basins to calibrate on
    key_numbers=report.key_numbers(steps_table, TARGETS, P, L_mlm, B, ising_table, ising_lags, coverage, tempering_table,
                                   swaps, trips, mlm_tempering, gain, cold_t, n_t, mlm_swaps, trips_t),
    checks=[
        Check(f"the Monte Carlo L-lag bound's upper end lies at or above the exact TV of the Ising chain at every t "
              f"where the exact TV ≥ {TV_FLOOR:g} (L = {L_cal})",
              "upper interval end minus exact TV, its minimum over the tested t",
              "passes when the minimum is ≥ 0",
              report.coverage_margin(ising_table, read, L_cal),
              bool(coverage.get(L_cal, False)), coverage_cal,
              to_decide="more replicates, or more runs per replicate"),
        Check("the tempered cold replica passes the TV null test against the exact two-well law and plain MH with "
              "the same forward rows fails it",
              "p-values of the TV null test, tempered / plain", f"passes when > {P_LEVEL:g} / < {P_LEVEL:g}",
              f"{t_row.p_value:.3g} / {p_row.p_value:.3g}", cold_ok, tempering_cal,
              to_decide=f"more replicates than {reps}, or more rounds per run"),
    ],
    question="book",
    not_shown="whether the bound holds on the embedded model itself (its exact distance is unknown at these n; "
              "notebook 08 tests the rule on its restricted chain); "
              "the bound for a start other than a random passage (notebook 02's worst case); whether the tempered "
              "chains on the embedded model sample their target (its law is unknown: the basin count is a reading, "
              "not a check); tempering at other lengths, ladders or basin criteria")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
