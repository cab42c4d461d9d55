"""The roofline of one MLM forward: a floor for its time from FLOPs and from the bytes of weights it reads.

A forward of r rows of n tokens does r·F(n) matmul FLOPs and reads every weight once (W bytes), so on a
machine of peak P FLOP/s and memory bandwidth β B/s it takes at least max(r·F(n)/P, W/β). Below the knee
r = W·P/(β·F(n)) the floor does not grow with r: a narrow batch is memory-bound, and its extra rows are free.
This module gives the floors the benchmark judges each measured step against, the FLOP count `glauber-mlm plan`
uses, and the engine's speculation knee (`speculation_knee`), computed from the model's shape and nominal device
constants rather than timed, so that the engine's batch shapes are the same on every run.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from functools import cache

import torch


@dataclass(frozen=True)
class Shape:
    """The config numbers that set a forward's FLOPs: width h, feed-forward width I, layers, vocabulary V."""

    hidden: int
    intermediate: int
    layers: int
    vocab: int
    source: str


def shape_from_config(config: dict, source: str) -> Shape:
    """h, I, layers, V from a config.json (BERT, RoBERTa, DistilBERT, ModernBERT key names).

    ModernBERT's GeGLU feed-forward (h → 2I, I → h: 6hI per token) is counted as I' = 1.5 I, so 4hI' holds."""
    def pick(*keys: str) -> int:
        for key in keys:
            if isinstance(config.get(key), int):
                return config[key]
        raise ValueError(f"{source}: none of {', '.join(keys)} in the config: pass a model folder whose config.json "
                         "has the width, feed-forward width, layers and vocabulary of a BERT-like encoder.")

    inter = pick("intermediate_size", "hidden_dim", "d_ff")
    if config.get("model_type") == "modernbert":
        inter = inter * 3 // 2
    return Shape(pick("hidden_size", "dim", "d_model"), inter, pick("num_hidden_layers", "n_layers", "num_layers"),
                 pick("vocab_size"), source)


def forward_flops(shape: Shape, n: int, head: bool = True) -> float:
    """Matmul FLOPs of one row of n tokens: layers · L · (8h² + 4hI + 4Lh) + [2h² + 2hV at the site], L = n + 2."""
    h, L = shape.hidden, n + 2
    encoder = shape.layers * L * (8 * h * h + 4 * h * shape.intermediate + 4 * L * h)
    return encoder + (2 * h * h + 2 * h * shape.vocab if head else 0)


def weight_bytes(shape: Shape, itemsize: int) -> float:
    """Bytes of the matmul weights one forward reads: layers · (4h² + 2hI) + h² + hV (the head at the site), × itemsize."""
    h = shape.hidden
    return itemsize * (shape.layers * (4 * h * h + 2 * h * shape.intermediate) + h * h + h * shape.vocab)


@dataclass(frozen=True)
class Machine:
    """Measured dense-matmul peak (FLOP/s) in one dtype and memory read bandwidth (B/s) of a device."""

    peak: float
    bandwidth: float
    dtype: str
    device: str


def median_seconds(fn, device: torch.device, reps: int = 5) -> float:
    """Median wall time of `fn()` over `reps` calls after one warm-up call (CUDA synchronised around each)."""
    fn()
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@cache
def measure_machine(device: str = "cpu", dtype: torch.dtype = torch.float32, size: int = 1024,
                    read_mib: int = 256) -> Machine:
    """Peak: a (size × size) @ (size × size) matmul in `dtype`; bandwidth: a sum over `read_mib` MiB (a read that
    no cache holds). Medians of five timings after a warm-up; cached per process."""
    dev = torch.device(device)
    a, b = torch.randn(size, size, device=dev).to(dtype), torch.randn(size, size, device=dev).to(dtype)
    peak = 2 * size**3 / median_seconds(lambda: a @ b, dev)
    buffer = torch.ones(read_mib * 2**18, device=dev)  # float32: 4 bytes each
    bandwidth = buffer.numel() * 4 / median_seconds(buffer.sum, dev)
    return Machine(peak, bandwidth, str(dtype).removeprefix("torch."), device)


def floors(shape: Shape, rows: int, n: int, machine: Machine, itemsize: int) -> tuple[float, float]:
    """(FLOP floor, memory floor) in seconds of one forward of `rows` rows of n tokens with the head at the site."""
    return rows * forward_flops(shape, n) / machine.peak, weight_bytes(shape, itemsize) / machine.bandwidth


@dataclass(frozen=True)
class Nominal:
    """A device type's nominal rates for the speculation knee: the per-row FLOP rate of a narrow forward per dtype,
    the weight-read bandwidth (B/s) and a fixed cost per layer and forward (s: dispatch, the step's own work)."""

    rate: dict[torch.dtype, float]
    bandwidth: float
    per_layer: float


# Nominal, never measured at run time: a timed knee varied between runs (4.5 to 23 rows for one model and dtype on
# one machine), and with it the batch widths, whose float rounding then changed the draws. CPU: the embedded
# model's steps on the project's 2-core CPUs (1.2 ms bf16, 1.7 ms fp32 per extra row of 16 tokens; 7 and 12 ms of
# fixed cost per step; `benchmarks/throughput.py --sections roofline`). CUDA: an H100-class datasheet, unmeasured.
NOMINAL = {
    "cpu": Nominal({torch.float32: 130e9, torch.bfloat16: 180e9, torch.float16: 130e9}, 18e9, 1.5e-3),
    "cuda": Nominal({torch.float32: 50e12, torch.bfloat16: 400e12, torch.float16: 400e12}, 2e12, 1e-4),
}


def speculation_knee(shape: Shape, n: int, device_type: str, dtype: torch.dtype) -> float:
    """A forward's fixed cost in rows of n tokens: (per_layer · (layers + 1) + W/β) / (F(n)/rate), to a power of two.

    The engine evaluates sites ahead while B·k rows stay within about twice this (`sampling.speculation_widths`).
    0 on a device type without nominal constants (no speculation)."""
    nominal = NOMINAL.get(device_type)
    if nominal is None or dtype not in nominal.rate:
        return 0.0
    fixed = nominal.per_layer * (shape.layers + 1) + weight_bytes(shape, dtype.itemsize) / nominal.bandwidth
    knee = fixed / (forward_flops(shape, n) / nominal.rate[dtype])
    return float(2 ** round(math.log2(knee))) if knee >= 0.5 else 0.0
