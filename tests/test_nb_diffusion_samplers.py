"""Notebook 09_diffusion_samplers runs in the smoke profile: its tables hold exact laws' distances with the known
equalities (LLaDA with one commit per step is the any-order mixture; every sampler at T = 1 draws the product of the
fully masked state's marginals), its check is calibrated and its outcome follows its rule, and its plan counts the
forwards its loops evaluate."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from glauber_mlm import diffusion, exact
from glauber_mlm.book.plan import CountingModel, plan, resolved_parameters
from glauber_mlm.models.hf import DEFAULT_MODEL, load_mlm
from glauber_mlm.models.passages import load_passages, sample_passages
from glauber_mlm.rng import stream
from notebook_runner import execute, read_table

NAME = "09_diffusion_samplers"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"  # this repository's, wherever it lies
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("diffusion_samplers"), notebooks_dir=NOTEBOOKS)


@pytest.mark.slow  # shares the smoke book's run of the page
def test_the_distances_hold_the_known_equalities(out):
    p = resolved_parameters(NAME, "smoke", None, {}, notebooks_dir=NOTEBOOKS)
    distances = read_table(out, "distances")
    assert len(distances) == p["documents"] * len(p["temperatures"]) * len(p["steps"]) * 7
    one_commit = distances[(distances.sampler == "LLaDA random") & (distances.steps >= p["sites"])]
    assert (one_commit.tv_any_order < 1e-9).all()
    first = distances[distances.steps == 1]  # one step: every site drawn at once from the empty state's marginals
    spread = first.groupby(["passage", "temperature"]).tv_glauber.agg(np.ptp)
    assert (spread < 1e-9).all()
    refs = read_table(out, "references")
    assert (refs.glauber_vs_any_order > 0).all() and ((refs.left_to_right_vs_right_to_left > 0)).all()


@pytest.mark.slow  # shares the smoke book's run of the page
def test_the_check_is_calibrated_and_its_outcome_follows_its_rule(out):
    checks = read_table(out, "checks")
    assert len(checks) == 1 and checks.null_replicates.iloc[0] >= 30 and checks.truth_replicates.iloc[0] >= 30
    row = checks.iloc[0]
    mc = read_table(out, "monte_carlo")
    assert float(row.value) == pytest.approx(mc.p_value.min(), rel=1e-3)
    assert row.rule_says == ("pass" if float(row.value) >= 0.01 / len(mc) else "fail")
    decided = row.false_pass_upper <= 0.10 if row.rule_says == "pass" else row.false_fail_upper <= 0.20
    assert row.outcome == (row.rule_says if decided else "inconclusive")
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "smoke test, not a result" and result["checks"] == {row.check: row.outcome}


def test_the_plan_counts_the_forwards_the_loops_evaluate():
    p = resolved_parameters(NAME, "smoke", None, {}, notebooks_dir=NOTEBOOKS)
    works = {w.part: w for w in plan([NAME], "smoke", notebooks_dir=NOTEBOOKS)[NAME]}
    n, k = p["sites"], p["candidates"]
    mlm = load_mlm(device="cpu")
    contexts, _ = sample_passages(mlm, load_passages(p["passages"]), p["length"], p["documents"],
                                  seed=stream(p["seed"], "starts", n=p["length"]))
    picked = CountingModel(mlm)
    rows = calls = 0
    masked_logits = mlm.masked_logits

    def counted(partial, dtype=None):
        nonlocal rows, calls
        rows, calls = rows + partial.shape[0], calls + 1
        return masked_logits(partial, dtype)

    mlm.masked_logits = counted
    sites = torch.arange(1, n + 1)
    for context in contexts:
        candidates = exact.candidate_sets(picked, context, sites, k)
        diffusion.partial_table(diffusion.RestrictedDenoiser(mlm, context, sites, candidates), n, k)
    part = works["candidate sets (top k, site masked)"]
    assert (picked.rows, picked.calls) == (part.rows, part.calls)
    part = works["partial tables: every partial state's conditionals"]
    assert (rows, calls) == (part.rows, part.calls)
