"""Glauber dynamics (random-scan or systematic-scan Gibbs) for many chains in one batch.

One step: choose a site i (uniform, or i = t mod n), draw x_i ~ q_i^τ(· | x_{-i}).
Every chain has its own seed and temperature; randomness is counter-based (see `rng`), so a chain's
uniforms depend on its seed only. What that guarantees for the trajectory:

- the same model, inputs, seeds and batch give the same trajectory, bit for bit (same device and kernels);
- on a model whose conditionals are computed per row (the exact models), a chain's trajectory does not
  depend on the rest of the batch: run alone it is the same path;
- on a neural model the batched forward's rounding depends on the batch's shape and contents, so a chain
  run alone follows the same law, and usually the same path, but not path by path: a draw whose uniform
  falls within rounding of a CDF boundary can differ (and the paths then part).

`glauber` is `driver.drive` over the kernel `kernels.glauber_init` / `glauber_step`, recorded by `GlauberRecorder`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import checkpointer
from ..conditionals import ConditionalModel
from ..validate import as_temperatures, check_dtype, check_int, check_memory, check_states
from .driver import drive
from .kernels import choose_sites  # noqa: F401 (re-exported: `sampling.choose_sites`)
from .kernels import GlauberInfo, GlauberState, glauber_init, glauber_step
from ..rng import check_seed

MAX_SPECULATION = 16


@dataclass
class Trajectory:
    """What a run of `glauber` keeps: states every `record_every` steps, and which steps changed a token."""

    states: torch.Tensor  # (R, B, n): the state after steps 0, k, 2k, …
    steps: torch.Tensor  # (R,): the step number of each recorded state
    sites: torch.Tensor  # (T, B): the site updated at each step
    changed: torch.Tensor  # (T, B) bool: whether that step changed the token
    final: torch.Tensor  # (B, n): the state after the last step


def chain_seeds(seed: int | list[int] | torch.Tensor, batch: int) -> torch.Tensor:
    """One int64 seed per chain: an int s gives s, s+1, …; a list, array or tensor of integers is used as given.

    Floats and bools are refused (a float seed would be truncated, so 0.5 and 0.7 would give one chain), and so are
    seeds outside int64 (`rng.check_seed`)."""
    if not isinstance(seed, (list, tuple, torch.Tensor)) and not hasattr(seed, "__array__"):
        seed = check_seed(seed, batch)
        return seed + torch.arange(batch, dtype=torch.int64)  # arange(seed, seed + batch) overflows at the top
    try:
        seeds = torch.as_tensor(seed)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"seed must be an int or one integer per chain, each an int64 in [-2**63, 2**63 - 1]; "
                        f"got {seed!r}.") from err
    if seeds.dtype == torch.bool or seeds.is_floating_point() or seeds.is_complex():
        raise TypeError(f"seed must be an int or one integer per chain, got dtype {seeds.dtype}.")
    if seeds.dtype == torch.uint64 and (seeds.to(torch.int64) < 0).any():  # the cast would wrap 2**63 to −2**63
        raise ValueError("seed values must be int64, in [-2**63, 2**63 - 1]; got some ≥ 2**63: reduce them, "
                         "e.g. seed % 2**62.")
    seeds = seeds.to(torch.int64).flatten()
    if seeds.numel() != batch:
        raise ValueError(f"got {seeds.numel()} seeds for {batch} chains: pass one int, or one seed per chain.")
    return seeds


SPECULATION_WIDTHS = (1, 2, 4, 8, MAX_SPECULATION)


def speculation_knee(model: ConditionalModel, n: int, dtype: torch.dtype | None) -> float:
    """The model's fixed cost per forward in rows (`MLMAdapter.speculation_knee`); 0 for models without one (the
    exact models, whose rows cost nothing to batch), which then run the plain engine."""
    knee = getattr(model, "speculation_knee", None)
    return float(knee(n, dtype)) if callable(knee) else 0.0


def speculation_widths(knee: float, batch: int) -> tuple[int, ...]:
    """The k worth trying: those whose B·k rows stay within max(B, 2·knee) (past that a forward costs about
    its rows, and k sites ahead can only lose)."""
    return tuple(k for k in SPECULATION_WIDTHS if k == 1 or batch * k <= 2 * knee)


def speculation_width(knee: float, batch: int, change: float) -> int:
    """The k that maximises expected steps per unit time, E_k / (knee + B·k).

    A forward of r rows costs about knee + r rows (`speculation_knee`); a chain that changes its token with
    probability p per step consumes E_k = (1 − (1 − p)^k) / p of its k sites evaluated ahead."""
    p = min(max(change, 1e-6), 1.0)
    return max(speculation_widths(knee, batch), key=lambda k: (1 - (1 - p) ** k) / p / (knee + batch * k))


def update_change_rate(rate: float, changes: int, consumed: int) -> float:
    """An exponential average (weight 1/8 per forward) of the share of consumed steps that changed a token."""
    return rate if consumed == 0 else rate + (changes / consumed - rate) / 8


@dataclass
class Speculation:
    """The width k of each forward: `fixed`, else `speculation_width(knee, rows, rate)`, `rate` the share of recent
    consumed steps that changed a token (`update_change_rate`)."""

    fixed: int | None
    knee: float
    rate: float = 0.5

    def width(self, rows: int) -> int:
        return self.fixed or speculation_width(self.knee, rows, self.rate)

    def update(self, changes: int, consumed: int) -> None:
        self.rate = update_change_rate(self.rate, changes, consumed)

    def restore(self, saved: dict) -> None:
        """The rate and knee of an interrupted run (a checkpoint without them ran k = 1 throughout)."""
        self.rate, self.knee = saved.get("change_rate", self.rate), saved.get("knee", self.knee)


def check_scan(scan: str) -> None:
    if scan not in ("random", "systematic"):
        raise ValueError(f"scan must be 'random' or 'systematic', got {scan!r}.")


def check_speculate(speculate: int | None) -> int | None:
    return None if speculate is None else check_int("speculate", speculate, 1)


def working_bytes(model: ConditionalModel, rows: int) -> int:
    """The per-step working set of `rows` conditionals besides the forward (chunked in the adapter):
    logits, log-probabilities and probabilities in float32, the CDF and coupling laws in float64."""
    return rows * int(model.vocab_size) * 64


def kept_bytes(batch: int, n: int, steps: int, record_every: int = 1) -> int:
    """Host bytes a `glauber` call keeps: recorded int64 states (steps // record_every + 1) × B × n, the site
    (int16/int32) and change (bool) logs of every step, and the final state."""
    site_bytes = 2 if n < 2**15 else 4
    return (steps // record_every + 1) * batch * n * 8 + steps * batch * (site_bytes + 1) + batch * n * 8


@torch.inference_mode()
def glauber(
    model: ConditionalModel,
    init: torch.Tensor,
    steps: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    scan: str = "random",
    record_every: int = 1,
    dtype: torch.dtype | str | None = None,
    progress: bool = False,
    speculate: int | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 500,
) -> Trajectory:
    """Run `steps` Glauber updates on every chain of `init` (B × n) in one batched pass per step.

    `temperature` and `seed` are scalars or one value per chain, so a temperature grid is one batch.
    `dtype` is the forward-pass dtype (None: the model's default; `conditionals.check_dtype` lists the others);
    softmax and sampling run in fp32/fp64.
    Every recorded state is kept (int64, R × B × n with R = steps // record_every + 1): the call estimates
    that memory and the per-step working set first, and refuses (MemoryError naming the fix) where they
    would not fit in the memory available now.

    `speculate = k > 1` evaluates each chain's next k sites on its current state in one batch and
    consumes them in order up to the first step that changes a token (exact: every conditional used
    saw the true current state; draws are counter-based, so the trajectory is the one k = 1 gives, up to
    the batch-dependent rounding of a neural model's forward described in the module docstring).
    It saves sequential forwards where most steps keep their token (low τ) and costs k× the rows
    per forward. None (the default) chooses k ∈ {1, 2, 4, 8, 16} before every forward from the model's fixed
    cost per forward (`speculation_knee`) and the share of recent steps that changed a token
    (`speculation_width`): many sites ahead where most steps keep their token and rows are cheap, one where
    every step changes or the batch is wide. Exact models run the plain engine. Pass an int for a fixed k.

    `checkpoint` (a file path) saves the run's state there every `checkpoint_every` steps (of the slowest chain
    when speculating) and at the end; a call with the same inputs resumes from it and returns the trajectory
    an uninterrupted run gives (see `checkpoint`). The file stays after the run: a rerun returns at once.
    """
    check_scan(scan)
    steps, record_every = check_int("steps", steps, 0), check_int("record_every", record_every, 1)
    speculate, dtype = check_speculate(speculate), check_dtype(dtype)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, 1)
    x = check_states(model, init).clone()
    B, n = x.shape
    tau = as_temperatures(temperature, B, x.device)
    seeds = chain_seeds(seed, B).to(x.device)
    knee = speculation_knee(model, n, dtype) if speculate is None else 0.0
    k = speculate or max(speculation_widths(knee, B))
    R = steps // record_every + 1
    kept = kept_bytes(B, n, steps, record_every)
    check_memory(
        f"glauber ({B} chains × {n} tokens, {R} recorded states)", kept, working_bytes(model, B * k), x.device,
        f"keep fewer states with record_every > {record_every} (the recorded states take {R * B * n * 8 / 2**30:.2f} "
        "GiB), run fewer steps, or split the chains into several calls (each chain's law does not depend on its batch)."
    )
    ckpt = checkpointer(checkpoint, checkpoint_every, model=model, init=x, steps=steps, temperature=tau, seed=seeds,
                        scan=scan, record_every=record_every, dtype=dtype, speculate=speculate or "auto")
    speculation = Speculation(speculate or (None if k > 1 else 1), knee)
    recorder = GlauberRecorder(x, steps, record_every, speculation)

    def step(state: GlauberState) -> tuple[GlauberState, GlauberInfo]:
        k = speculation.width(int((state.done < steps).sum()))
        return glauber_step(model, state, seeds, tau, k, scan, dtype, until=steps)

    state = drive(step, glauber_init(x), recorder, lambda state: int(state.done.min()), steps, ckpt, "glauber",
                  progress)
    return Trajectory(recorder.states, torch.arange(R) * record_every, recorder.sites, recorder.changed,
                      state.x.cpu())


class GlauberRecorder:
    """What `glauber` keeps: the state every `record_every` steps and each step's site and change, per chain."""

    def __init__(self, x: torch.Tensor, steps: int, record_every: int, speculation: Speculation):
        B, n = x.shape
        self.every, self.speculation = record_every, speculation
        self.states = torch.empty(steps // record_every + 1, B, n, dtype=x.dtype)
        self.states[0] = x.cpu()
        self.sites = torch.empty(steps, B, dtype=torch.int16 if n < 2**15 else torch.int32)
        self.changed = torch.zeros(steps, B, dtype=torch.bool)

    def record(self, state: GlauberState, info: GlauberInfo) -> None:
        """Log the consumed steps; a chain's state at a multiple of `every` in (t0, end] is `before` up to its last
        consumed step and its new state at it."""
        keep = torch.arange(info.steps.shape[1], device=info.used.device) < info.used.unsqueeze(1)
        lr, lc = torch.nonzero(keep, as_tuple=True)
        at, chains = info.steps[lr, lc].cpu(), info.chains[lr].cpu()
        self.sites[at, chains] = info.sites[lr, lc].to(self.sites.dtype).cpu()
        self.changed[at, chains] = info.changed[lr, lc].cpu()
        t0, after = info.steps[:, 0], state.x[info.chains]
        end = t0 + info.used
        lo, hi = t0 // self.every + 1, end // self.every
        for d in range(int((hi - lo).max().clamp_min(-1)) + 1):
            m = lo + d
            ok = m <= hi
            if ok.any():
                now = torch.where((m * self.every == end).unsqueeze(1), after, info.before)
                self.states[m[ok].cpu(), info.chains[ok].cpu()] = now[ok].cpu()
        self.speculation.update(int(info.changed.any(1).sum()), int(info.used.sum()))

    def snapshot(self, state: GlauberState) -> dict:
        return {"x": state.x.cpu(), "done": state.done.cpu(), "states": self.states, "sites": self.sites,
                "changed": self.changed, "change_rate": self.speculation.rate, "knee": self.speculation.knee}

    def restore(self, saved: dict, state: GlauberState) -> GlauberState:
        x = saved["x"].to(state.x.device)
        if "done" not in saved:  # written before `kernels` by the k = 1 loop: the states and logs so far
            recorded = saved["states"]
            self.states[: len(recorded)], start = recorded, saved["step"]
            self.sites[:start], self.changed[:start] = saved["sites"], saved["changed"]
            return GlauberState(x, torch.full_like(state.done, start))
        self.states, self.sites, self.changed = saved["states"], saved["sites"], saved["changed"]
        self.speculation.restore(saved)
        return GlauberState(x, saved["done"].to(state.done.device))
