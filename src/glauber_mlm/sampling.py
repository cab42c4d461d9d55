"""Glauber dynamics (random-scan or systematic-scan Gibbs) for many chains in one batch.

One step: choose a site i (uniform, or i = t mod n), draw x_i ~ q_i^τ(· | x_{-i}).
Every chain has its own seed and temperature; randomness is counter-based (see `rng`), so a
chain's trajectory does not depend on the rest of the batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from .conditionals import ConditionalModel, as_temperatures, check_states, log_conditionals
from .rng import sample_categorical, uniforms

SITE_STREAM, TOKEN_STREAM = 0, 1


@dataclass
class Trajectory:
    """What a run of `glauber` keeps: states every `record_every` steps, and which steps changed a token."""

    states: torch.Tensor  # (R, B, n): the state after steps 0, k, 2k, …
    steps: torch.Tensor  # (R,): the step number of each recorded state
    sites: torch.Tensor  # (T, B): the site updated at each step
    changed: torch.Tensor  # (T, B) bool: whether that step changed the token
    final: torch.Tensor  # (B, n): the state after the last step


def chain_seeds(seed: int | list[int] | torch.Tensor, batch: int) -> torch.Tensor:
    """One int64 seed per chain: an int s gives s, s+1, …; a list or tensor is used as given."""
    if isinstance(seed, int):
        return torch.arange(seed, seed + batch, dtype=torch.int64)
    seeds = torch.as_tensor(seed, dtype=torch.int64).flatten()
    if seeds.numel() != batch:
        raise ValueError(f"got {seeds.numel()} seeds for {batch} chains: pass one int, or one seed per chain.")
    return seeds


def choose_sites(seeds: torch.Tensor, step: int, n: int, scan: str) -> torch.Tensor:
    """Random scan: i ~ Uniform{0..n−1} from the chain's seed; systematic scan: i = step mod n."""
    if scan == "random":
        return (uniforms(seeds, step, SITE_STREAM) * n).long().clamp_max(n - 1)
    return torch.full_like(seeds, step % n)


def check_scan(scan: str) -> None:
    if scan not in ("random", "systematic"):
        raise ValueError(f"scan must be 'random' or 'systematic', got {scan!r}.")


@torch.inference_mode()
def glauber(
    model: ConditionalModel,
    init: torch.Tensor,
    steps: int,
    temperature: float | torch.Tensor = 1.0,
    seed: int | list[int] | torch.Tensor = 0,
    scan: str = "random",
    record_every: int = 1,
    dtype: torch.dtype | None = None,
    progress: bool = False,
) -> Trajectory:
    """Run `steps` Glauber updates on every chain of `init` (B × n) in one batched pass per step.

    `temperature` and `seed` are scalars or one value per chain, so a temperature grid is one batch.
    `dtype` is the forward-pass dtype (None: the model's default); softmax and sampling run in fp32/fp64.
    """
    check_scan(scan)
    if steps < 0 or record_every < 1:
        raise ValueError(f"need steps ≥ 0 and record_every ≥ 1, got steps={steps}, record_every={record_every}.")
    x = check_states(model, init).clone()
    B, n = x.shape
    tau = as_temperatures(temperature, B, x.device)
    seeds = chain_seeds(seed, B).to(x.device)
    rows = torch.arange(B, device=x.device)

    recorded, recorded_steps = [x.cpu().clone()], [0]
    sites_log = torch.empty(steps, B, dtype=torch.int16 if n < 2**15 else torch.int32)
    changed_log = torch.empty(steps, B, dtype=torch.bool)
    for t in tqdm(range(steps), disable=not progress, desc="glauber", mininterval=2.0):
        sites = choose_sites(seeds, t, n, scan)
        probs = log_conditionals(model, x, sites, tau, dtype).exp()
        new = sample_categorical(probs, uniforms(seeds, t, TOKEN_STREAM))
        changed = new != x[rows, sites]
        x[rows, sites] = new
        sites_log[t], changed_log[t] = sites.cpu(), changed.cpu()
        if (t + 1) % record_every == 0:
            recorded.append(x.cpu().clone())
            recorded_steps.append(t + 1)
    return Trajectory(torch.stack(recorded), torch.tensor(recorded_steps), sites_log, changed_log, x.cpu())
