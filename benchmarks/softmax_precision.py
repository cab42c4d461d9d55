"""The chains' softmax in float64 (the engine's choice) against float32 ways of avoiding subnormals (issue 16).

`conditionals.conditional_probabilities` takes the softmax of ℓ/τ in float64: at low τ most of the vocabulary sits far
below the mode, where float32 exp returns subnormals, slow and meaningless. At high τ float64 costs more than float32.
This times, on random logits of the embedded model's vocabulary size (V = 30,522) and alternating the variants in one
run (ratios hold on a loaded machine), per batch B and temperature τ:

- `float64`: the engine's softmax;
- `float32`: the plain float32 softmax (subnormals at low τ);
- `float32, cut`: float32 with every ℓ/τ more than 87 nats below the mode set to −∞ (exp never subnormal; changes the
  law by < 1e-33);
- `float32 where safe`: float32 when the batch's spread (max − min finite logit) / min τ is below 87, else float64,
  the spread computed per call;

and prints each variant's median ms and float64's time over it (> 1: the variant is faster), with the largest TV
distance of each variant's law to float64's.

    .venv/bin/python benchmarks/softmax_precision.py
"""
from __future__ import annotations

import statistics
import time

import torch

V, FLOOR, REPS, CALLS = 30_522, -87.0, 5, 20


def float64(l, t):
    return torch.softmax(l.double() / t.double().unsqueeze(-1), -1)


def float32(l, t):
    return torch.softmax(l / t.float().unsqueeze(-1), -1)


def float32_cut(l, t):
    z = (l - l.amax(-1, keepdim=True)) / t.float().unsqueeze(-1)
    p = torch.exp(z.masked_fill_(z < FLOOR, float("-inf")))
    return p / p.sum(-1, keepdim=True)


def float32_where_safe(l, t):
    spread = (l.amax(-1) - torch.nan_to_num(l, neginf=float("inf")).amin(-1)).max()
    return float32(l, t) if float(spread) / float(t.min()) < -FLOOR else float64(l, t)


VARIANTS = {"float64": float64, "float32": float32, "float32, cut": float32_cut, "float32 where safe": float32_where_safe}


def main() -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    print("| B | τ | " + " | ".join(f"{k} (ms)" for k in VARIANTS) + " | " +
          " | ".join(f"float64 / {k}" for k in list(VARIANTS)[1:]) + " | largest TV to float64 |")
    print("|---" * (2 + 2 * len(VARIANTS) - 1 + 1) + "|")
    for B in (2, 16, 128):
        logits = torch.randn(B, V, generator=g) * 4  # the spread of a small MLM's logits
        logits[:, :100] = float("-inf")  # special and unused ids: off the support
        for tau in (0.1, 2.0):
            t = torch.full((B,), tau, dtype=torch.float64)
            times = {k: [] for k in VARIANTS}
            for _ in range(REPS):
                for name, fn in VARIANTS.items():
                    start = time.perf_counter()
                    for _ in range(CALLS):
                        fn(logits, t)
                    times[name].append((time.perf_counter() - start) / CALLS * 1e3)
            ms = {k: statistics.median(v) for k, v in times.items()}
            ref = float64(logits, t)
            tv = max(0.5 * (fn(logits, t).double() - ref).abs().sum(-1).max().item() for fn in VARIANTS.values())
            print(f"| {B} | {tau:g} | " + " | ".join(f"{ms[k]:.2f}" for k in VARIANTS) + " | " +
                  " | ".join(f"{ms['float64'] / ms[k]:.2f}" for k in list(VARIANTS)[1:]) + f" | {tv:.1e} |")


if __name__ == "__main__":
    main()
