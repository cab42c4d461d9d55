"""Markdown tables of the benchmark results (benchmarks/results/*.csv), for book/performance.md.

    .venv/bin/python benchmarks/report.py [--tag gpu]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"


def md(df: pd.DataFrame, floats: str = "{:.3g}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        cells = [floats.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="")
    ap.add_argument("--dir", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=None, help="also draw the throughput-against-batch plot here")
    args = ap.parse_args()
    tag = f"_{args.tag}" if args.tag else ""
    d = args.dir

    def read(name):
        path = d / f"{name}{tag}.csv"
        return pd.read_csv(path) if path.is_file() else None

    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    peak = read("matmul_peak")
    if peak is not None:
        print("### Matmul peak\n")
        print(md(peak[["dtype", "size", "gflops", "date", "load_avg_1min", "threads"]], "{:.0f}"), "\n")
    files = sorted(d.glob(f"throughput{tag}*.csv")) if tag else sorted(d.glob("throughput*.csv"))
    files = [f for f in files if "gpu" not in f.name or "gpu" in tag]
    grid = pd.concat([pd.read_csv(f).assign(file=f.name) for f in files]) if files else None
    if grid is not None and args.plot:
        # a cell measured twice (a stopped run and its rerun): keep the later file's row
        grid = grid.drop_duplicates(["model", "B", "n"], keep="last").sort_values(["model", "n", "B"])
        from throughput import plot

        plot(grid, args.plot)
        print(f"plot: {args.plot}\n")
    if grid is not None:
        print("### Engine against the usual loop\n")
        g = grid.copy()
        for c in [c for c in g.columns if c.endswith("_mfu") or c.endswith("_mfu_cpu")]:
            g[c] = (100 * g[c]).round(1)
        tables = [
            ("Wall clock (token-resamples per second; MFU against the matmul peak measured beside the cell):",
             {"usual_fp32_tok_per_s": "usual fp32", "engine_fp32_tok_per_s": "engine fp32",
              "engine_bf16_tok_per_s": "engine bf16", "speedup_fp32": "× fp32", "speedup_bf16": "× bf16",
              "peak_fp32_gflops": "peak fp32 GF/s", "peak_bf16_gflops": "peak bf16 GF/s",
              "engine_fp32_mfu": "MFU fp32 %", "engine_bf16_mfu": "MFU bf16 %", "load_avg_1min": "load"}),
            ("CPU time of the benchmark process (token-resamples per CPU-second; less sensitive to other jobs):",
             {"usual_fp32_tok_per_cpu_s": "usual fp32", "engine_fp32_tok_per_cpu_s": "engine fp32",
              "engine_bf16_tok_per_cpu_s": "engine bf16", "speedup_fp32_cpu": "× fp32", "speedup_bf16_cpu": "× bf16",
              "peak_fp32_gflops_per_cpu_s": "peak fp32 GF/cpu-s", "peak_bf16_gflops_per_cpu_s": "peak bf16 GF/cpu-s",
              "engine_fp32_mfu_cpu": "MFU fp32 %", "engine_bf16_mfu_cpu": "MFU bf16 %"}),
        ]
        for title, names in tables:
            cols = ["model", "n", "B"] + [c for c in names if c in g.columns]
            if len(cols) > 3:
                print(title + "\n")
                print(md(g[cols].rename(columns=names)), "\n")
    for name, title in (("ablation", "Ablation"), ("bf16_quality", "bf16 against fp32 conditionals (TV)"),
                        ("speculation", "Speculative sites"), ("coupling", "Coupling runner"),
                        ("rectangle", "Rectangle test")):
        df = read(name)
        if df is not None:
            print(f"### {title}\n")
            print(md(df), "\n")


if __name__ == "__main__":
    main()
