"""The Glauber engine against an earlier commit of itself, side by side in one run (issue 16).

For each cell (chains B × tokens n, temperature τ, forward dtype) it times `glauber` on the embedded model from
the same real passages and seeds, in the working tree and in the baseline commit (its `src/` exported with
`git archive`), alternating the two in fresh processes `--reps` times, and prints the median ms per step of
each and their ratio (baseline / now: > 1 is a speed-up), into `--out` (CSV) and the same table in Markdown beside
it (pasted into book/performance.md). Alternating in one run makes the ratio hold on a loaded machine, where
absolute times do not.

In the working tree's processes each cell is also run once more under `torch.profiler` (the baseline's are not
profiled): `kernels` is the time per step the working tree spends in
the matmul and attention kernels (`KERNELS`), what a step would cost if every other operation and Python cost
nothing. Where it exceeds half the baseline's step, no change outside those kernels can make the cell 2× faster.

    .venv/bin/python benchmarks/compare.py --baseline 169ac73             # the small-batch cells
    .venv/bin/python benchmarks/compare.py --baseline HEAD~3 --cells 64x32 --taus 1.0 --reps 5
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
KERNELS = r"_linear_pointwise|addmm|^aten::mm$|^aten::bmm$|scaled_dot_product"  # the matmul and attention operators

# one process times every cell for one tree: the model is loaded once, each cell warmed up before it is timed
TIMER = r"""
import json, re, sys, time, torch
from torch.profiler import profile
import glauber_mlm as gm
from glauber_mlm.models.passages import load_passages
cells, steps, kernels = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[4] and re.compile(sys.argv[4])
torch.set_num_threads(int(sys.argv[3]))
texts = [r["text"] for r in load_passages("embedded")[:400]]
models = {}
out = []
for B, n, tau, dtype in cells:
    mlm = models.setdefault(dtype, gm.load_mlm(dtype=getattr(torch, dtype) if dtype != "default" else None))
    x = mlm.encode(texts, n)[0][:B]
    gm.glauber(mlm, x, 8, temperature=tau, seed=1)
    start = time.perf_counter()
    gm.glauber(mlm, x, steps, temperature=tau, seed=1)
    ms, own = 1e3 * (time.perf_counter() - start) / steps, None
    if kernels:
        with profile() as prof:
            gm.glauber(mlm, x, steps, temperature=tau, seed=1)
        own = sum(e.self_cpu_time_total for e in prof.key_averages() if kernels.search(e.key)) / steps / 1e3
    out.append([ms, own])
print(json.dumps(out))
"""


def export(ref: str, into: Path) -> Path:
    """`ref`'s src/ under `into`, beside a link to the working tree's data/ (the same model and passages)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "data").symlink_to(REPO / "data")
    return into / "src"


def time_cells(src: Path, cells: list, steps: int, threads: int, profiled: bool) -> list[list[float | None]]:
    """[ms per step, ms per step in the matmul and attention kernels (None unless `profiled`)] per cell, for the tree
    whose src/ is `src`."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", TIMER, json.dumps(cells), str(steps), str(threads),
                           KERNELS if profiled else ""], env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="a git commit (the engine before the change)")
    ap.add_argument("--cells", nargs="+", default=["1x10", "4x10", "8x16"], help="BxN cells")
    ap.add_argument("--taus", nargs="+", type=float, default=[0.1, 1.0])
    ap.add_argument("--dtypes", nargs="+", default=["default", "float32"], help="default: the model's (bf16 where native)")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=torch_threads())
    ap.add_argument("--out", type=Path, default=RESULTS / "compare.csv")
    args = ap.parse_args(argv)
    cells = [[int(c.split("x")[0]), int(c.split("x")[1]), tau, dtype]
             for dtype in args.dtypes for c in args.cells for tau in args.taus]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": export(args.baseline, Path(tmp)), "now": REPO / "src"}
        times = {name: [] for name in trees}
        for rep in range(args.reps):
            for name in (trees if rep % 2 == 0 else reversed(list(trees))):
                times[name].append(time_cells(trees[name], cells, args.steps, args.threads, profiled=name == "now"))
    rows = []
    for c, (B, n, tau, dtype) in enumerate(cells):
        base, now, kernels = (statistics.median(times[name][r][c][k] for r in range(args.reps))
                              for name, k in (("baseline", 0), ("now", 0), ("now", 1)))
        rows.append(dict(B=B, n=n, tau=tau, dtype=dtype, baseline_ms_per_step=base, now_ms_per_step=now,
                         speedup=base / now, now_kernel_ms=kernels))
    table = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    args.out.with_suffix(".md").write_text(markdown(table))
    print(f"baseline {args.baseline} against the working tree; medians of {args.reps} alternating runs of "
          f"{args.steps} steps, {args.threads} threads")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return table


def markdown(table: pd.DataFrame) -> str:
    """The table in Markdown with short headers (legible on a phone): ms per step before and now, their ratio, and the
    kernels' share of now (a table without it, from an earlier run, is written without the column)."""
    short = table.rename(columns=dict(tau="τ", baseline_ms_per_step="before (ms)", now_ms_per_step="now (ms)",
                                      speedup="speed-up", now_kernel_ms="kernels (ms)"))
    return short.to_markdown(index=False, floatfmt=".2f") + "\n"


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
