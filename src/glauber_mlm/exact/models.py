"""Exact models: pairwise conditionals whose joint law (or incompatibility) is known in closed form.

`PairwiseModel` has logits `ℓ_i(v | x_{-i}) = h_i(v) + Σ_{j≠i} W_ij(v, x_j)`.
If `W_ji = W_ijᵀ` for all pairs, these are the full conditionals of the Gibbs law
`π(x) ∝ exp(Σ_i h_i(x_i) + Σ_{i<j} W_ij(x_i, x_j))`; otherwise no joint has them, and the
rectangle statistic is `ρ = −Δ²D(a,a';b,b')` with `D = W_ij − W_jiᵀ` (see `exact_rectangle`).
"""
from __future__ import annotations

import itertools

import torch

from ..validate import check_int, check_real
from ..rng import check_seed


class PairwiseModel:
    """Conditional model on n sites with q states each; implements `ConditionalModel`."""

    def __init__(self, W: torch.Tensor, h: torch.Tensor | None = None):
        W = _real_tensor("W", W)
        if W.ndim != 4 or W.shape[0] != W.shape[1] or W.shape[2] != W.shape[3] or W.shape[0] < 1 or W.shape[2] < 2:
            raise ValueError(f"W must have shape (n, n, q, q) with n ≥ 1 sites and q ≥ 2 states, got {tuple(W.shape)}.")
        n, _, q, _ = W.shape
        W = W.clone()
        W[torch.arange(n), torch.arange(n)] = 0.0  # a site never interacts with itself
        self.W = W
        self.h = torch.zeros(n, q, dtype=torch.float64) if h is None else _real_tensor("h", h)
        if self.h.shape != (n, q):
            raise ValueError(f"h must have shape (n, q) = ({n}, {q}), got {tuple(self.h.shape)}.")
        self.n, self.vocab_size, self.max_length = n, q, n
        self.device = torch.device("cpu")
        self.support = torch.ones(q, dtype=torch.bool)

    @property
    def compatible(self) -> bool:
        """True when W_ji = W_ijᵀ, i.e. the conditionals come from one joint law."""
        return bool(torch.allclose(self.W, self.W.permute(1, 0, 3, 2)))

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(v|x_{-i}) = h_i(v) + Σ_j W_ij(v, x_j), float32 (B, q). The diagonal W_ii = 0 hides x_i."""
        if states.shape[1] != self.n:
            raise ValueError(f"this exact model has {self.n} sites, got sequences of length {states.shape[1]}.")
        Wi = self.W[sites]  # (B, n, q, q): W_ij(v, w) for each row's site i
        idx = states.view(states.shape[0], self.n, 1, 1).expand(-1, -1, self.vocab_size, 1)
        pair = Wi.gather(3, idx).squeeze(3).sum(1)  # Σ_j W_ij(v, x_j)
        return (self.h[sites] + pair).to(torch.float32)

    def energy(self, states: torch.Tensor) -> torch.Tensor:
        """log π(x) + const = Σ_i h_i(x_i) + Σ_{i<j} W_ij(x_i, x_j), for compatible W."""
        B = states.shape[0]
        field = self.h.gather(1, states.T).sum(0)
        xi = states.view(B, self.n, 1).expand(-1, -1, self.n)
        xj = states.view(B, 1, self.n).expand(-1, self.n, -1)
        i, j = torch.triu_indices(self.n, self.n, 1)
        pair = self.W[i, j, xi[:, i, j], xj[:, i, j]].sum(-1)
        return field + pair

    def joint(self, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """All q^n states and their exact probabilities π_τ(x) ∝ exp(energy(x)/τ)."""
        temperature = check_real("temperature", temperature, 0, above=True, fix="π_τ ∝ exp(energy/τ) needs one τ > 0.")
        if not self.compatible:
            raise ValueError("these conditionals are incompatible: no joint law exists (see exact_rectangle).")
        states = torch.tensor(list(itertools.product(range(self.vocab_size), repeat=self.n)))
        return states, torch.softmax(self.energy(states) / temperature, dim=0)


def _real_tensor(name: str, t) -> torch.Tensor:
    """`t` as a float64 tensor of finite real numbers: a NaN or inf here would read as incompatible conditionals."""
    t = torch.as_tensor(t)
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}.")
    t = t.to(torch.float64)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} holds NaN or ±inf: every interaction and field must be a finite real number.")
    return t


def potts_chain(n: int, q: int = 2, coupling: float = 1.0, field: torch.Tensor | None = None) -> PairwiseModel:
    """Nearest-neighbour Potts chain: π(x) ∝ exp(J Σ_i [x_i = x_{i+1}] + Σ_i h(x_i)); q = 2 is Ising.

    `field`: h, broadcast to (n, q): e.g. one value per state (q,) shared by every site, or one row per site (n, q)."""
    n, q = check_int("n", n, 1), check_int("q", q, 2)
    coupling = check_real("coupling", coupling, fix="J > 0 favours equal neighbours, J < 0 unequal ones.")
    h = None if field is None else _real_tensor("field", field)
    if h is not None:
        try:
            h = h.expand(n, q)
        except RuntimeError as err:
            raise ValueError(f"field must broadcast to (n, q) = ({n}, {q}), e.g. shape ({q},); got {tuple(h.shape)}.") from err
    W = torch.zeros(n, n, q, q, dtype=torch.float64)
    eye = coupling * torch.eye(q, dtype=torch.float64)
    for i in range(n - 1):
        W[i, i + 1] = eye
        W[i + 1, i] = eye
    return PairwiseModel(W, h)


def compatible_pairwise(n: int, q: int, logit_std: float = 1.0, seed: int = 0) -> PairwiseModel:
    """Random pairwise model with W_ji = W_ijᵀ (a joint law exists, so ρ = 0 exactly), logits of std ≈ `logit_std`.

    W_ij = G_ij + G_jiᵀ and h_i with i.i.d. normal entries of std σ = logit_std / √(2(n−1) + 1), so that
    ℓ_i = h_i + Σ_j W_ij(·, x_j) has variance ≈ logit_std²: a float-noise reference at a chosen logit scale.
    """
    n, q, seed = check_int("n", n, 1), check_int("q", q, 2), check_seed(seed)
    logit_std = check_real("logit_std", logit_std, 0)
    g = torch.Generator().manual_seed(seed)
    sigma = logit_std / (2 * (n - 1) + 1) ** 0.5
    G = sigma * torch.randn(n, n, q, q, generator=g, dtype=torch.float64)
    return PairwiseModel(G + G.permute(1, 0, 3, 2), sigma * torch.randn(n, q, generator=g, dtype=torch.float64))


def incompatible_pairwise(n: int, q: int, scale: float = 1.0, seed: int = 0) -> PairwiseModel:
    """Random pairwise model with independent W_ij and W_ji: conditionals no joint law can have."""
    n, q, seed = check_int("n", n, 1), check_int("q", q, 2), check_seed(seed)
    scale = check_real("scale", scale, 0)
    g = torch.Generator().manual_seed(seed)
    W = scale * torch.randn(n, n, q, q, generator=g, dtype=torch.float64)
    return PairwiseModel(W)


def exact_rectangle(model: PairwiseModel, i, j, a, a2, b, b2) -> torch.Tensor:
    """Closed-form ρ = log R = −(D(a,b) − D(a,b') − D(a',b) + D(a',b')) with D = W_ij − W_jiᵀ, at τ = 1."""
    i, j, a, a2, b, b2 = (torch.atleast_1d(torch.as_tensor(t)) for t in (i, j, a, a2, b, b2))
    D = model.W[i, j] - model.W[j, i].transpose(-1, -2)  # (R, q, q)
    r = torch.arange(D.shape[0])
    return -(D[r, a, b] - D[r, a, b2] - D[r, a2, b] + D[r, a2, b2])
