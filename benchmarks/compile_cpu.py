"""`torch.compile` (inductor, weights frozen) of the lean encoder on a CPU against the eager forward (issue 16).

For the embedded model, per dtype and small batch B × n (the few-chain regime), it times one step's conditionals
(`conditional_probabilities`: encoder, head at the site, float64 softmax) two ways, alternating them in rounds so that
both see the same machine load, and prints the medians, their ratio, the compile time (the first call of each length)
and the largest total variation between the two steps' laws:
- eager, as the engine runs it (`encoder.hidden_states`; bf16: Linear weights pre-packed for oneDNN);
- compiled: `encoder.hidden_states` through `torch.compile` with inductor's `freezing` (the weights folded in as
  constants and packed by inductor) and `cpp_wrapper`, the batch dimension dynamic, so one graph serves every batch
  width of a length. The head stays eager and packed, as in the engine: its product streams the V × h matrix from
  memory, which fusing cannot shorten.

    TORCHINDUCTOR_COMPILE_THREADS=1 .venv/bin/python benchmarks/compile_cpu.py | tee benchmarks/results/compile_cpu.txt
"""
from __future__ import annotations

import copy
import statistics
import time

import torch
import torch._inductor.config as inductor

import glauber_mlm as gm
from glauber_mlm.models import encoder, hf
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


def frozen_hidden_states():
    """`encoder.hidden_states` compiled with frozen weights and a dynamic batch dimension."""
    compiled = torch.compile(encoder.hidden_states, dynamic=None)

    def run(base_model, ids):
        torch._dynamo.maybe_mark_dynamic(ids, 0)
        with inductor.patch(freezing=True, cpp_wrapper=True):
            return compiled(base_model, ids)

    return run


def traceable(m: hf.MLMAdapter, dt: torch.dtype) -> torch.nn.Module:
    """The engine's weights for `dt` with plain encoder Linears (dynamo cannot trace oneDNN-packed ones) and the head
    packed as the engine packs it."""
    if dt == torch.float32:
        return m.weights_for(dt)  # only the vocabulary projection is packed there, and the head is not compiled
    m.pack_weights = False
    variant = copy.deepcopy(m.weights_for(dt))
    m.pack_weights = True
    hf._pack_linears(hf._site_head(variant), dt)
    return variant


def main() -> None:
    m = gm.load_mlm(None)
    assert m.lean, "the compiled variant replaces the lean encoder"
    ids = torch.nonzero(m.support).flatten()
    g = torch.Generator().manual_seed(0)
    compiled_hidden, eager_hidden = frozen_hidden_states(), hf.hidden_states
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads; medians of {ROUNDS} alternating rounds of "
          f"{CALLS} calls")
    for dt in (torch.bfloat16, torch.float32):
        key = (dt, m.lowp_mode, m.pack_weights)
        eager, variant = m.weights_for(dt), traceable(m, dt)
        for B, n in CELLS:
            x = ids[torch.randint(ids.numel(), (B, n), generator=g)]
            sites, tau = torch.arange(B) % n, torch.ones(B)

            def step(module, hidden):
                m._lowp[key], hf.hidden_states = module, hidden
                try:
                    return conditional_probabilities(m, x, sites, tau, dt)
                finally:
                    m._lowp[key], hf.hidden_states = eager, eager_hidden

            start = time.perf_counter()
            fast = step(variant, compiled_hidden)
            first = time.perf_counter() - start
            tv = float(0.5 * (step(eager, eager_hidden) - fast).abs().sum(-1).max())
            e, c = [], []
            for _ in range(ROUNDS):
                e.append(median_ms(lambda: step(eager, eager_hidden), CALLS))
                c.append(median_ms(lambda: step(variant, compiled_hidden), CALLS))
            e, c = statistics.median(e), statistics.median(c)
            print(f"{str(dt).removeprefix('torch.'):9s} B={B} n={n}: step eager {e:.2f} ms, compiled {c:.2f} ms "
                  f"({e / c:.2f}x; first call {first:.1f} s); largest TV to eager {tv:.1e}", flush=True)


if __name__ == "__main__":
    main()
