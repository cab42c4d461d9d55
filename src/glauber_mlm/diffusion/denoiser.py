"""The one interface of masked-diffusion samplers: the denoiser's logits at every site of a partial state.

A partial state z holds a token id at each decoded site and `MASK` (−1) at each masked one. `logits(z)` returns
ℓ_i(· | z) at every site, (B, n, V) float32, −inf outside the support; a sampler reads only the masked sites' rows.
Three denoisers implement it: any Hugging Face masked LM (`HFDenoiser`, the mask token at every masked site, one
forward), a real model restricted to k candidates at n free sites of a passage (`RestrictedDenoiser`, the exact
twin's model: local ids 0 … k−1), and the exact conditionals of a known joint law (`JointDenoiser`, the planted
truth on which a sampler must recover the joint).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from ..validate import as_temperatures

MASK = -1  # a masked site of a partial state


@runtime_checkable
class Denoiser(Protocol):
    vocab_size: int
    device: torch.device

    def logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(v | z) at every site i of each partial state z (B, n), float32 or float64 (B, n, V)."""
        ...


def check_partial(partial: torch.Tensor, vocab_size: int, n: int | None = None) -> torch.Tensor:
    """`partial` as a (B, n) int64 tensor whose entries are `MASK` or ids in [0, vocab_size); else a ValueError."""
    partial = torch.as_tensor(partial)
    if partial.ndim != 2 or partial.dtype.is_floating_point or partial.dtype == torch.bool or (
            n is not None and partial.shape[1] != n):
        size = f"(B, {n})" if n is not None else "(B, n)"
        raise ValueError(f"partial states must be a {size} integer tensor, {MASK} at masked sites, got "
                         f"{partial.dtype} of shape {tuple(partial.shape)}.")
    partial = partial.long()
    if ((partial < MASK) | (partial >= vocab_size)).any():
        raise ValueError(f"partial states hold ids outside [0, {vocab_size}) other than the mask ({MASK}).")
    return partial


def denoiser_probabilities(denoiser: Denoiser, partial: torch.Tensor, temperature: float | torch.Tensor = 1.0,
                           dtype: torch.dtype | None = None) -> torch.Tensor:
    """p_i^τ(v | z) = softmax(ℓ_i(· | z)/τ) at every site, float64 (B, n, V): τ as in the Glauber chain (one for all
    chains or one per chain)."""
    logits = denoiser.logits(partial, dtype)
    bad = ~torch.isfinite(logits.amax(-1))
    if bad.any():
        raise ValueError("the denoiser gave non-finite logits (NaN, +inf or no supported token) at some site: check the "
                         "model's weights or run it in dtype=torch.float32.")
    tau = as_temperatures(temperature, partial.shape[0], logits.device).double()
    return torch.softmax(logits.double() / tau.view(-1, 1, 1), dim=-1)


class HFDenoiser:
    """Any `MLMAdapter` (`models.hf.load_mlm`) as a denoiser: partial states hold vocabulary ids."""

    def __init__(self, mlm):
        self.mlm, self.vocab_size, self.device, self.support = mlm, mlm.vocab_size, mlm.device, mlm.support

    def logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """`MLMAdapter.masked_logits`: the mask token at every masked site, the head at every site."""
        partial = check_partial(partial, self.vocab_size)
        decoded = partial[partial >= 0]
        if decoded.numel() and not self.support.cpu()[decoded.cpu()].all():
            raise ValueError("partial states hold special or unused ids at decoded sites: a state is the passage's "
                             "ordinary tokens only (the frame is added by the adapter).")
        return self.mlm.masked_logits(partial, dtype)


class RestrictedDenoiser:
    """A masked LM on k candidates at n free sites of a passage (`exact.restricted`'s chain, with masks): local
    partial states z ∈ {MASK, 0 … k−1}^n; ℓ^R_i(v | z) = ℓ_{s_i}(C_iv | the passage with C_{j z_j} at decoded free
    sites s_j and the mask at every masked one). With one masked site it is `exact.restricted`'s conditional."""

    def __init__(self, mlm, context: torch.Tensor, sites: torch.Tensor, candidates: torch.Tensor):
        from ..exact.restricted import _check_passage

        self.mlm = mlm
        self.context, self.sites = _check_passage(mlm, context, sites)
        self.context = self.context.squeeze(0)
        self.candidates = torch.as_tensor(candidates).long().cpu()
        if self.candidates.shape[0] != self.sites.numel() or self.candidates.ndim != 2:
            raise ValueError(f"candidates must be (n, k) ids, one row per free site ({self.sites.numel()}), got shape "
                             f"{tuple(self.candidates.shape)}: e.g. exact.candidate_sets(mlm, context, sites, k).")
        self.n, self.vocab_size = self.candidates.shape
        self.device = torch.device("cpu")

    def logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ^R_i(· | z) at every free site, float32 (B, n, k)."""
        partial = check_partial(partial, self.vocab_size, self.n).cpu()
        B = partial.shape[0]
        passages = self.context.expand(B, -1).clone()
        ids = self.candidates[torch.arange(self.n), partial.clamp_min(0)]
        passages[:, self.sites] = torch.where(partial < 0, MASK, ids)
        out = self.mlm.masked_logits(passages.to(self.mlm.device), dtype).cpu()[:, self.sites]  # (B, n, V)
        return out.gather(2, self.candidates.unsqueeze(0).expand(B, -1, -1))


class JointDenoiser:
    """The exact denoiser of a known joint law π on {0 … q−1}^n: p_i(v | z) = π(x_i = v | x_D = z_D), D the decoded
    sites (logits: the log of the unnormalised marginal). The planted truth: a sampler that samples π must recover it."""

    def __init__(self, states: torch.Tensor, probs: torch.Tensor):
        self.states, self.probs = torch.as_tensor(states).long(), torch.as_tensor(probs, dtype=torch.float64)
        self.n = self.states.shape[1]
        self.vocab_size = int(self.states.max()) + 1
        if self.states.shape[0] != self.vocab_size**self.n or (self.probs <= 0).any():
            raise ValueError("a JointDenoiser needs every one of the q^n states with a positive probability "
                             "(e.g. PairwiseModel.joint()).")
        self.device = torch.device("cpu")

    def logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """log Σ_{x: x_D = z_D, x_i = v} π(x), float64 (B, n, q): exact, so a float64 twin stays exact."""
        partial = check_partial(partial, self.vocab_size, self.n)
        agree = ((partial.unsqueeze(1) == self.states.unsqueeze(0)) | (partial.unsqueeze(1) < 0)).all(-1)  # (B, S)
        weight = agree.double() * self.probs
        onehot = torch.nn.functional.one_hot(self.states, self.vocab_size).double()  # (S, n, q)
        return torch.einsum("bs,snv->bnv", weight, onehot).log()
