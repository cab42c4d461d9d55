"""Where one Glauber step's time goes: the operators of the engine's step, per call and per step (issue 16).

For the embedded model (or `--model`), per dtype and cell B × n, it runs `glauber` (τ = 2, one site per chain per
forward) under `torch.profiler` and prints, for the operators that take most of the step, the calls per step, the
mean time per call and the time per step, beside the wall time per step. At a few dozen rows most operators cost a
fixed time per call, whatever the rows: that, not the arithmetic, is what a small step spends.

    .venv/bin/python benchmarks/step_profile.py                      # B × n = 4 × 10, bf16 and fp32
    .venv/bin/python benchmarks/step_profile.py --cells 1x10 8x16 --dtypes float32
"""
from __future__ import annotations

import argparse
import time

import torch
from torch.profiler import profile

import glauber_mlm as gm
from glauber_mlm.models.passages import load_passages

STEPS, TOP = 50, 10


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a model folder or hub name (default: the embedded model)")
    ap.add_argument("--cells", nargs="+", default=["4x10"], help="BxN cells")
    ap.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"])
    args = ap.parse_args(argv)
    texts = [r["text"] for r in load_passages("embedded")[:400]]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {STEPS} steps at τ = 2, speculate=1")
    for dtype in args.dtypes:
        mlm = gm.load_mlm(args.model, device="cpu", dtype=getattr(torch, dtype))
        for cell in args.cells:
            B, n = (int(v) for v in cell.split("x"))
            x = mlm.encode(texts, n)[0][:B]
            gm.glauber(mlm, x, 10, temperature=2.0, seed=1, speculate=1)  # warm-up: weight copies, kernels
            start = time.perf_counter()
            gm.glauber(mlm, x, STEPS, temperature=2.0, seed=1, speculate=1)
            wall = (time.perf_counter() - start) / STEPS * 1e3
            with profile() as prof:
                gm.glauber(mlm, x, STEPS, temperature=2.0, seed=1, speculate=1)
            ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
            total = sum(e.self_cpu_time_total for e in ops) / STEPS / 1e3
            print(f"\n{mlm.name} {dtype}, B = {B}, n = {n}: {wall:.2f} ms per step unprofiled; the profiler counts "
                  f"{total:.2f} ms of operator time per step (its own overhead included)")
            print(f"{'operator':<55} {'calls/step':>10} {'µs/call':>9} {'ms/step':>8}")
            for e in ops[:TOP]:
                print(f"{e.key[:55]:<55} {e.count / STEPS:>10.1f} {e.self_cpu_time_total / e.count:>9.1f} "
                      f"{e.self_cpu_time_total / STEPS / 1e3:>8.2f}")


if __name__ == "__main__":
    main()
