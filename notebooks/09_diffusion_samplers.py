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
# # Which law does your diffusion sampler sample?
#
# **Claim.** Masked-diffusion language models generate with an MLM-style denoiser and samplers that unmask, remask
# and commit: MDLM's ancestral sampler, ReMDM's remasking (arXiv 2503.00307) and LLaDA's confidence remasking. Which
# law do they sample when the denoiser is a real MLM, whose conditionals no joint law has (notebook 01)? On the
# embedded model restricted to its top k candidates at n free sites of real passages (notebook 08's chain, now with
# masks), every partial state's conditionals can be evaluated once, and each sampler's output law computed
# *exactly*: given the partial state, sites move independently, so each step is a product kernel on the
# $(k+1)^n$ partial states (a commit step is enumerated). This page sets each sampler's exact law beside the laws
# it might be taken to sample: the Glauber chain's stationary law $\pi_G$ (the paper's chain; remasking one site and
# unmasking it at once *is* random-scan Glauber), the left-to-right and right-to-left chain-rule laws, their average
# over all n! orders (the any-order mixture) and the pseudo-likelihood field $\propto \prod_i p(x_i \mid x_{-i})$.
# These coincide when the conditionals come from one joint law; the distances between them are what
# incompatibility costs a sampler, exactly.
#
# **The rule, fixed before the run.** The exact laws are exact; what is checked is that the Monte Carlo samplers
# (`glauber_mlm.diffusion.sample`) draw them: on the first passage at τ = {glue:text}`check_tau_text` and T = n, {glue:text}`draws_text`
# seeded chains of each sampler pass Pearson's χ² against that sampler's exact law at p ≥ 0.01 / (number of
# samplers). It is calibrated on i.i.d. draws from every sampler's exact law (the planted truth) and on the same
# draws with one sampler's replaced by draws from its own law at 1.25 τ (the planted null: a sampler whose only
# fault is a temperature a quarter too high, the sampler chosen whose two laws are nearest).

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-09
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
#   model: None: the profile's, or a hub name / local folder; device: None: cuda when present, else cpu
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (online); documents: passages, one per document
#   length: tokens per passage (free sites: positions 1 … n); seed
#   sites: n free sites; candidates: k per site ((k+1)^n partial states, at most 20,000)
#   temperatures: τ of the denoiser's logits, as in the Glauber chain; steps: the T compared
#   eta, t_on, t_off, alpha_on: ReMDM's remasking strength and loop (arXiv 2503.00307's defaults)
#   check_temperature: τ of the Monte Carlo check (one of temperatures); draws: chains per sampler in it
#   replicates: planted runs per side of the check's calibration

# %%
import pandas as pd
import torch
from myst_nb import glue

from glauber_mlm import diffusion, exact
from glauber_mlm.diffusion.compare import distance_rows, reference_laws, sampler_plans
from glauber_mlm.diffusion.fit import chi2_pvalue
from glauber_mlm.diffusion.exact_laws import plan_law
from glauber_mlm.diffusion.partial_table import MAX_PARTIAL_STATES
from glauber_mlm.exact.scan_order import tv
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.pages.checks import Check, calibrate
from glauber_mlm.pages.plots import show_table
from glauber_mlm.pages.report import diffusion as report
from glauber_mlm.pages.run import Run
from glauber_mlm.stats import chi2_counts_pvalue

PROFILES = {
    "smoke": dict(model=None, device=None, seed=0, passages="embedded", documents=2, length=8, sites=3, candidates=2,
                  temperatures=[1.0, 2.0], steps=[1, 3, 8], eta=0.02, t_on=0.55, t_off=0.05, alpha_on=0.9,
                  check_temperature=1.0, draws=1000, replicates=40),
    "cpu":   dict(model=None, device=None, seed=0, passages="embedded", documents=4, length=16, sites=6, candidates=2,
                  temperatures=[0.5, 1.0, 2.0], steps=[1, 2, 6, 24, 64], eta=0.02, t_on=0.55, t_off=0.05,
                  alpha_on=0.9, check_temperature=1.0, draws=3000, replicates=200),
    "paper": dict(model="bert-base-uncased", device=None, seed=0, passages="ms_marco", documents=8, length=32, sites=6,
                  candidates=2, temperatures=[0.5, 1.0, 2.0], steps=[1, 2, 6, 24, 64, 256], eta=0.02, t_on=0.55,
                  t_off=0.05, alpha_on=0.9, check_temperature=1.0, draws=10_000, replicates=200),
}
# what `scale` (a dry run) multiplies, each with its least value (30 planted runs: the fewest with which a pass decides)
BUDGETS = dict(draws=200, replicates=30)
run = Run("09_diffusion_samplers", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
          overrides=globals())
n, k = run.integer("sites", 2, 12), run.integer("candidates", 2, 8)
if (k + 1) ** n > MAX_PARTIAL_STATES:
    raise ValueError(f"(k+1)^n = {(k + 1) ** n} partial states is too many to enumerate: use fewer sites or candidates.")
taus = run.temperatures("temperatures", 1)
steps = run["steps"]
if not isinstance(steps, (list, tuple)) or len(set(steps)) < 2 or any(
        isinstance(T, bool) or not isinstance(T, int) or T < 1 for T in steps):
    raise ValueError(f"steps must be at least two distinct positive integers T, got {steps!r}.")
steps = sorted(set(steps))
check_tau = run.positive("check_temperature")
if check_tau not in taus:
    raise ValueError(f"check_temperature {check_tau} must be one of temperatures {taus}.")
loop = dict(eta=run.positive("eta"), t_on=run.positive("t_on"), t_off=run.positive("t_off"),
            alpha_on=run.positive("alpha_on"))
sampler_plans(n, 2, **loop)  # a bad loop (t_off ≥ t_on, α_on ≥ 1) is refused here, before any forward
n_docs, draws, replicates = run.integer("documents", 1), run.integer("draws", 2), run.integer("replicates", 30)
glue("check_tau_text", f"{check_tau:g}", display=False)
glue("draws_text", f"{draws:,}", display=False)
mlm = run.load_mlm(run["model"])  # clear error here for an unknown model
L = run.integer("length", n + 1, mlm.max_length)
contexts, passage_ids = sample_passages(mlm, load_passages(run["passages"]), L, n_docs, seed=run.seed_for("starts", n=L))
run.show()

# %% tags=["plan"]
# the forward work of this run: `glauber-mlm plan` executes this cell's imports and definitions (one count for both)
import math

from glauber_mlm.book.plan import Work, show_plan
from glauber_mlm.diffusion.compare import sampler_plans

ROWS_PER_CALL = 256  # `diffusion.partial_table`'s rows per denoiser call


def planned_work(p: dict) -> list[Work]:
    """09_diffusion_samplers: per passage, `exact.candidate_sets` (n rows, one call) and `diffusion.partial_table`
    on the model ((k+1)^n partial states, one multi-mask forward each, ROWS_PER_CALL a call); then the Monte Carlo
    check's chains on the first passage's table (a look-up per chain and step: exact)."""
    n, k, m, L, D = p["sites"], p["candidates"], p["model"], p["length"], p["documents"]
    S = (k + 1) ** n
    samplers = len(sampler_plans(n, n))
    mc_steps = n * samplers  # each sampler at T = n steps
    return [Work("candidate sets (top k, site masked)", m, L, D * n, D),
            Work("partial tables: every partial state's conditionals", m, L, D * S, D * math.ceil(S / ROWS_PER_CALL)),
            Work("Monte Carlo samplers on the first passage's table", "partial table", n, p["draws"] * mc_steps,
                 mc_steps, kind="exact", states=k)]


show_plan(planned_work(run.params))

# %% [markdown]
# ## 1. Every partial state's conditionals
#
# For each passage the free sites are positions 1 … n and each site's k candidates are the model's top k there with
# the site masked (`exact.candidate_sets`, as in notebook 08). `diffusion.RestrictedDenoiser` puts the mask token at
# every masked free site at once and reads the model's logits at each free site, over its candidates;
# `diffusion.partial_table` evaluates it at all $(k+1)^n$ partial states once. With one masked site it is notebook
# 08's conditional (the tests check the two kernels entry for entry).

# %%
tables, chain_rows = [], []
for context, pid in zip(contexts, passage_ids):
    sites = torch.arange(1, n + 1)
    candidates = exact.candidate_sets(mlm, context, sites, k)
    tables.append(diffusion.partial_table(diffusion.RestrictedDenoiser(mlm, context, sites, candidates), n, k))
    chain_rows.append(dict(passage=pid, partial_states=(k + 1) ** n, states=k**n,
                           candidates=" · ".join("/".join(mlm.tokenizer.convert_ids_to_tokens(c))
                                                 for c in candidates.tolist())))
show_table(run.save_table(pd.DataFrame(chain_rows), "chains"))

# %% [markdown]
# ## 2. The laws a sampler might be said to sample
#
# Per passage and τ: the TV between π_G and the any-order mixture, between the two chain-rule orders, and between
# π_G and the PLL field. All three are zero for conditionals that come from one joint law (the tests check it on
# compatible pairwise models); on the MLM they are not.

# %%
ref_rows = []
for pid, table in zip(passage_ids, tables):
    for tau in taus:
        refs = reference_laws(table, tau)
        ref_rows.append(dict(passage=pid, temperature=tau,
                             glauber_vs_any_order=tv(refs["glauber"], refs["any_order"]),
                             left_to_right_vs_right_to_left=tv(refs["left_to_right"], refs["right_to_left"]),
                             glauber_vs_pll=tv(refs["glauber"], refs["pll"])))
references = run.save_table(pd.DataFrame(ref_rows), "references")
show_table(references.groupby("temperature")[["glauber_vs_any_order", "left_to_right_vs_right_to_left",
                                              "glauber_vs_pll"]].median())

# %% [markdown]
# ## 3. Each sampler's exact law against T and τ
#
# For every passage, τ and T: the exact output law of MDLM (log-linear schedule, T steps), ReMDM with the cap,
# rescale and loop schedules (η, t_on, t_off, α_on as in the parameters), and LLaDA-style confidence remasking at
# min(T, n) steps (n split evenly over the steps) with the untempered confidence of its reference code, the tempered
# one asked for in ML-GSAI/LLaDA#37, and random remasking; its TV to each reference law. A sample costs T forwards
# of the denoiser (LLaDA's min(T, n)).

# %%
rows = []
for pid, table in zip(passage_ids, tables):
    rows += [dict(passage=pid, **r) for r in distance_rows(table, steps, taus, **loop)]
distances = run.save_table(pd.DataFrame(rows), "distances")
at_most = distances[distances.steps == max(steps)]
summary = at_most.pivot_table(index="sampler", columns="temperature", values="tv_glauber", aggfunc="median")
run.save_table(summary.reset_index(), "tv_glauber_median")
show_table(summary)
fig = report.distances_against_steps(distances, taus, "glauber", r"$\pi_G$")
run.save_figure(fig, "tv_glauber")
fig = report.distances_against_steps(distances, taus, "any_order", "any-order mixture")
run.save_figure(fig, "tv_any_order")
glue("sampler_finding", report.reading(distances, taus, max(steps)), display=False)

# %% [markdown]
# :::{glue:figure} fig:tv_glauber
# :name: fig-09-tv-glauber
# :alt: Lines of each sampler's exact total variation distance to the Glauber chain's stationary law against the number of steps, one panel per temperature.
#
# **Distance to the Glauber chain's law.** Median over passages of each sampler's exact TV to π_G against T.
# :::

# %% [markdown]
# :::{glue:figure} fig:tv_any_order
# :name: fig-09-tv-any-order
# :alt: Lines of each sampler's exact total variation distance to the any-order mixture against the number of steps, one panel per temperature.
#
# **Distance to the any-order mixture.** The same laws against the average of the n! chain-rule laws.
# :::

# %% [markdown]
# **What {numref}`fig-09-tv-glauber` and {numref}`fig-09-tv-any-order` show.**
# ```{glue:md} sampler_finding
# :format: myst
# ```

# %% [markdown]
# ## 4. The Monte Carlo samplers draw their exact laws
#
# On the first passage's table at τ = {glue:text}`check_tau_text`, each sampler at T = n runs {glue:text}`draws_text` seeded chains
# (`diffusion.sample`, the same code that runs on any Hugging Face MLM, here reading the table) and its final states
# are tested against its exact law.

# %%
LEVEL = 0.01  # family-wise: each sampler's χ² p-value must be at least LEVEL / (number of samplers)
plans = sampler_plans(n, n, **loop)
first = tables[0]
laws = {name: plan_law(first, plan, check_tau) for name, plan in plans.items()}
off = {name: plan_law(first, plan, 1.25 * check_tau) for name, plan in plans.items()}
pvalues = {name: chi2_pvalue(diffusion.sample(first, n, plan, torch.arange(draws) + run.seed_for("chains", n=n),
                                              check_tau), laws[name], k)
           for name, plan in plans.items()}
hardest = min(plans, key=lambda name: tv(laws[name], off[name]))
mc = run.save_table(pd.DataFrame([dict(sampler=name, p_value=pvalues[name], tv_to_null_law=tv(laws[name], off[name]))
                                  for name in plans]), "monte_carlo")
show_table(mc)


def all_pass(counts: dict) -> bool:
    """The rule: every sampler's χ² p-value against its exact law is at least LEVEL / samplers."""
    return all(chi2_counts_pvalue(c, laws[name]) >= LEVEL / len(plans) for name, c in counts.items())


def iid(rng, wrong: str | None) -> dict:
    return {name: rng.multinomial(draws, (off if name == wrong else laws)[name]).astype(float) for name in plans}


calibration = calibrate(all_pass, lambda rng: iid(rng, None), lambda rng: iid(rng, hardest), replicates,
                        f"{draws} i.i.d. draws from each sampler's exact law (truth) / with {hardest}'s drawn from its "
                        f"law at τ = {1.25 * check_tau:g} (null, TV {tv(laws[hardest], off[hardest]):.3f})",
                        seed=run["seed"])
mc_passes = all(p >= LEVEL / len(plans) for p in pvalues.values())
print(f"Monte Carlo check: {'passes' if mc_passes else 'fails'}; calibration {calibration}")

# %%
largest = distances[distances.steps == max(steps)]
run.conclude(
    claim=f"On the embedded model restricted to its top {k} candidates at n = {n} free sites of {n_docs} passages, "
          "each masked-diffusion sampler's exact output law is computed and set beside the Glauber chain's law and "
          "the any-order mixture; the Monte Carlo samplers draw their exact laws.",
    key_numbers={
        f"TV(sampler's law, π_G) at T = {max(steps)}, median over passages": "; ".join(
            f"τ = {tau:g}: " + ", ".join(f"{name} {v:.3f}" for name, v in
                                          largest[largest.temperature == tau].groupby("sampler").tv_glauber.median()
                                          .sort_values().items()) for tau in taus),
        f"TV(sampler's law, any-order mixture) at T = {max(steps)}, median over passages": "; ".join(
            f"τ = {tau:g}: " + ", ".join(f"{name} {v:.3f}" for name, v in
                                          largest[largest.temperature == tau].groupby("sampler").tv_any_order.median()
                                          .sort_values().items()) for tau in taus),
        "TV(π_G, any-order mixture), median over passages": "; ".join(
            f"τ = {t:g}: {v:.3f}" for t, v in references.groupby("temperature").glauber_vs_any_order.median().items()),
        "TV(left-to-right law, right-to-left law), median over passages": "; ".join(
            f"τ = {t:g}: {v:.3f}" for t, v in
            references.groupby("temperature").left_to_right_vs_right_to_left.median().items()),
    },
    checks=[Check(f"the final states of {draws} seeded chains of each of {len(plans)} samplers (T = {n}, "
                  f"τ = {check_tau:g}, first passage) are draws from that sampler's exact law",
                  "smallest χ² p-value over the samplers", f"passes when ≥ {LEVEL} / {len(plans)}",
                  f"{min(pvalues.values()):.4g}", mc_passes, calibration,
                  to_decide="more draws per sampler: the null sampler's law must fall outside the χ² band")],
    question="book",
    not_shown=f"that these laws speak for the full vocabulary ({k} candidates per site, n = {n} free sites of fixed "
              "passages); ReMDM-loop's frozen phase as a kernel (its stationary law and gap against Glauber's) and the "
              "α_on sweep are not computed here")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
