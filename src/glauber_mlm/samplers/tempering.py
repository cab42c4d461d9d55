"""Replica exchange (parallel tempering) of MH chains over a temperature ladder: sampling out of the traps.

Replica k runs `metropolis` towards π_k ∝ exp(−E/τ_k), τ_0 < τ_1 < … < τ_{K−1}, the target at τ_0: E = −PLL for an
MLM (π_PLL^τ ∝ exp(PLL/τ)), E = −log π for an exact model ("joint"), or any callable. Every `steps_per_round` MH
steps, neighbouring replicas (k, k+1) with k of the round's parity (deterministic even/odd) propose to swap states,
accepted with probability

    min(1, exp((E(x_k) − E(x_{k+1})) (1/τ_k − 1/τ_{k+1}))),

which leaves Π_k π_k invariant; the energies are those the MH chains already hold, so a swap costs no forward row.
The hot replicas cross the barriers between wells, and the swaps carry their states down to τ_0.

Why not Glauber: Glauber on incompatible MLM conditionals has a stationary law μ_τ that nobody can write down, even up
to a constant, and the family (μ_τ) is not a tempered family exp(−E/τ) of one energy (μ_τ ≠ μ_1^{1/τ}): there is no
ratio μ_τ(y)μ_τ'(x) / (μ_τ(x)μ_τ'(y)) to accept a swap with, and swapping with a guessed energy would leave none of the
μ_τ invariant. An MH chain has, by construction, a named target with an energy; tempering needs exactly that.

At equal cost: `plain_at_rows` runs plain MH at τ_0 until it has spent a tempered run's forward rows, and
`basins_visited` counts the distinct basins (notebook 03's traps, merged within the trap radius) each cold chain visits.

Randomness: the MH steps of replica slot k of ensemble b in round r draw from seeds derived from its seed and r
(`lag_coupling.derived_seeds`), the swap decisions from their own stream, so a run is a function of its seed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..validate import check_int, check_states, check_temperatures
from .lag_coupling import derived_seeds
from .metropolis import metropolis
from ..rng import uniforms
from .sampling import chain_seeds

ROUND_STREAM, SWAP_STREAM, PLAIN_STREAM = 22, 23, 24  # beside lag_coupling's 21; sampling, coupling and MH use 0–5


@dataclass
class Tempering:
    """A replica-exchange run: the target (coldest) replica's states, swap statistics and cost."""

    cold: torch.Tensor  # (R, B, n): the τ_0 slot's state after every `record_every` MH steps (after step 0 first)
    steps: torch.Tensor  # (R,) the MH step of each record
    temperatures: torch.Tensor  # (K,) ascending
    swaps_proposed: np.ndarray  # (K − 1,) proposals between slots k and k + 1, summed over ensembles
    swaps_accepted: np.ndarray  # (K − 1,)
    round_trips: np.ndarray  # (B,) replicas that went from τ_0 to τ_{K−1} and back to τ_0, per ensemble
    final: torch.Tensor  # (B, K, n) the states of every slot at the end
    forward_rows: int  # conditionals evaluated (MH proposals and energies), all replicas

    @property
    def swap_rates(self) -> np.ndarray:
        """Accepted / proposed swaps between neighbouring temperatures (nan where none was proposed)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.swaps_accepted / self.swaps_proposed


def ladder(cold: float, hot: float, rungs: int) -> torch.Tensor:
    """A geometric ladder τ_k = cold · (hot/cold)^{k/(K−1)}, k = 0 … K − 1 (constant swap rates where the
    heat capacity is flat)."""
    rungs = check_int("rungs", rungs, 2)
    cold, hot = (float(t) for t in check_temperatures([cold, hot]))
    if not hot > cold:
        raise ValueError(f"the hottest temperature must exceed the target's, got cold = {cold}, hot = {hot}.")
    return cold * (hot / cold) ** (torch.arange(rungs, dtype=torch.float64) / (rungs - 1))


def swap_log_ratio(e_low: torch.Tensor, e_high: torch.Tensor, tau_low: float, tau_high: float) -> torch.Tensor:
    """log of the swap acceptance ratio: (E(x_low) − E(x_high)) (1/τ_low − 1/τ_high)."""
    return (e_low - e_high) * (1.0 / tau_low - 1.0 / tau_high)


def always_swap(e_low: torch.Tensor, e_high: torch.Tensor, tau_low, tau_high) -> torch.Tensor:
    """A planted *wrong* swap rule, log ratio 0: every swap is accepted, so hot states reach τ_0 unweighted and the
    cold slot's law is a mixture over the ladder, not π_{τ_0}. For the size of a check that tempering is right."""
    return torch.zeros(torch.broadcast_shapes(e_low.shape, e_high.shape), dtype=torch.float64)


@torch.inference_mode()
def replica_exchange(model, init: torch.Tensor, temperatures, rounds: int, steps_per_round: int = 1,
                     seed: int = 0, energy="pll", scan: str = "random", block: int = 1, record_every: int = 1,
                     dtype: torch.dtype | None = None, swap_rule=swap_log_ratio) -> Tempering:
    """Run B independent ensembles of K replicas for `rounds` × `steps_per_round` MH steps each, with a swap round
    (even/odd neighbours alternately) after every `steps_per_round` steps.

    `init`: (B, n), every replica of ensemble b starting at init[b], or (B, K, n). `temperatures`: K ≥ 2 values,
    strictly increasing, the target first (`ladder`). `energy`, `scan`, `block`, `dtype`: as `metropolis`; the PLL
    energy re-evaluates each replica's state at every round's start (n rows a replica per round), so use rounds of
    several steps there. `record_every` must divide `steps_per_round`. `swap_rule(E_low, E_high, τ_low, τ_high)`: the
    log acceptance ratio of a swap (`swap_log_ratio`; `always_swap` is a planted wrong one)."""
    taus = check_temperatures(temperatures).to(torch.float64)
    K = taus.numel()
    if K < 2 or not (taus[1:] > taus[:-1]).all():
        raise ValueError(f"temperatures must be K ≥ 2 strictly increasing values, the target first, got "
                         f"{taus.tolist()}: e.g. tempering.ladder(1.0, 4.0, 6).")
    rounds, steps_per_round = check_int("rounds", rounds, 1), check_int("steps_per_round", steps_per_round, 1)
    record_every = check_int("record_every", record_every, 1)
    if steps_per_round % record_every:
        raise ValueError(f"record_every = {record_every} must divide steps_per_round = {steps_per_round}, so that "
                         "records fall at the same steps in every round.")
    init = torch.as_tensor(init)
    if init.ndim == 2:
        init = init.unsqueeze(1).expand(-1, K, -1)
    if init.ndim != 3 or init.shape[1] != K:
        raise ValueError(f"init must be (ensembles, length) or (ensembles, {K} temperatures, length), got "
                         f"shape {tuple(init.shape)}.")
    B, _, n = init.shape
    x = check_states(model, init.reshape(B * K, n)).clone()
    seeds = chain_seeds(seed, B * K).to(x.device)
    tau_chain = taus.repeat(B).to(torch.float32)  # slot k of ensemble b is chain b·K + k
    labels = torch.arange(K).repeat(B, 1)  # which replica sits in each slot
    phase = torch.zeros(B, K, dtype=torch.int8)  # per replica: 0 none, 1 last extreme was τ_0, 2 reached τ_{K−1} since
    phase[:, 0] = 1
    trips = np.zeros(B, dtype=np.int64)
    proposed, accepted = np.zeros(K - 1, dtype=np.int64), np.zeros(K - 1, dtype=np.int64)
    cold_rows = torch.arange(B) * K
    records, record_steps, rows = [x[cold_rows.to(x.device)].cpu().clone()], [0], 0
    for r in range(rounds):
        traj = metropolis(model, x, steps_per_round, tau_chain, derived_seeds(seeds, r, ROUND_STREAM), energy, scan,
                          record_every, block, dtype)
        rows += traj.forward_rows
        records.append(traj.states[1:, cold_rows])
        record_steps += (r * steps_per_round + traj.steps[1:]).tolist()
        x = traj.final.to(x.device).view(B, K, n)
        e = traj.energy[-1].view(B, K)
        low = torch.arange(r % 2, K - 1, 2)
        if low.numel():
            log_ratio = swap_rule(e[:, low], e[:, low + 1], taus[low], taus[low + 1])
            u = uniforms(seeds.view(B, K)[:, low].cpu(), r, SWAP_STREAM)
            swap = u < torch.exp(log_ratio.clamp_max(0.0))  # (B, |low|)
            proposed[low.numpy()] += B
            accepted[low.numpy()] += swap.sum(0).numpy()
            b_idx, j = torch.nonzero(swap, as_tuple=True)
            k = low[j]
            xs = x.clone()
            xs[b_idx, k], xs[b_idx, k + 1] = x[b_idx, k + 1], x[b_idx, k]
            x = xs
            labels[b_idx, k], labels[b_idx, k + 1] = labels[b_idx, k + 1].clone(), labels[b_idx, k].clone()
        trips += track_round_trips(labels, phase)
        x = x.reshape(B * K, n)
    return Tempering(torch.cat([records[0].unsqueeze(0)] + records[1:]), torch.tensor(record_steps), taus,
                     proposed, accepted, trips, x.view(B, K, n).cpu(), rows)


def track_round_trips(labels: torch.Tensor, phase: torch.Tensor) -> np.ndarray:
    """Update each replica's phase from the slots it now holds; return the round trips completed, per ensemble."""
    B, K = labels.shape
    ens = torch.arange(B)
    at_cold, at_hot = labels[:, 0], labels[:, K - 1]
    done = phase[ens, at_cold] == 2
    phase[ens, at_cold] = 1
    reached = phase[ens, at_hot] == 1
    phase[ens[reached], at_hot[reached]] = 2
    return done.numpy().astype(np.int64)


@dataclass
class PlainRun:
    """Plain MH at one temperature run to a given cost (`plain_at_rows`)."""

    states: torch.Tensor  # (R, B, n): the state after every `record_every` steps (after step 0 first)
    steps: torch.Tensor  # (R,) the step of each record
    forward_rows: int  # conditionals evaluated, all chains
    final: torch.Tensor  # (B, n)


@torch.inference_mode()
def plain_at_rows(model, init: torch.Tensor, temperature: float, rows: int, chunk_steps: int, seed: int = 0,
                  energy="pll", record_every: int = 1, dtype: torch.dtype | None = None) -> PlainRun:
    """Plain MH (`metropolis`) at one temperature, run in chunks of `chunk_steps` steps until its forward rows reach
    `rows` (e.g. a tempered run's `forward_rows`): the comparison at equal cost, to within one chunk's rows.

    Chunk c continues from the last state with seeds derived from the chains' seeds and c (PLAIN_STREAM), and
    re-evaluates its start's energy (n rows a chain with the PLL energy), as every tempering round does.
    `record_every` must divide `chunk_steps`."""
    rows, chunk_steps = check_int("rows", rows, 1), check_int("chunk_steps", chunk_steps, 1)
    record_every = check_int("record_every", record_every, 1)
    if chunk_steps % record_every:
        raise ValueError(f"record_every = {record_every} must divide chunk_steps = {chunk_steps}, so that records "
                         "fall at the same steps in every chunk.")
    x = check_states(model, torch.as_tensor(init)).clone()
    seeds = chain_seeds(seed, x.shape[0]).to(x.device)
    records, steps, spent, c = [x.cpu().clone().unsqueeze(0)], [0], 0, 0
    while spent < rows:
        traj = metropolis(model, x, chunk_steps, float(temperature), derived_seeds(seeds, c, PLAIN_STREAM), energy,
                          "random", record_every, 1, dtype)
        spent += traj.forward_rows
        records.append(traj.states[1:])
        steps += (c * chunk_steps + traj.steps[1:]).tolist()
        x, c = traj.final.to(x.device), c + 1
    return PlainRun(torch.cat(records), torch.tensor(steps), spent, x.cpu())


def basins_visited(emb: np.ndarray, steps, radius: float, min_dwell: int) -> np.ndarray:
    """Distinct basins each chain visits, by notebook 03's trap criterion: emb (T, B, d) → (B,) int.

    A chain's traps (`semantic.find_traps`: stretches within `radius` of their running centre lasting ≥ `min_dwell`
    steps), in order; a trap is a new basin when its centre (the mean embedding of its records) lies farther than
    `radius` from the centre of every basin the chain visited before, else a return to that basin."""
    from ..measures.semantic import chain_traps

    emb = np.asarray(emb, dtype=float)
    traps = chain_traps(emb, np.asarray(steps), radius, min_dwell)
    counts = np.zeros(emb.shape[1], dtype=np.int64)
    for b, own in traps.groupby("chain"):
        centres: list[np.ndarray] = []
        for s, e in zip(own.start_index, own.end_index):
            c = emb[s:e + 1, b].mean(0)
            if all(np.linalg.norm(c - o) > radius for o in centres):
                centres.append(c)
        counts[b] = len(centres)
    return counts
