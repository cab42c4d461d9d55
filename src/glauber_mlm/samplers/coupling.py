"""Maximal coupling and coupled Glauber dynamics: coupling times bound the distance to stationarity.

Coupled step: both chains update the same site i; the new tokens come from the maximal coupling
of q_i^τ(·|x_{-i}) and q_i^τ(·|y_{-i}), so P(x_i' = y_i') = 1 − TV. T = min{t : X_t = Y_t} gives
d(t) ≤ P(T > t). `coupling_times` is `driver.drive` over `kernels.coupled_init` / `coupled_step`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import checkpointer
from ..conditionals import ConditionalModel
from ..validate import as_temperatures, check_dtype, check_int, check_memory, check_states
from .driver import drive
from .kernels import CoupledInfo, CoupledState, coupled_init, coupled_step, maximal_coupling
from .sampling import (Speculation, chain_seeds, check_scan, check_speculate, speculation_knee, speculation_widths,
                       working_bytes)

__all__ = ["CouplingResult", "check_pairs", "coupling_times", "maximal_coupling"]


@dataclass
class CouplingResult:
    """Coupling time per pair; pairs that never met are censored at the budget."""

    times: torch.Tensor  # (P,) int64: the first step with X_t = Y_t, or `budget` where censored
    met: torch.Tensor  # (P,) bool: False where the pair had not met within the budget
    budget: int
    forward_rows: int  # conditionals evaluated in all (2 per active pair per step)


def check_pairs(model: ConditionalModel, x0, y0) -> tuple[torch.Tensor, torch.Tensor]:
    """Both starting batches checked (`check_states`) and of one shape (pairs, length)."""
    x, y = check_states(model, x0), check_states(model, y0)
    if x.shape != y.shape:
        raise ValueError(f"x0 and y0 must have one shape (pairs, length), got {tuple(x.shape)} and {tuple(y.shape)}.")
    return x, y


@torch.inference_mode()
def coupling_times(
    model: ConditionalModel,
    x0: torch.Tensor,
    y0: torch.Tensor,
    budget: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    scan: str = "random",
    dtype: torch.dtype | None = None,
    progress: bool = False,
    speculate: int | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 500,
) -> CouplingResult:
    """Run coupled Glauber on pairs (x0[p], y0[p]) until they meet or `budget` steps pass.

    Met pairs leave the batch, so late steps cost only the pairs still apart. A pair's uniforms
    depend only on its seed (counter-based), never on which other pairs are still running; on a
    neural model the batched forward's rounding does (see `sampling` for what is guaranteed).
    `speculate = k > 1` evaluates each pair's next k sites ahead and consumes them up to the first
    step that changes x or y (exact, same coupling times as k = 1; see `glauber`); `forward_rows`
    then counts the discarded rows too. None: k chosen before every forward as in `glauber`.
    `checkpoint` (a file path) saves the run's state every `checkpoint_every` steps (of the slowest pair still
    apart) and at the end; a call with the same inputs resumes from it with the same result (see `checkpoint`).
    """
    check_scan(scan)
    budget, speculate, dtype = check_int("budget", budget, 1), check_speculate(speculate), check_dtype(dtype)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    x, y = (s.clone() for s in check_pairs(model, x0, y0))
    P, n = x.shape
    tau = as_temperatures(temperature, P, x.device, "pair")
    seeds = chain_seeds(seed, P).to(x.device)
    knee = speculation_knee(model, n, dtype) if speculate is None else 0.0
    k = speculate or max(speculation_widths(knee, 2 * P))
    check_memory(f"coupling_times ({P} pairs × {n} tokens)", 4 * P * n * 8, working_bytes(model, 2 * P * k), x.device,
                 "split the pairs into several calls (a pair's law does not depend on its batch), or "
                 "pass a smaller speculate.")
    ckpt = checkpointer(checkpoint, checkpoint_every, model=model, x0=x, y0=y, budget=budget, temperature=tau,
                        seed=seeds, scan=scan, dtype=dtype, speculate=speculate or "auto")
    speculation = Speculation(speculate or (None if k > 1 else 1), knee)
    recorder = CouplingRecorder(x, y, budget, speculation)

    def step(state: CoupledState) -> tuple[CoupledState, CoupledInfo]:
        k = speculation.width(2 * state.active.numel())
        return coupled_step(model, state, seeds, tau, k, scan, dtype, until=budget)

    def position(state: CoupledState) -> int:
        return int(state.done[state.active].min()) if state.active.numel() else budget

    drive(step, coupled_init(x, y), recorder, position, budget, ckpt, "coupling", progress)
    return CouplingResult(recorder.times, recorder.met, budget, recorder.forward_rows)


class CouplingRecorder:
    """What `coupling_times` keeps: each pair's meeting step (`budget` until it meets) and the forward rows."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, budget: int, speculation: Speculation):
        self.met = (x == y).all(1).cpu()
        self.times = torch.where(self.met, 0, budget)
        self.forward_rows, self.speculation = 0, speculation

    def record(self, state: CoupledState, info: CoupledInfo) -> None:
        met = info.pairs[info.met]
        self.times[met.cpu()] = state.done[met].cpu()
        self.met[met.cpu()] = True
        self.forward_rows += info.forward_rows
        self.speculation.update(int(info.changed.sum()), int(info.used.sum()))

    def snapshot(self, state: CoupledState) -> dict:
        return {"x": state.x.cpu(), "y": state.y.cpu(), "times": self.times, "met": self.met,
                "active": state.active.cpu(), "forward_rows": self.forward_rows, "done": state.done.cpu(),
                "change_rate": self.speculation.rate, "knee": self.speculation.knee}

    def restore(self, saved: dict, state: CoupledState) -> CoupledState:
        """The pairs and times saved; a checkpoint without `done` (written before `kernels` by the k = 1 loop) has
        every pair still apart at its step."""
        dev = state.x.device
        self.times, self.met, self.forward_rows = saved["times"], saved["met"], int(saved["forward_rows"])
        self.speculation.restore(saved)
        done = saved["done"].to(dev) if "done" in saved else torch.full_like(state.done, saved["step"])
        return CoupledState(saved["x"].to(dev), saved["y"].to(dev), done, saved["active"].to(dev))
