"""Metropolis–Hastings with MLM proposals: a chain whose stationary law is a named target π(x) ∝ exp(−E(x)/τ).

Glauber dynamics on incompatible conditionals has a stationary law nobody can write down. This sampler keeps the
MLM conditionals as a *proposal* and corrects them towards a named target:

- proposal (one step, `block = k`): an ordered tuple s = (s_1, …, s_k) of k distinct sites, uniform among all
  such tuples (random scan), or the window {tk, …, tk+k−1} mod n in a uniformly random order (systematic scan);
  then, in that order, z_{s_m} ~ q_{s_m}^τ(· | z_{−s_m}) where z starts at x and already holds the m − 1 earlier
  draws; the proposal is x' = z. With k = 1 this is one Glauber update.
- acceptance: α = min(1, π(x') q(x | x') / (π(x) q(x' | x))) with q(x'|x) = Π_m q_{s_m}^τ(x'_{s_m} | z^{m−1}) and
  q(x|x') the reverse path (order reversed from x'), which visits the same contexts:
  q(x|x') = Π_m q_{s_m}^τ(x_{s_m} | z^{m−1}). The order s and its reverse are equally likely, so each step is
  reversible with respect to π (the order is an auxiliary variable of the move); proposals equal to x are kept
  without any energy evaluation (α = 1).
- energies: `"pll"`: E(x) = −PLL(x) = −Σ_i log q_i^1(x_i | x_{−i}), so π_PLL^τ ∝ exp(PLL(x)/τ) (n forward
  rows per state, batched, and only for proposals that differ from the current state, whose PLL is cached);
  `"joint"`: E(x) = −log π(x) from a model's log-joint (`PairwiseModel.energy` returns log π + const, so the
  target is the exact model's `joint(τ)`; on a compatible model every proposal is accepted); or a callable
  `energy(states) -> (B,)` giving E itself.

Randomness follows `sampling`: counter-based uniforms, so a chain depends on its seed only. Block member m of step t
draws its site and token at counter t·k + m of the site and token streams, so with k = 1 the proposal is Glauber's
with the same seed; the accept uniform has its own stream.
Coupled MH (`coupled_metropolis`, `mh_coupling_times`): both chains of a pair share the sites, the proposals come
from the maximal coupling of the two chains' conditionals (`coupling.maximal_coupling`), and the accept uniform
is shared, so a pair that has met stays met; T = min{t : X_t = Y_t} bounds d(t) ≤ P(T > t).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import torch

from ..conditionals import ConditionalModel, checked_logits, log_conditionals
from ..validate import as_temperatures, check_dtype, check_int, check_memory, check_states
from .coupling import CouplingResult, check_pairs
from .driver import drive
from .kernels import maximal_coupling
from ..rng import ACCEPT_STREAM, BRANCH_STREAM, SITE_STREAM, TOKEN_STREAM, Y_STREAM, sample_categorical, uniforms
from .sampling import Trajectory, chain_seeds, check_scan, kept_bytes, working_bytes

PLL_CHUNK_BYTES = 1 << 29  # logits kept at once by one PLL forward (float32 logits and their exp)

Energy = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class MHTrajectory(Trajectory):
    """A `Trajectory` of `metropolis`, with its acceptance record and energy trace.

    `sites` is (T, B) for block = 1 (as `glauber`'s) and (T, B, k) for blocks, in proposal order; `changed` marks
    accepted proposals that differ from the current state."""

    accepted: torch.Tensor  # (T, B) bool: the MH decision (True for a proposal equal to the current state)
    accept_prob: torch.Tensor  # (T, B) float32: min(1, α) of each step's proposal (its mean estimates the rate)
    energy: torch.Tensor  # (T + 1, B) float64: E of the state after steps 0, 1, …, T
    forward_rows: int  # conditionals evaluated: k per chain-step for proposals, n per PLL evaluation


def acceptance_counts(trajectory: MHTrajectory) -> tuple[torch.Tensor, torch.Tensor]:
    """Per chain: (proposals the MH test accepted that changed the state, proposals that differed from the state).

    A proposal equal to the current state is kept without a test (α = 1) and says nothing about the correction, and
    a rejected proposal always differed, so their ratio is the acceptance rate of the test itself. The second count
    is also the number of energy evaluations after the first (n forward rows each with the PLL energy)."""
    tested = trajectory.changed | ~trajectory.accepted
    return trajectory.changed.sum(0), tested.sum(0)


@dataclass
class Target:
    """E(x) for a batch of states, and the forward rows one evaluation costs per state."""

    energy: Energy
    rows_per_state: int


def pseudo_log_likelihood(model: ConditionalModel, states: torch.Tensor, dtype: torch.dtype | None = None,
                          chunk: int | None = None) -> torch.Tensor:
    """PLL(x) = Σ_i log q_i^1(x_i | x_{−i}), float64 (B,): the n masked copies of B states, ≤ chunk rows a call.

    `chunk` None: as many rows as keep the logits under `PLL_CHUNK_BYTES` (`pll_chunk`)."""
    states = check_states(model, states)
    B, n = states.shape
    chunk = pll_chunk(model) if chunk is None else check_int("chunk", chunk, 1)
    total = torch.empty(B * n, dtype=torch.float64, device=states.device)
    for start in range(0, B * n, chunk):
        flat = torch.arange(start, min(start + chunk, B * n), device=states.device)
        rows, sites = states[flat // n], flat % n
        logits = checked_logits(model, rows, sites, dtype)
        own = logits.gather(1, rows.gather(1, sites.unsqueeze(1))).squeeze(1)
        total[flat] = (own - torch.logsumexp(logits, -1)).double()
    return total.view(B, n).sum(1)


def pll_chunk(model: ConditionalModel) -> int:
    """Rows per PLL forward whose float32 logits and their exp fit in `PLL_CHUNK_BYTES`."""
    return max(1, PLL_CHUNK_BYTES // (8 * int(model.vocab_size)))


def target_for(model: ConditionalModel, energy: str | Energy, n: int, dtype: torch.dtype | None, chunk: int) -> Target:
    """The `Target` an `energy` argument names: "pll", "joint" (the model's log-joint), or a callable E(states)."""
    if isinstance(energy, str):
        if energy == "pll":
            return Target(lambda s: -pseudo_log_likelihood(model, s, dtype, chunk), n)
        if energy == "joint":
            log_joint = getattr(model, "energy", None)
            if not callable(log_joint):
                raise ValueError(f"energy='joint' needs a model with a log-joint `energy(states)` (the exact models); "
                                 f"{type(model).__name__} has none: use energy='pll' or pass a callable E(states).")
            return Target(lambda s: -log_joint(s).to(torch.float64), 0)
        raise ValueError(f"energy must be 'pll', 'joint' or a callable E(states) -> (B,), got {energy!r}.")
    if not callable(energy):
        raise TypeError(f"energy must be 'pll', 'joint' or a callable E(states) -> (B,), got {type(energy).__name__}.")
    return Target(energy, 0)


def evaluate(target: Target, states: torch.Tensor) -> torch.Tensor:
    """E(states) as float64 (B,), refusing a wrong shape or a non-finite energy (π would be 0 or undefined there)."""
    e = torch.as_tensor(target.energy(states))
    if e.shape != (states.shape[0],) or e.dtype == torch.bool or e.is_complex():
        raise ValueError(f"energy(states) must return one real number per state, shape ({states.shape[0]},), "
                         f"got shape {tuple(e.shape)} and dtype {e.dtype}.")
    e = e.to(states.device, torch.float64)
    if not torch.isfinite(e).all():
        raise ValueError(f"energy(states) returned non-finite values {e[~torch.isfinite(e)][:5].tolist()}: the target "
                         "π ∝ exp(−E/τ) must be positive and finite on every state the chain can reach.")
    return e


def choose_block(seeds: torch.Tensor, step: int, n: int, k: int, scan: str) -> torch.Tensor:
    """(B, k) distinct sites in a uniformly random order (partial Fisher–Yates, uniform j at counter step·k + j).

    Random scan draws them from all n sites (k = 1: `sampling.choose_sites`); systematic scan orders the window
    {step·k, …, step·k + k − 1} mod n (k = 1: site step mod n)."""
    B = seeds.numel()
    offsets = torch.arange(n if scan == "random" else k, device=seeds.device)
    pool = (offsets if scan == "random" else (step * k + offsets) % n).expand(B, -1).clone()
    rows, m = torch.arange(B, device=seeds.device), pool.shape[1]
    for j in range(k):
        pick = j + (uniforms(seeds, step * k + j, SITE_STREAM) * (m - j)).long().clamp_max(m - j - 1)
        head, chosen = pool[:, j].clone(), pool[rows, pick]
        pool[:, j], pool[rows, pick] = chosen, head
    return pool[:, :k]


def _propose(model, x, sites, tau, dtype, draw) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequential proposal z at sites[:, 0], sites[:, 1], …; returns z and log q(z|x) − log q(x|z) (float64).

    `draw(log_q, m)` picks the m-th tokens from the rows' log-conditionals."""
    z, rows = x.clone(), torch.arange(x.shape[0], device=x.device)
    log_ratio = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    for m in range(sites.shape[1]):
        site = sites[:, m]
        log_q = log_conditionals(model, z, site, tau, dtype)
        new = draw(log_q, m)
        log_ratio += (log_q[rows, new] - log_q[rows, z[rows, site]]).double()
        z[rows, site] = new
    return z, log_ratio


def _accept(x, z, e, log_ratio, tau, u, target: Target):
    """MH decision u < min(1, α), log α = −(E(z) − E(x))/τ − log_ratio; E(z) is evaluated only where z ≠ x.

    Returns the next states, their energies, the decisions, min(1, α), and which rows needed an energy."""
    moved = (z != x).any(1)
    e_new = e.clone()
    if moved.any():
        e_new[moved] = evaluate(target, z[moved])
    prob = torch.exp((-(e_new - e) / tau.double() - log_ratio).clamp_max(0.0))
    accepted = u < prob
    return torch.where(accepted.unsqueeze(1), z, x), torch.where(accepted, e_new, e), accepted, prob, moved


def mh_kept_bytes(batch: int, n: int, steps: int, record_every: int, block: int) -> int:
    """Host bytes `metropolis` keeps: `kept_bytes` of `glauber`, the extra sites of blocks, and per chain-step the
    decision (bool), min(1, α) (float32) and energy (float64)."""
    site_bytes = 2 if n < 2**15 else 4
    return kept_bytes(batch, n, steps, record_every) + steps * batch * ((block - 1) * site_bytes + 13) + batch * 8


@dataclass
class Setup:
    """Checked inputs shared by the MH entry points."""

    states: torch.Tensor
    tau: torch.Tensor
    seeds: torch.Tensor
    block: int
    scan: str
    dtype: torch.dtype | None
    target: Target
    working_bytes: int  # the per-step working set: proposal conditionals, or one PLL forward's logits


def prepare(model, states, temperature, seed, energy, scan, block, dtype, pll_rows, copies: int = 1) -> Setup:
    """Check every argument before any forward (`states` holds `copies` stacked chains per seed)."""
    check_scan(scan)
    dtype = check_dtype(dtype)
    B, n = states.shape
    block = check_int("block", block, 1, n)
    chunk = pll_chunk(model) if pll_rows is None else check_int("pll_rows", pll_rows, 1)
    seeds = chain_seeds(seed, B // copies).to(states.device)
    tau = as_temperatures(temperature, B // copies, states.device).repeat(copies)
    target = target_for(model, energy, n, dtype, chunk)
    pll = 8 * int(model.vocab_size) * min(chunk, B * n) if target.rows_per_state else 0
    return Setup(states, tau, seeds, block, scan, dtype, target, max(working_bytes(model, B), pll))


@torch.inference_mode()
def metropolis(
    model: ConditionalModel,
    init: torch.Tensor,
    steps: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    energy: str | Energy = "pll",
    scan: str = "random",
    record_every: int = 1,
    block: int = 1,
    dtype: torch.dtype | None = None,
    pll_rows: int | None = None,
    progress: bool = False,
) -> MHTrajectory:
    """Run `steps` MH steps with target π ∝ exp(−E/τ) on every chain of `init` (B × n); see the module docstring.

    `temperature`, `seed`: scalars or one per chain (as `glauber`). `energy`: "pll" (E = −PLL at τ = 1), "joint"
    (E = −log π of an exact model) or a callable E(states) -> (B,). `block`: sites per proposal (1 ≤ k ≤ n).
    `pll_rows`: rows per PLL forward (None: `pll_chunk(model)`). The kept results and the working set are
    estimated first, and the call refuses (MemoryError) where they would not fit.
    """
    steps, record_every = check_int("steps", steps, 0), check_int("record_every", record_every, 1)
    run = prepare(model, check_states(model, init).clone(), temperature, seed, energy, scan, block, dtype, pll_rows)
    B, n = run.states.shape
    check_memory(f"metropolis ({B} chains × {n} tokens, {steps // record_every + 1} recorded states)",
                 mh_kept_bytes(B, n, steps, record_every, run.block), run.working_bytes, run.states.device,
                 f"keep fewer states with record_every > {record_every}, run fewer steps, pass a smaller pll_rows, "
                 "or split the chains into several calls (each chain's law does not depend on its batch).")
    recorder, state = run_chains(model, run, steps, record_every, progress, False, "metropolis")
    return recorder.trajectory(state, slice(None), run)


@dataclass
class MHState:
    """MH chains (for coupled MH, the X chains of the pairs stacked over their Y chains): states, their energies, and
    the steps taken."""

    x: torch.Tensor  # (B, n) int64
    energy: torch.Tensor  # (B,) float64: E(x)
    t: int


@dataclass
class MHInfo:
    """What one `mh_step` did per chain."""

    sites: torch.Tensor  # (B, k) the proposal's sites, in proposal order
    accepted: torch.Tensor  # (B,) bool: the MH decision
    accept_prob: torch.Tensor  # (B,) float64: min(1, α)
    moved: torch.Tensor  # (B,) bool: the proposal differed from x (its energy was evaluated)
    changed: torch.Tensor  # (B,) bool: the state changed


def mh_init(target: Target, x: torch.Tensor) -> MHState:
    """Chains at `x`, their energies evaluated."""
    return MHState(x, evaluate(target, x), 0)


def mh_step(model: ConditionalModel, state: MHState, run: Setup, coupled: bool = False) -> tuple[MHState, MHInfo]:
    """One MH step of every chain; `coupled`: x stacks the X and Y chains of the pairs of `run.seeds`, which share
    sites and the accept uniform, their proposals drawn from the maximal coupling of the two conditionals."""
    seeds, block, copies, step, x = run.seeds, run.block, 2 if coupled else 1, state.t, state.x
    sites = choose_block(seeds, step, x.shape[1], block, run.scan).repeat(copies, 1)

    def draw(log_q, m):
        counter = step * block + m
        if not coupled:
            return sample_categorical(log_q.exp(), uniforms(seeds, counter, TOKEN_STREAM))
        u = torch.stack([uniforms(seeds, counter, s) for s in (BRANCH_STREAM, TOKEN_STREAM, Y_STREAM)], 1)
        P = seeds.numel()
        return torch.cat(maximal_coupling(log_q[:P].exp(), log_q[P:].exp(), u))

    z, log_ratio = _propose(model, x, sites, run.tau, run.dtype, draw)
    u = uniforms(seeds, step, ACCEPT_STREAM).repeat(copies)
    new, e, accepted, prob, moved = _accept(x, z, state.energy, log_ratio, run.tau, u, run.target)
    return MHState(new, e, step + 1), MHInfo(sites, accepted, prob, moved, (new != x).any(1))


class MHRecorder:
    """What `metropolis` keeps: `glauber`'s record (states every `record_every` steps, sites, changes) and each step's
    decision, min(1, α) and energy, and the energy evaluations per chain."""

    def __init__(self, state: MHState, steps: int, record_every: int, block: int):
        B, n = state.x.shape
        self.every = record_every
        self.states = torch.empty(steps // record_every + 1, B, n, dtype=state.x.dtype)
        self.states[0] = state.x.cpu()
        self.sites = torch.empty(steps, B, block, dtype=torch.int16 if n < 2**15 else torch.int32)
        self.changed, self.accepted = torch.empty(steps, B, dtype=torch.bool), torch.empty(steps, B, dtype=torch.bool)
        self.accept_prob, self.energy = torch.empty(steps, B), torch.empty(steps + 1, B, dtype=torch.float64)
        self.energy[0] = state.energy.cpu()
        self.evaluations = torch.ones(B, dtype=torch.int64)

    def record(self, state: MHState, info: MHInfo) -> None:
        t = state.t - 1
        self.changed[t], self.sites[t], self.accepted[t] = info.changed.cpu(), info.sites.cpu(), info.accepted.cpu()
        self.accept_prob[t], self.energy[t + 1] = info.accept_prob.cpu(), state.energy.cpu()
        self.evaluations += info.moved.cpu()
        if state.t % self.every == 0:
            self.states[state.t // self.every] = state.x.cpu()

    def trajectory(self, state: MHState, chains: slice, run: Setup) -> MHTrajectory:
        """The trajectory of `chains`, with their forward rows: k per chain-step, n per energy evaluation (PLL)."""
        evaluations, steps = self.evaluations[chains], self.accepted.shape[0]
        rows = evaluations.numel() * run.block * steps + run.target.rows_per_state * int(evaluations.sum())
        sites = self.sites.squeeze(2) if run.block == 1 else self.sites
        return MHTrajectory(self.states[:, chains], torch.arange(self.states.shape[0]) * self.every, sites[:, chains],
                            self.changed[:, chains], state.x[chains].cpu(), self.accepted[:, chains],
                            self.accept_prob[:, chains], self.energy[:, chains], rows)


def run_chains(model, run: Setup, steps: int, record_every: int, progress: bool, coupled: bool,
               desc: str) -> tuple[MHRecorder, MHState]:
    """`driver.drive` over `mh_step` from `run.states` for `steps` steps, recorded (no checkpoint)."""
    state = mh_init(run.target, run.states)
    recorder = MHRecorder(state, steps, record_every, run.block)
    state = drive(lambda s: mh_step(model, s, run, coupled), state, recorder, lambda s: s.t, steps, None, desc,
                  progress)
    return recorder, state


@torch.inference_mode()
def coupled_metropolis(
    model: ConditionalModel,
    x0: torch.Tensor,
    y0: torch.Tensor,
    steps: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    energy: str | Energy = "pll",
    scan: str = "random",
    record_every: int = 1,
    block: int = 1,
    dtype: torch.dtype | None = None,
    pll_rows: int | None = None,
) -> tuple[MHTrajectory, MHTrajectory]:
    """Coupled MH on pairs (x0[p], y0[p]) for `steps` steps, met pairs kept: the X and the Y trajectories.

    Each chain alone is an MH chain of `metropolis`' law; where x0 = y0 the X path is `metropolis`' path with the
    same seed. Each trajectory's `forward_rows` counts its own chains' rows. `mh_coupling_times` gives the times."""
    steps, record_every = check_int("steps", steps, 0), check_int("record_every", record_every, 1)
    run = prepare(model, torch.cat(check_pairs(model, x0, y0)), temperature, seed, energy, scan, block, dtype, pll_rows, copies=2)
    B, n = run.states.shape
    check_memory(f"coupled_metropolis ({B // 2} pairs × {n} tokens)",
                 mh_kept_bytes(B, n, steps, record_every, run.block), run.working_bytes, run.states.device,
                 f"keep fewer states with record_every > {record_every}, run fewer steps, or split the pairs.")
    recorder, state = run_chains(model, run, steps, record_every, False, True, "coupled metropolis")
    P = B // 2
    return recorder.trajectory(state, slice(0, P), run), recorder.trajectory(state, slice(P, B), run)


@torch.inference_mode()
def mh_coupling_times(
    model: ConditionalModel,
    x0: torch.Tensor,
    y0: torch.Tensor,
    budget: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    energy: str | Energy = "pll",
    scan: str = "random",
    block: int = 1,
    dtype: torch.dtype | None = None,
    pll_rows: int | None = None,
    progress: bool = False,
) -> CouplingResult:
    """Coupling times of coupled MH (see `coupled_metropolis`): pairs run until they meet or `budget` steps pass.

    Met pairs leave the batch; a pair's time depends on its seed only (on the exact models it is the first step
    where `coupled_metropolis`' X and Y agree)."""
    budget = check_int("budget", budget, 1)
    run = prepare(model, torch.cat(check_pairs(model, x0, y0)), temperature, seed, energy, scan, block, dtype, pll_rows, copies=2)
    B, n = run.states.shape
    P = B // 2
    check_memory(f"mh_coupling_times ({P} pairs × {n} tokens)", 4 * B * n * 8, run.working_bytes, run.states.device,
                 "split the pairs into several calls (a pair's law does not depend on its batch).")
    recorder = MHCouplingRecorder(run.states[:P], run.states[P:], budget)
    if not recorder.apart.numel():
        return CouplingResult(recorder.times, recorder.met, budget, 0)
    state = coupled_mh_init(run.target, run.states, recorder.apart)
    recorder.forward_rows = run.target.rows_per_state * state.x.shape[0]
    drive(lambda s: coupled_mh_step(model, s, run), state, recorder, lambda s: s.t if s.active.numel() else budget,
          budget, None, "mh coupling", progress)
    return CouplingResult(recorder.times, recorder.met, budget, recorder.forward_rows)


@dataclass
class CoupledMHState:
    """The pairs of coupled MH still apart: X over Y states (2A, n), their energies, the pairs, the steps taken."""

    x: torch.Tensor
    energy: torch.Tensor
    active: torch.Tensor  # (A,)
    t: int


@dataclass
class CoupledMHInfo:
    """What one `coupled_mh_step` did: which pairs met, and the forward rows."""

    pairs: torch.Tensor  # (A,) the pairs that stepped
    met: torch.Tensor  # (A,) bool
    forward_rows: int


def coupled_mh_init(target: Target, states: torch.Tensor, apart: torch.Tensor) -> CoupledMHState:
    """The pairs `apart` of `states` (X chains of all P pairs over their Y chains), their energies evaluated."""
    P = states.shape[0] // 2
    xy = torch.cat([states[:P][apart], states[P:][apart]])
    return CoupledMHState(xy, evaluate(target, xy), apart, 0)


def coupled_mh_step(model: ConditionalModel, state: CoupledMHState,
                    run: Setup) -> tuple[CoupledMHState, CoupledMHInfo]:
    """One coupled MH step (`mh_step` with `coupled`) of the pairs apart; those that meet leave."""
    active, A, P = state.active, state.active.numel(), run.seeds.numel()
    pairs = replace(run, states=state.x, tau=run.tau[torch.cat([active, active + P])], seeds=run.seeds[active])
    new, info = mh_step(model, MHState(state.x, state.energy, state.t), pairs, coupled=True)
    met = (new.x[:A] == new.x[A:]).all(1)
    apart = (~met).repeat(2)
    rows = 2 * A * run.block + run.target.rows_per_state * int(info.moved.sum())
    return CoupledMHState(new.x[apart], new.energy[apart], active[~met], new.t), CoupledMHInfo(active, met, rows)


class MHCouplingRecorder:
    """What `mh_coupling_times` keeps: each pair's meeting step (`budget` until it meets) and the forward rows."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, budget: int):
        self.met = (x == y).all(1).cpu()
        self.times = torch.where(self.met, 0, budget)
        self.apart = torch.nonzero(~self.met).flatten().to(x.device)
        self.forward_rows = 0

    def record(self, state: CoupledMHState, info: CoupledMHInfo) -> None:
        met = info.pairs[info.met].cpu()
        self.times[met], self.met[met] = state.t, True
        self.forward_rows += info.forward_rows
