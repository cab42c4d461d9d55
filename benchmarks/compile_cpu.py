"""`torch.compile` (inductor) of the encoder on a CPU, against the engine's eager forward (issue 16).

For the embedded model, per dtype and small batch B × n (the few-chain, low-temperature regime), it times one step's
conditionals (`conditional_probabilities`: encoder, head at the site, float64 softmax) two ways, alternating them in
rounds so that both see the same machine load, and prints the medians, their ratio, the compile time of the shape
(the first call) and the largest difference of the two steps' probabilities:
- eager, as the engine runs it (bf16: Linear weights pre-packed for oneDNN);
- with the encoder replaced by `torch.compile(encoder, dynamic=False)` of the same weights (unpacked: dynamo cannot
  trace the pre-packed Linears). Every new batch shape compiles again, and the engine's batch width changes as pairs
  meet and as speculation widens.

    TORCHINDUCTOR_COMPILE_THREADS=1 .venv/bin/python benchmarks/compile_cpu.py
"""
from __future__ import annotations

import copy
import statistics
import time

import torch

import glauber_mlm as gm
from glauber_mlm.conditionals import conditional_probabilities

CELLS = ((1, 10), (4, 10), (8, 16))
ROUNDS, CALLS = 5, 20


def median_ms(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    m = gm.load_mlm(None)
    ids = torch.nonzero(m.support).flatten()
    g = torch.Generator().manual_seed(0)
    for dt in (torch.bfloat16, torch.float32):
        key = (dt, m.lowp_mode, m.pack_weights)
        eager = m.weights_for(dt)
        m.pack_weights = False
        variant = copy.deepcopy(m.weights_for(dt))  # unpacked weights, its own copy
        m.pack_weights = True
        prefix = variant.base_model_prefix
        setattr(variant, prefix, torch.compile(getattr(variant, prefix), dynamic=False))
        for B, n in CELLS:
            x = ids[torch.randint(ids.numel(), (B, n), generator=g)]
            sites, tau = torch.arange(B) % n, torch.ones(B)

            def step(module):
                m._lowp[key] = module
                return conditional_probabilities(m, x, sites, tau, dt)

            start = time.perf_counter()
            fast = step(variant)
            first = time.perf_counter() - start
            diff = float((step(eager) - fast).abs().max())
            e, c = [], []
            for _ in range(ROUNDS):
                e.append(median_ms(lambda: step(eager), CALLS))
                c.append(median_ms(lambda: step(variant), CALLS))
            e, c = statistics.median(e), statistics.median(c)
            print(f"{str(dt).removeprefix('torch.'):9s} B={B} n={n}: step eager {e:.2f} ms, compiled encoder {c:.2f} ms "
                  f"({e / c:.2f}x; compile {first:.1f} s); max |probability diff| {diff:.2e}", flush=True)
        m._lowp[key] = eager


if __name__ == "__main__":
    main()
