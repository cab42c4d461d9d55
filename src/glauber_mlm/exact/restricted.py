"""A real model's Glauber chain restricted to k candidate tokens at n free sites of a passage: an exact model.

Fix a passage c (the model's state: its n_c ordinary tokens) and free sites s_1 … s_n, each with k candidate ids
C_i = (C_i1 … C_ik). A local state y ∈ {0 … k−1}^n stands for the passage with token C_{i y_i} at s_i; its
conditional at free site i is the model's own, renormalised over that site's candidates:

    ℓ^R_i(v | y_{−i}) = ℓ_{s_i}(C_iv | c with C_{j y_j} at s_j, j ≠ i),   q^R,τ_i ∝ exp(ℓ^R_i / τ).

With k^n states it is small enough to enumerate: every state's n conditionals are evaluated once, in batched
forwards (the site is masked, so the n·k^(n−1) distinct rows suffice), and cached as a (k^n, n, k) table. The
result is a `ConditionalModel` like `models.PairwiseModel` (`n`, `vocab_size = k`, `logits(states, sites)`), so the
exact tools (`scan_order`, `lag_coupling.exact_lag_bound`, `quantities`) and the samplers run on it unchanged, and
its answers are exact answers about the model's own chain.
"""
from __future__ import annotations

import torch

from ..conditionals import ConditionalModel
from ..validate import check_dtype, check_int, check_memory, check_states

ROWS_PER_FORWARD = 512  # rows per model call: a chunk's full-vocabulary logits are dropped once gathered


def _check_passage(model: ConditionalModel, context, sites) -> tuple[torch.Tensor, torch.Tensor]:
    """`context` as a (1, n_c) state of `model` and `sites` as distinct positions in it."""
    context = torch.as_tensor(context)
    if context.ndim != 1:
        raise ValueError(f"context must be one passage, a 1-d tensor of token ids, got shape {tuple(context.shape)}: "
                         "pass states[p], not the batch.")
    context = check_states(model, context.unsqueeze(0)).cpu()
    sites = torch.as_tensor(sites)
    if sites.ndim != 1 or sites.numel() == 0 or sites.dtype.is_floating_point or sites.dtype == torch.bool:
        raise ValueError(f"sites must be a non-empty 1-d list of integer positions in the passage, got {sites!r}.")
    sites = sites.long()
    n_c = context.shape[1]
    if (sites < 0).any() or (sites >= n_c).any() or sites.unique().numel() != sites.numel():
        raise ValueError(f"sites must be distinct positions in [0, {n_c}) (the passage's ordinary tokens, frame "
                         f"excluded), got {sites.tolist()}.")
    return context, sites


def digits(index: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """The base-k digits (most significant first) of each state index: (S,) → (S, n), the order of `all_states`."""
    powers = k ** torch.arange(n - 1, -1, -1, dtype=torch.int64)
    return (index.unsqueeze(-1) // powers) % k


@torch.inference_mode()
def candidate_sets(model: ConditionalModel, context, sites, k: int, dtype: torch.dtype | str | None = None
                   ) -> torch.Tensor:
    """Each free site's top-k ids under the passage with that site masked: C_i = top-k ℓ_{s_i}(· | c), (n, k).

    Off-support ids have logit −inf (the adapter masks them), so they are chosen only where fewer than k ids are
    supported, which is refused."""
    context, sites = _check_passage(model, context, sites)
    k = check_int("k", k, 2)
    logits = model.logits(context.expand(sites.numel(), -1).to(model.device), sites.to(model.device),
                          dtype=check_dtype(dtype)).cpu()
    top = logits.topk(k, dim=-1)
    if not torch.isfinite(top.values).all():
        raise ValueError(f"fewer than k = {k} supported tokens at some site: ask for a smaller k.")
    return top.indices


class RestrictedModel:
    """The chain on k candidates at each of n free sites of a passage; implements `ConditionalModel`.

    States are local: y_i ∈ {0 … k−1} picks candidate C_{i y_i}. `table[s, i]` holds ℓ^R_i(· | y) for the state of
    base-k index s (`calibration.state_index`), float32; `tokens(states)` gives the passages they stand for."""

    def __init__(self, context: torch.Tensor, sites: torch.Tensor, candidates: torch.Tensor, table: torch.Tensor):
        self.context, self.sites, self.candidates, self.table = context, sites, candidates, table
        self.n, self.vocab_size = candidates.shape
        self.max_length = self.n
        self.device = torch.device("cpu")
        self.support = torch.ones(self.vocab_size, dtype=torch.bool)
        self._powers = self.vocab_size ** torch.arange(self.n - 1, -1, -1, dtype=torch.int64)

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ^R_i(· | y_{−i}) for each row's site i, float32 (B, k), read from the table (`dtype` is ignored: the
        table was computed once, in the dtype `restricted` was given)."""
        if states.shape[1] != self.n:
            raise ValueError(f"this restricted chain has {self.n} free sites, got states of length {states.shape[1]}.")
        index = (states.cpu().long() * self._powers).sum(-1)
        return self.table[index, sites.cpu().long()]

    def tokens(self, states: torch.Tensor) -> torch.Tensor:
        """The passages local states stand for: `context` with C_{i y_i} at s_i, (B, n_c) token ids."""
        states = torch.as_tensor(states).long()
        if states.ndim != 2 or states.shape[1] != self.n or (states < 0).any() or (states >= self.vocab_size).any():
            raise ValueError(f"states must be (B, {self.n}) local states with values in [0, {self.vocab_size}), got "
                             f"shape {tuple(states.shape)}.")
        full = self.context.expand(states.shape[0], -1).clone()
        full[:, self.sites] = self.candidates[torch.arange(self.n), states]
        return full


@torch.inference_mode()
def restricted(model: ConditionalModel, context, sites, candidates, dtype: torch.dtype | str | None = None
               ) -> RestrictedModel:
    """The exact model of `model`'s chain on `candidates` (n, k) at `sites` of `context`, every conditional
    evaluated once: ℓ^R_i(v | y_{−i}) = ℓ_{s_i}(C_iv | passage with C_{j y_j} at s_j), a (k^n, n, k) table.

    The site is masked, so its conditional ignores y_i: n·k^(n−1) forward rows, `ROWS_PER_FORWARD` a call, in the
    forward `dtype` (None: the model's). Refused up front: candidates that repeat an id at a site (the chain would
    count one token twice) or lie off the model's support, and a table that would not fit in memory."""
    context, sites = _check_passage(model, context, sites)
    candidates = torch.as_tensor(candidates)
    n = sites.numel()
    if candidates.ndim != 2 or candidates.shape[0] != n or candidates.shape[1] < 2:
        raise ValueError(f"candidates must be an (n, k) tensor of token ids, n = {n} sites and k ≥ 2 candidates each, "
                         f"got shape {tuple(candidates.shape)}: e.g. candidate_sets(model, context, sites, k).")
    candidates = check_states(model, candidates).cpu()  # integer ids on the support
    if (candidates.sort(1).values.diff(1) == 0).any():
        bad = [i for i in range(n) if candidates[i].unique().numel() < candidates.shape[1]]
        raise ValueError(f"candidates repeat a token id at sites {bad}: each site's k candidates must be distinct "
                         "(candidate_sets gives distinct ones).")
    k = candidates.shape[1]
    S = k**n
    check_memory(f"restricted chain ({k}^{n} = {S} states × {n} sites × {k} candidates)", S * n * k * 4 * 2,
                 ROWS_PER_FORWARD * int(model.vocab_size) * 4 * 2, model.device,
                 f"use fewer free sites or candidates: the table holds k^n · n · k = {S * n * k:.3g} floats.")
    dtype = check_dtype(dtype)
    table = torch.empty(S, n, k, dtype=torch.float32)
    index = torch.arange(S)
    local = digits(index, n, k)  # (S, n)
    passages = context.expand(S, -1).clone()
    passages[:, sites] = candidates[torch.arange(n), local]
    for i in range(n):
        rows = index[local[:, i] == 0]  # one state per x_{−i}: the site itself is masked
        out = torch.empty(rows.numel(), k)
        for start in range(0, rows.numel(), ROWS_PER_FORWARD):
            chunk = rows[start : start + ROWS_PER_FORWARD]
            site = torch.full((chunk.numel(),), int(sites[i]), device=model.device)
            logits = model.logits(passages[chunk].to(model.device), site, dtype=dtype).cpu()
            out[start : start + chunk.numel()] = logits[:, candidates[i]]
        stride = k ** (n - 1 - i)
        for v in range(k):  # the same conditional for every value at site i
            table[rows + v * stride, i] = out
    if not torch.isfinite(table).all():
        raise ValueError("the model gave non-finite logits to some candidates: pick candidates on its support "
                         "(candidate_sets does).")
    return RestrictedModel(context.squeeze(0), sites, candidates, table)
