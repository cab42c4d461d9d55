"""A second incompatibility measure: Arnold–Press least squares on pairwise conditionals over top-k candidates.

For a context z, sites i ≠ j and candidate sets A (k tokens at i), B (k tokens at j), with
P[a,b] = q_i(a | x_j=b, z) renormalised over A and Q[a,b] = q_j(b | x_i=a, z) renormalised over B:

    D = log P − log Q,   E = D − D̄_{a·} − D̄_{·b} + D̄_{··},   rms = √(mean_{a,b} E[a,b]²)

A joint π on A×B with π(a|b) = P[a,b] and π(b|a) = Q[a,b] exists iff D is additively separable,
D[a,b] = u(a) + v(b) (then u = log π_A, v = −log π_B), i.e. iff E = 0: `rms` is the root-mean-square residual
of the least-squares fit of u(a) + v(b) to D (a two-way ANOVA without replication), as in Arnold & Press (1989)
and, on an MLM's top-k candidates, Torroba Hennigen & Kim (ACL 2023). Renormalising over A or B only adds a
function of b or of a to D, so `rms` is the same for the raw conditionals.

Relation to the rectangle test: the ρ of a rectangle {a,a'}×{b,b'} inside A×B is −(D[a,b] − D[a,b'] − D[a',b]
+ D[a',b']), a double difference that the fit leaves unchanged. Summed over the C(k,2)² rectangles of A×B,
Σ ρ² = k⁴ rms², so rms = (k−1)/(2k) · √(mean ρ²); for k = 2 (one rectangle) rms = |ρ|/4. At temperature τ,
D scales as 1/τ up to separable terms, so rms_τ = rms_1/τ, like ρ.

The fit also gives a compromise joint on A×B, `log_joint`: log π̂ ∝ ½(log P + log Q + ū(a) − v̄(b)) with
ū, v̄ the fitted row and column effects; its conditionals are P and Q each tilted by half the residual,
π̂(a|b) ∝ P[a,b]·e^{−E[a,b]/2}, π̂(b|a) ∝ Q[a,b]·e^{E[a,b]/2}, and it is the exact joint when E = 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..conditionals import ConditionalModel, checked_logits, log_conditionals
from ..validate import as_temperatures, check_dtype, check_int, check_sites, check_states


@dataclass
class CandidatePairs:
    """T site pairs: contexts (T, n), sites i ≠ j (T,), k candidate tokens A (T, k) at i and B (T, k) at j."""

    contexts: torch.Tensor
    i: torch.Tensor
    j: torch.Tensor
    A: torch.Tensor
    B: torch.Tensor


@dataclass
class Compatibility:
    """The Arnold–Press fit for each pair: the RMS residual, the residual itself and the compromise joint."""

    rms: torch.Tensor  # (T,) float64: 0 iff the pair's conditionals are compatible on A×B
    residual: torch.Tensor  # (T, k, k) float64: E[a, b], D with its row and column effects removed
    log_joint: torch.Tensor  # (T, k, k) float64: log π̂(a, b), normalised over A×B


def _check_sites(model: ConditionalModel, contexts, i, j) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    contexts = check_states(model, contexts)
    T, n = contexts.shape
    if n < 2:
        raise ValueError(f"a pair of sites needs contexts of ≥ 2 tokens, got {n}.")
    i, j = (check_sites(s, T, n, name).to(contexts.device) for s, name in ((i, "i"), (j, "j")))
    if (i == j).any():
        raise ValueError("the compatibility statistic needs two different sites: found i == j; "
                         "draw j from the other sites.")
    return contexts, i, j


def _check_candidates(model: ConditionalModel, tokens, T: int, name: str) -> torch.Tensor:
    tokens = torch.as_tensor(tokens)
    if tokens.dtype == torch.bool or tokens.is_floating_point() or tokens.is_complex():
        raise TypeError(f"candidate set {name} must hold integer token ids, got dtype {tokens.dtype}.")
    if tokens.ndim != 2 or tokens.shape[0] != T:
        raise ValueError(f"candidate set {name} must have shape (pairs, k) = ({T}, k), got {tuple(tokens.shape)}.")
    k, support = tokens.shape[1], model.support.cpu()
    if k < 2:
        raise ValueError(f"candidate sets need k ≥ 2 tokens (one token leaves nothing to compare), got k = {k}.")
    if k > int(support.sum()):
        raise ValueError(f"k = {k} candidates is more than the model's support ({int(support.sum())} tokens).")
    tokens = tokens.long().cpu()
    if ((tokens < 0) | (tokens >= model.vocab_size)).any() or not support[tokens.clamp(0, model.vocab_size - 1)].all():
        raise ValueError(f"candidate set {name} holds ids outside the model's support "
                         "(vocabulary minus special/unused ids).")
    if (tokens.sort(1).values.diff(dim=1) == 0).any():
        raise ValueError(f"candidate set {name} repeats a token in some row: "
                         "the k candidates of a site must be distinct.")
    return tokens


def _check(model: ConditionalModel, pairs: CandidatePairs) -> tuple[torch.Tensor, ...]:
    contexts, i, j = _check_sites(model, pairs.contexts, pairs.i, pairs.j)
    T = contexts.shape[0]
    A, B = (_check_candidates(model, t, T, name).to(contexts.device) for t, name in ((pairs.A, "A"), (pairs.B, "B")))
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A and B must hold the same number k of candidates, got {A.shape[1]} and {B.shape[1]}.")
    return contexts, i, j, A, B


@torch.inference_mode()
def top_k_candidates(model: ConditionalModel, contexts: torch.Tensor, i, j, k: int) -> CandidatePairs:
    """Candidate sets from the conditionals at the context itself: A = top-k of ℓ_i(·|x_{-i}), B = that of ℓ_j.

    These are the tokens `random_rectangles(top_k=k)` draws a, a' and b, b' from, so each of its rectangles
    lies inside A×B when both use the same contexts, sites and k."""
    contexts, i, j = _check_sites(model, contexts, i, j)
    k = check_int("k", k, 2, int(model.support.sum()))  # a top-k beyond the support would pick −inf ids
    T = contexts.shape[0]
    logits = checked_logits(model, torch.cat([contexts, contexts]), torch.cat([i, j]), torch.float32)
    A, B = logits.topk(k, dim=-1).indices.split(T)
    return CandidatePairs(contexts.cpu(), i.cpu(), j.cpu(), A.cpu(), B.cpu())


@torch.inference_mode()
def compatibility_test(
    model: ConditionalModel,
    pairs: CandidatePairs,
    temperature: float | list[float] | torch.Tensor = 1.0,
    dtype: torch.dtype | str | None = torch.float32,
    chunk: int = 64,
) -> Compatibility:
    """The Arnold–Press residual of each pair (see the module doc), `chunk` pairs (2·k·chunk rows) per forward batch.

    `temperature`: one τ for every pair, or one per pair. Defaults to fp32 forwards, as `rectangle_test` does: the
    residual can be smaller than bf16 rounding."""
    chunk, dtype = check_int("chunk", chunk, 1), check_dtype(dtype)
    contexts, i, j, A, B = _check(model, pairs)
    tau = as_temperatures(temperature, contexts.shape[0], contexts.device, "pair")  # refused before any forward pass
    parts = [_compatibility_chunk(model, contexts[s : s + chunk], *(t[s : s + chunk] for t in (i, j, A, B, tau)),
                                  dtype=dtype) for s in range(0, contexts.shape[0], chunk)]
    return Compatibility(*(torch.cat([p[m] for p in parts]).cpu() for m in range(3)))


def _with_token(contexts: torch.Tensor, site: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(T, k, n): each context k times, with tokens[t, c] put at site[t] in copy c."""
    T, k = tokens.shape
    states = contexts.unsqueeze(1).repeat(1, k, 1)
    rows, copies = torch.arange(T, device=contexts.device).unsqueeze(1), torch.arange(k, device=contexts.device)
    states[rows, copies, site.unsqueeze(1)] = tokens
    return states


def _compatibility_chunk(model, contexts, i, j, A, B, tau, dtype):
    T, n = contexts.shape
    k = A.shape[1]
    # site i with each b ∈ B at j, then site j with each a ∈ A at i: one batch of 2·T·k queries
    states = torch.cat([_with_token(contexts, j, B), _with_token(contexts, i, A)]).view(2 * T * k, n)
    sites = torch.cat([i, j]).repeat_interleave(k)
    logq = log_conditionals(model, states, sites, tau.repeat(2).repeat_interleave(k), dtype).view(2, T, k, -1)
    # log q_i(A[a] | x_j = B[b]) arranged [t, a, b]; log q_j(B[b] | x_i = A[a]) arranged [t, a, b]
    log_qi = logq[0].gather(2, A.unsqueeze(1).expand(T, k, k)).transpose(1, 2).double()
    log_qj = logq[1].gather(2, B.unsqueeze(1).expand(T, k, k)).double()
    log_P = log_qi - log_qi.logsumexp(1, keepdim=True)
    log_Q = log_qj - log_qj.logsumexp(2, keepdim=True)
    D = log_P - log_Q
    row, col = D.mean(2, keepdim=True), D.mean(1, keepdim=True)
    residual = D - row - col + D.mean((1, 2), keepdim=True)
    rms = residual.pow(2).mean((1, 2)).sqrt()
    log_joint = 0.5 * (log_P + log_Q + row - col)
    log_joint = log_joint - log_joint.logsumexp((1, 2), keepdim=True)
    return rms, residual, log_joint
