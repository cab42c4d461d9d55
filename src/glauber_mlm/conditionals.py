"""The one interface every model implements: conditional logits at chosen sites.

`logits(states, sites)` takes a batch of states `x` (B × n token ids, special frame tokens
excluded) and one site per row, and returns `ℓ_i(· | x_{-i})` (B × V, float32), with `-inf`
outside the support. The token currently at the site is ignored (masked). Tempering, sampling,
coupling, rectangles and influence are all built on this call.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class ConditionalModel(Protocol):
    vocab_size: int
    max_length: int
    device: torch.device
    support: torch.Tensor  # bool (V,): ids the chain may visit

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(v | x_{-i}) for each row's site i, float32 (B, V); `dtype` is the compute dtype."""
        ...


def as_temperatures(temperature: float | torch.Tensor, batch: int, device: torch.device) -> torch.Tensor:
    """One temperature per row (float32), after checking every τ is finite and > 0."""
    tau = torch.as_tensor(temperature, dtype=torch.float32, device=device).flatten()
    if tau.numel() == 0:
        raise ValueError("temperature is empty: pass a positive float or one value per chain.")
    bad = ~torch.isfinite(tau) | (tau <= 0)
    if bad.any():
        raise ValueError(
            f"temperature must be finite and > 0, got {tau[bad].tolist()}: "
            "q_i^τ ∝ exp(ℓ_i/τ) is undefined there; use e.g. τ = 0.05 for a near-greedy chain."
        )
    if tau.numel() == 1:
        return tau.expand(batch)
    if tau.numel() != batch:
        raise ValueError(f"got {tau.numel()} temperatures for {batch} chains: pass one, or one per chain.")
    return tau


def check_states(model: ConditionalModel, states: torch.Tensor) -> torch.Tensor:
    """Validate a (B, n) batch of token ids against the model before any forward pass."""
    states = torch.as_tensor(states)
    if states.ndim != 2:
        raise ValueError(f"states must be a (chains, length) tensor of token ids, got shape {tuple(states.shape)}.")
    if states.shape[0] == 0 or states.shape[1] == 0:
        raise ValueError(f"empty batch (shape {tuple(states.shape)}): pass at least one chain of at least one token.")
    if states.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"states must hold integer token ids, got dtype {states.dtype}.")
    n = states.shape[1]
    if n > model.max_length:
        raise ValueError(
            f"sequences of {n} tokens are longer than the model takes ({model.max_length} tokens "
            "besides its special frame tokens): use shorter passages or a model with more positions."
        )
    if (states < 0).any() or (states >= model.vocab_size).any():
        raise ValueError(f"token ids must lie in [0, {model.vocab_size}): check the tokenizer matches the model.")
    return states.to(model.device, torch.int64)


def log_conditionals(
    model: ConditionalModel,
    states: torch.Tensor,
    sites: torch.Tensor,
    temperature: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """log q_i^τ(v | x_{-i}) = log_softmax(ℓ_i / τ), computed in float32 whatever the forward dtype."""
    logits = model.logits(states, sites, dtype=dtype)
    return torch.log_softmax(logits / temperature.unsqueeze(-1), dim=-1)


def total_variation(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """TV(p, q) = ½ Σ_v |p_v − q_v| along the last dimension."""
    return 0.5 * (logp.exp() - logq.exp()).abs().sum(-1)

