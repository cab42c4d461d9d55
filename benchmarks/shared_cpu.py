"""The few-chain engine on a shared CPU (issue 35, item 5): its speed-up over the usual loop, quiet and beside one
busy neighbour, under each thread setting that could make it degrade gracefully.

A cell of B = 4 chains of n = 10 tokens at τ = 0.1 (a latency-bound cell: forwards of at most 8 rows of 12 tokens) is
timed with the engine (`gm.glauber`, the default dtype) and with the usual loop (`throughput.usual_loop`), both in
one fresh process per setting, so that OpenMP reads its environment before torch starts:

    threads         torch.set_num_threads(k): every core, or one
    wait policy     OMP_WAIT_POLICY unset (libgomp spins after a parallel region) or PASSIVE (its threads sleep)

"busy" runs one CPU-bound neighbour process (a pure-Python loop) for the whole measurement, as `pytest -n auto` or a
second run would on a 2-core machine. Each row prints steps per second of both loops and their ratio, measured in the
same process minutes apart at most; the ratio, not the absolute rate, is what to compare.

A second table runs two such processes side by side, as `book --workers 2` runs two kernels, with every core each or
with the cores shared out (`fanout.kernel_threads`, what `book --workers N` gives its kernels): the steps per second
of each process, and the two together.

A third table, on the quiet CPU: one thread against every core at B = 2–128 chains, with whether the two give the
same states after the same steps (a hash of the final states).

    .venv/bin/python benchmarks/shared_cpu.py            # about 5 minutes on 2 cores
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CELL = dict(B=4, n=10, tau=0.1)

CHILD = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[2])
from throughput import engine, load_models, seconds_per_step, start_states, usual_loop
cell, threads = json.loads(sys.argv[1]), int(sys.argv[3])
torch.set_num_threads(threads)
mlm = next(iter(load_models(["embedded"], torch.device("cpu")).values()))
x = start_states(mlm, cell["B"], cell["n"])
fast, _ = seconds_per_step(lambda s: engine(mlm, x, s, cell["tau"], 0), 5, 2.0)
slow, _ = seconds_per_step(lambda s: usual_loop(mlm, x, s, cell["tau"], 0), 5, 2.0)
print(json.dumps(dict(engine=1 / fast, usual=1 / slow)))
"""

SWEEP = dict(Bs=[2, 8, 32, 128], n=8, tau=1.0, steps=300)
SWEEP_CHILD = r"""
import hashlib, json, sys, torch
sys.path.insert(0, sys.argv[2])
from throughput import engine, load_models, seconds_per_step, start_states
cell, threads = json.loads(sys.argv[1]), int(sys.argv[3])
torch.set_num_threads(threads)
mlm = next(iter(load_models(["embedded"], torch.device("cpu")).values()))
out = {}
for B in cell["Bs"]:
    x = start_states(mlm, B, cell["n"])
    s, _ = seconds_per_step(lambda k: engine(mlm, x, k, cell["tau"], 0), 3, 1.0)
    states = engine(mlm, x, cell["steps"], cell["tau"], 0)
    out[B] = dict(rate=1 / s, states=hashlib.sha1(states.final.numpy().tobytes()).hexdigest())
print(json.dumps(out))
"""


def sweep(threads: int) -> dict:
    """Per B of SWEEP: steps per second with `threads` torch threads, and a hash of the states after SWEEP's steps."""
    out = subprocess.run([sys.executable, "-c", SWEEP_CHILD, json.dumps(SWEEP), str(HERE), str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(threads: int, passive: bool, busy: bool) -> dict:
    """Steps per second of the engine and of the usual loop in a fresh process with these settings."""
    env = {**os.environ, **({"OMP_WAIT_POLICY": "PASSIVE"} if passive else {})}
    if not passive:
        env.pop("OMP_WAIT_POLICY", None)
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CELL), str(HERE), str(threads)], env=env,
                             capture_output=True, text=True, check=True).stdout
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    return json.loads(out.strip().splitlines()[-1])


def side_by_side(threads: int) -> list[dict]:
    """Steps per second of two processes measuring at once, each with `threads` torch threads."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(CELL), str(HERE), str(threads)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
    return [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]


def main() -> None:
    cores = os.cpu_count() or 1
    print(f"B = {CELL['B']} chains of n = {CELL['n']} tokens at τ = {CELL['tau']}; {cores} cores; load "
          f"{os.getloadavg()[0]:.2f} before the first row")
    print("| threads | wait policy | neighbour | engine steps/s | usual steps/s | engine / usual |")
    print("|---|---|---|---|---|---|")
    for threads in sorted({cores, 1}, reverse=True):
        for passive in (False, True):
            for busy in (False, True):
                r = measure(threads, passive, busy)
                print(f"| {threads} | {'PASSIVE' if passive else 'default'} | {'one busy' if busy else 'quiet'} | "
                      f"{r['engine']:.1f} | {r['usual']:.1f} | {r['engine'] / r['usual']:.2f} |", flush=True)
    print("\nTwo processes side by side (as `book --workers 2` runs two kernels):\n")
    print("| threads each | engine steps/s, each | together | usual steps/s, each | engine / usual |")
    print("|---|---|---|---|---|")
    for threads in sorted({cores, max(1, cores // 2)}, reverse=True):
        both = side_by_side(threads)
        engine, usual = [r["engine"] for r in both], [r["usual"] for r in both]
        print(f"| {threads} | {' and '.join(f'{e:.1f}' for e in engine)} | {sum(engine):.1f} | "
              f"{' and '.join(f'{u:.1f}' for u in usual)} | {sum(engine) / sum(usual):.2f} |", flush=True)
    if cores > 1:
        print(f"\nOne thread against {cores}, quiet (n = {SWEEP['n']}, τ = {SWEEP['tau']}):\n")
        print(f"| B | engine steps/s, 1 thread | {cores} threads | {cores} / 1 | same states after {SWEEP['steps']} steps |")
        print("|---|---|---|---|---|")
        one, every = sweep(1), sweep(cores)
        for B in one:
            print(f"| {B} | {one[B]['rate']:.1f} | {every[B]['rate']:.1f} | {every[B]['rate'] / one[B]['rate']:.2f} | "
                  f"{'yes' if one[B]['states'] == every[B]['states'] else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
