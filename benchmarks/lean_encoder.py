"""The lean encoder (`glauber_mlm.models.encoder`) against transformers' own forward, in one process (issue 16).

For the embedded model and a bert-base-sized BERT with random weights, per dtype and small cell B × n, it times
`glauber` (τ = 1, one site per chain per forward) with `MLMAdapter.lean` on and off, alternating the two in four
rounds so that both see the same machine load, and prints the medians and their ratio. The two give identical
trajectories (`tests/test_performance_exactness.py`), so only the time differs.

    .venv/bin/python benchmarks/lean_encoder.py | tee benchmarks/results/lean_encoder.txt
"""
from __future__ import annotations

import statistics
import time

import torch

import glauber_mlm as gm
from throughput import load_models, start_states

CELLS, ROUNDS = ((1, 10), (4, 10)), 4


def main() -> None:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; medians of {ROUNDS} alternating rounds")
    for name, mlm in load_models(["embedded", "bert-base-random"], torch.device("cpu")).items():
        steps = 40 if name.startswith("embedded") else 8
        for dtype in (torch.bfloat16, torch.float32):
            for B, n in CELLS:
                x = start_states(mlm, B, n)
                gm.glauber(mlm, x, 3, temperature=1.0, seed=1, speculate=1, dtype=dtype)  # warm-up
                times = {True: [], False: []}
                for r in range(ROUNDS):
                    for lean in (True, False) if r % 2 == 0 else (False, True):
                        mlm.lean = lean
                        start = time.perf_counter()
                        gm.glauber(mlm, x, steps, temperature=1.0, seed=1, speculate=1, dtype=dtype)
                        times[lean].append((time.perf_counter() - start) / steps * 1e3)
                mlm.lean = True
                library, lean = statistics.median(times[False]), statistics.median(times[True])
                print(f"{name} {str(dtype).removeprefix('torch.')} B={B} n={n}: library forward {library:.1f} ms, "
                      f"lean {lean:.1f} ms per step, ratio {library / lean:.2f}", flush=True)


if __name__ == "__main__":
    main()
