"""The one interface every model implements: conditional logits at chosen sites.

`logits(states, sites)` takes a batch of states `x` (B × n token ids, special frame tokens
excluded) and one site per row, and returns `ℓ_i(· | x_{-i})` (B × V, float32), with `-inf`
outside the support. The token currently at the site is ignored (masked). Tempering, sampling,
coupling, rectangles and influence are all built on this call, through `checked_logits`: a row with a NaN or +inf
logit, or none finite, is refused there (one message for every sampler and measure), never passed on as NaN.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from .validate import check_sites


@runtime_checkable
class ConditionalModel(Protocol):
    vocab_size: int
    max_length: int
    device: torch.device
    support: torch.Tensor  # bool (V,): ids the chain may visit

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(v | x_{-i}) for each row's site i, float32 (B, V); `dtype` is the compute dtype."""
        ...


def checked_logits(model: ConditionalModel, states: torch.Tensor, sites: torch.Tensor,
                   dtype: torch.dtype | None = None) -> torch.Tensor:
    """`model.logits(states, sites, dtype)`, refused (`require_finite`) where a row defines no law."""
    return require_finite(model.logits(states, sites, dtype=dtype), sites)


def require_finite(logits: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """`logits` (B, V) unchanged when every row has a finite max_v ℓ(v) (no NaN, no +inf, some token in the support).

    One reduction: the row max is NaN if any entry is, +inf if any entry is, −inf if all are (−inf outside the
    support is the interface's own convention). Else a ValueError names the rows, their sites and the likely cause."""
    bad = ~torch.isfinite(logits.amax(-1))
    if bad.any():
        rows = torch.nonzero(bad).flatten()[:5]
        raise ValueError(
            f"the model gave non-finite logits (NaN or +inf, or no finite token) in rows {rows.tolist()} at sites "
            f"{sites[rows.to(sites.device)].tolist()}: NaN logits from the model mean corrupt weights (e.g. a huge "
            "embedding row) or a forward dtype that overflows. Check the model's weights, or run it in "
            "dtype=torch.float32.")
    return logits


def log_conditionals(
    model: ConditionalModel,
    states: torch.Tensor,
    sites: torch.Tensor,
    temperature: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """log q_i^τ(v | x_{-i}) = log_softmax(ℓ_i / τ), computed in float32 whatever the forward dtype.

    `sites` are checked (integers in [0, n), one per row): a site outside the state would put the mask
    on the frame or on another site without any error from the model."""
    sites = check_sites(sites, states.shape[0], states.shape[1]).to(states.device)
    logits = checked_logits(model, states, sites, dtype)
    return torch.log_softmax(logits / temperature.unsqueeze(-1), dim=-1)


def conditional_probabilities(
    model: ConditionalModel,
    states: torch.Tensor,
    sites: torch.Tensor,
    temperature: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """q_i^τ(v | x_{-i}) = softmax(ℓ_i / τ) in float64: the law a chain draws from.

    float64 because at low τ most of the vocabulary sits 100–1000 nats below the mode, where float32 exp
    returns subnormals (tens of times slower per element, and meaningless: they round away in the CDF)."""
    sites = check_sites(sites, states.shape[0], states.shape[1]).to(states.device)
    logits = checked_logits(model, states, sites, dtype)
    return torch.softmax(logits.double() / temperature.double().unsqueeze(-1), dim=-1)


def total_variation(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """TV(p, q) = ½ Σ_v |p_v − q_v| along the last dimension."""
    return 0.5 * (logp.exp() - logq.exp()).abs().sum(-1)

