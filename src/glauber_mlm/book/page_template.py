"""The page and the smoke test `glauber-mlm new` writes (see `new`): the current minimal result page, as data.

A page of either kind states one claim and checks it on an exact answer: independent Glauber chains' final states
against the chain's exact stationary law (`exact.stationary`), by the TV null test (`stats.tv_null_test`),
calibrated on i.i.d. draws from that law (the planted truth) and from the law at twice the temperature (the planted
null). The `model` kind runs the chain of the page's model restricted to its top two candidates at a few free sites
of a real passage (`exact.restricted`, as notebook 08 does), so `--model` applies to it; the `exact` kind runs an
Ising chain and has no model parameter. The templates mark what belongs to one kind only with a line `#>model` or
`#>exact` before it and `#<` after it; `__NAME__`, `__NN__`, `__TITLE__` and `__TOPIC__` are the page's name, its
number, its title and its topic (the name without the number).
"""
from __future__ import annotations

KINDS = ("model", "exact")

PAGE = r'''# ---
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
# # __TITLE__
#
#>model
# **Claim.** Glauber dynamics on the model's own chain, restricted to its top two candidates at n free sites of a real
# passage (as in notebook 08), samples that chain's exact stationary law: independent chains end in draws from it.
#<
#>exact
# **Claim.** Glauber dynamics on an Ising chain of n sites samples its exact stationary law: independent chains end
# in draws from it.
#<
#
# **The rule, fixed before the run.** The TV between the chains' final states and the exact law, against that of as
# many i.i.d. draws from it (`stats.tv_null_test`), passes at a p-value of at least `LEVEL`; it is calibrated on
# i.i.d. draws from the exact law (the planted truth) and from the law at twice the temperature (the planted null).

# %% [markdown]
# :::{admonition} The result of this build
# :class: tip
# :name: result-__NN__
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
#>model
#   model: None: the profile's, or a hub name / local folder; device: None: cuda when present, else cpu
#   passages: "embedded" (data/passages.jsonl) | "ms_marco" (online); length: tokens (free sites: positions 1 … n)
#<
#>exact
#   coupling: J of the Ising chain, π(x) ∝ exp(J Σ_i [x_i = x_{i+1}] / τ)
#<
#   seed; sites: n free sites (2^n states); temperature; chains, each from every site at its first value
#   steps: Glauber steps per chain; replicates: planted runs per side of the calibration (≥ 30: a pass can decide)

# %%
import numpy as np
import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm import exact
from glauber_mlm.exact.calibration import state_index
#>model
from glauber_mlm.models.passages import load_passages, sample_passages
#<
from glauber_mlm.pages.checks import Check, calibrate
from glauber_mlm.pages.plots import panels, show_table
from glauber_mlm.pages.run import Run
from glauber_mlm.stats import tv_null_test

PROFILES = {
#>model
    "smoke": dict(model=None, device=None, seed=0, passages="embedded", length=8, sites=3, temperature=1.0,
                  chains=400, steps=100, replicates=30),
    "cpu":   dict(model=None, device=None, seed=0, passages="embedded", length=16, sites=4, temperature=1.0,
                  chains=1000, steps=400, replicates=200),
    "paper": dict(model="bert-base-uncased", device=None, seed=0, passages="ms_marco", length=32, sites=6,
                  temperature=1.0, chains=4000, steps=2000, replicates=200),
#<
#>exact
    "smoke": dict(seed=0, coupling=1.0, sites=4, temperature=1.0, chains=400, steps=100, replicates=30),
    "cpu":   dict(seed=0, coupling=1.0, sites=5, temperature=1.0, chains=1000, steps=400, replicates=200),
    "paper": dict(seed=0, coupling=1.0, sites=8, temperature=1.0, chains=4000, steps=4000, replicates=200),
#<
}
# what `scale` (a dry run) multiplies, each with its least value (30 planted runs: the fewest with which a pass decides)
BUDGETS = dict(chains=50, steps=20, replicates=30)
run = Run("__NAME__", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS, overrides=globals())
n, tau = run.integer("sites", 2, 10), run.positive("temperature")
chains, steps, replicates = run.integer("chains", 2), run.integer("steps", 1), run.integer("replicates", 30)
#>model
mlm = run.load_mlm(run["model"])  # clear error here for an unknown model
L = run.integer("length", n + 1, mlm.max_length)
(context,), _ = sample_passages(mlm, load_passages(run["passages"]), L, 1, seed=run.seed_for("starts", n=L))
sites = torch.arange(1, n + 1)
chain = exact.restricted(mlm, context, sites, exact.candidate_sets(mlm, context, sites, 2))
#<
#>exact
chain = exact.potts_chain(n, q=2, coupling=run["coupling"])
#<
run.show()

# %% tags=["plan"]
# the forward work of this run: `glauber-mlm plan` executes this cell's imports and definitions (one count for both)
#>model
import math

#<
from glauber_mlm.book.plan import Work, show_plan
#>model
from glauber_mlm.exact.restricted import ROWS_PER_FORWARD
#<


def planned_work(p: dict) -> list[Work]:
#>model
    """__NAME__: `exact.candidate_sets` (n rows, one call) and `exact.restricted` (n · 2^(n−1) rows, in calls of
    ROWS_PER_FORWARD per site) on the model; the chains on the restricted chain are table lookups (exact)."""
    n, m, L = p["sites"], p["model"], p["length"]
    return [Work("candidate sets (top two, site masked)", m, L, n, 1),
            Work("restricted chain: every conditional", m, L, n * 2 ** (n - 1),
                 n * math.ceil(2 ** (n - 1) / ROWS_PER_FORWARD)),
            Work("Glauber chains", "restricted chain", n, p["chains"] * p["steps"], p["steps"], kind="exact")]
#<
#>exact
    """__NAME__: the chains on the Ising chain (an exact model: a table lookup per row)."""
    return [Work("Glauber chains", "Ising chain", p["sites"], p["chains"] * p["steps"], p["steps"], kind="exact")]
#<


show_plan(planned_work(run.params))

# %%
# independent chains (seeded by `run.seed_for("chains")`) against the stationary law of the enumerated kernel
P = exact.kernel(chain, tau)
law = exact.stationary(P)
start = torch.zeros(chains, n, dtype=torch.int64)
final = gm.glauber(chain, start, steps, temperature=tau, seed=run.seed_for("chains"), record_every=steps).final
draws = state_index(final, 2).numpy()
table = run.save_table(pd.DataFrame(dict(state=np.arange(law.size), exact=law,
                                         chains=np.bincount(draws, minlength=law.size) / chains)), "law")
fig, (ax,) = panels(1, height=3.0)
table.plot.bar(x="state", y=["exact", "chains"], ax=ax, xlabel="state (base-2 index)", ylabel="probability")
run.save_figure(fig, "law")
show_table(table)

# %% [markdown]
# :::{glue:figure} fig:law
# :name: fig-__NN__-law
# :alt: Bars of the exact stationary probability of every state beside the share of chains that ended in it.
#
# **The chains' final states against the exact law.** Per state: its exact probability, and the chains' share.
# :::

# %%
LEVEL = 0.01  # the check passes when the TV's p-value under i.i.d. draws from the exact law is at least LEVEL
wrong = exact.stationary(exact.kernel(chain, 2 * tau))  # the planted null's law: a sampler at twice the temperature


def passes(states: np.ndarray) -> bool:
    """The rule: the TV between `states` and the exact law is at p ≥ LEVEL under i.i.d. draws from it."""
    return tv_null_test(np.eye(law.size)[states], law, seed=run["seed"])["p_value"] >= LEVEL


test = tv_null_test(np.eye(law.size)[draws], law, seed=run["seed"])
truth, null = (lambda rng: rng.choice(law.size, chains, p=law)), (lambda rng: rng.choice(law.size, chains, p=wrong))
calibration = calibrate(passes, truth, null, replicates, f"{chains} i.i.d. draws from the exact law (truth) / from the "
                        f"law at τ = {2 * tau:g} (null)", seed=run["seed"])
run.conclude(
    claim="Glauber dynamics samples its chain's exact stationary law: independent chains end in draws from it.",
    key_numbers={
        "TV(chains' final states, exact law)": f"{test['tv']:.3f} (i.i.d. draws: median {test['null_median']:.3f})",
        "exact t_mix(1/4) of the chain": f"{exact.mixing_time(P, 0.25, pi=law)} steps (the chains ran {steps})",
    },
    checks=[Check(f"the final states of {chains} chains after {steps} steps are draws from the exact stationary law",
                  "p-value of TV(final states, exact law) under i.i.d. draws from it", f"passes when ≥ {LEVEL}",
                  f"{test['p_value']:.4g}", passes(draws), calibration,
                  to_decide="more chains (the null's draws must fall outside the i.i.d. band), or more replicates")],
    question="book",
    not_shown="that the chain samples its law at other temperatures or sizes than this run's")

# %%
run.rules_history()  # "How these rules came to be", from notebooks/rules.json

# %%
run.finish()
'''

TEST = r'''"""Notebook __NAME__ runs in the smoke profile: its table holds two laws, its check is calibrated and its
outcome follows its rule, and its plan counts the rows its loops evaluate. (Written by `glauber-mlm new`: assert on
your page's own tables and known answers as it grows.)"""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import glauber_mlm as gm
from glauber_mlm import exact
from glauber_mlm.book.plan import CountingModel, plan, resolved_parameters
#>model
from glauber_mlm.models.hf import DEFAULT_MODEL, load_mlm
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.rng import stream
#<
from notebook_runner import execute, read_table

NAME = "__NAME__"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"  # this repository's, wherever it lies
#>model
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")
#<


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("__TOPIC__"), notebooks_dir=NOTEBOOKS)


def template_part(*needed: str) -> None:
    """Skip, naming what to write, a test of the template's own part once the page no longer has it (edited)."""
    p = resolved_parameters(NAME, "smoke", None, {}, notebooks_dir=NOTEBOOKS)
    missing = sorted(set(needed) - set(p))
    if missing:
        pytest.skip(f"{NAME} no longer has the template's parameters {missing}: replace this test with one on your "
                    "page's own tables and loops (tests/test_plan.py counts loops the same way)")


def test_the_table_holds_the_exact_law_and_the_chains_shares(out):
    template_part("sites", "chains")
    law = read_table(out, "law")
    assert np.isclose(law.exact.sum(), 1) and np.isclose(law.chains.sum(), 1) and (law.exact >= 0).all()


def test_the_check_is_calibrated_and_its_outcome_follows_its_rule(out):
    checks = read_table(out, "checks")
    assert len(checks) == 1 and checks.null_replicates.iloc[0] >= 30 and checks.truth_replicates.iloc[0] >= 30
    row = checks.iloc[0]
    assert row.rule_says == ("pass" if float(row.value) >= 0.01 else "fail")
    decided = row.false_pass_upper <= 0.10 if row.rule_says == "pass" else row.false_fail_upper <= 0.20
    assert row.outcome == (row.rule_says if decided else "inconclusive")
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "smoke test, not a result" and result["checks"] == {row.check: row.outcome}


def test_the_plan_counts_the_rows_the_loops_evaluate():
    template_part("sites", "chains", "steps")
    p = resolved_parameters(NAME, "smoke", None, {}, notebooks_dir=NOTEBOOKS)
    works = {w.part: w for w in plan([NAME], "smoke", notebooks_dir=NOTEBOOKS)[NAME]}
    n = p["sites"]
#>model
    mlm = load_mlm(device="cpu")
    (context,), _ = sample_passages(mlm, load_passages(p["passages"]), p["length"], 1,
                                    seed=stream(p["seed"], "starts", n=p["length"]))
    picked, built = CountingModel(mlm), CountingModel(mlm)
    sites = torch.arange(1, n + 1)
    chain = exact.restricted(built, context, sites, exact.candidate_sets(picked, context, sites, 2))
    for counted, part in ((picked, "candidate sets (top two, site masked)"),
                          (built, "restricted chain: every conditional")):
        assert (counted.rows, counted.calls) == (works[part].rows, works[part].calls), part
#<
#>exact
    chain = exact.potts_chain(n, q=2, coupling=p["coupling"])
#<
    chains = CountingModel(chain)
    gm.glauber(chains, torch.zeros(p["chains"], n, dtype=torch.int64), p["steps"], record_every=p["steps"])
    assert (chains.rows, chains.calls) == (works["Glauber chains"].rows, works["Glauber chains"].calls)
'''


def render(template: str, name: str, kind: str, title: str) -> str:
    """`template` for page `name` of `kind` ("model" or "exact"): the lines of the other kind dropped, the markers
    removed and the placeholders filled."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    kept, block = [], None
    for line in template.splitlines(keepends=True):
        marker = line.strip()
        if marker in ("#>model", "#>exact"):
            block = marker[2:]
        elif marker == "#<":
            block = None
        elif block in (None, kind):
            kept.append(line)
    text = "".join(kept)
    for key, value in (("__NAME__", name), ("__NN__", name[:2]), ("__TITLE__", title), ("__TOPIC__", name[3:])):
        text = text.replace(key, value)
    return text
