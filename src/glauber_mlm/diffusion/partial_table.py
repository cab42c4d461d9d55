"""A denoiser's conditionals at every partial state of n sites with k values, evaluated once and cached.

Partial states z ∈ {MASK, 0 … k−1}^n are indexed in base k + 1 by the codes z_i + 1 (0 = masked), most significant
site first; the fully decoded states (codes 1 … k) are the full states y ∈ {0 … k−1}^n. `partial_table` runs the
denoiser on all (k+1)^n partial states ((k+1)^n − k^n forwards for a real model: the decoded states' rows are
evaluated too, for one batch shape, and never read). `PartialTable` is itself a denoiser (a table look-up), and
`OneMaskChain` is its Glauber chain: q_i(v | y_{−i}) = p_i(v | y with site i masked), a `ConditionalModel` on which
every tool of `exact` runs (`exact.kernel`, `exact.stationary`, …).
"""
from __future__ import annotations

import torch

from ..exact.restricted import digits
from ..validate import as_temperatures, check_int
from .denoiser import MASK, Denoiser

MAX_PARTIAL_STATES = 20_000  # (k+1)^n: 3^9, 4^7, 5^6 fit


def partial_states(n: int, k: int) -> torch.Tensor:
    """Every partial state, ((k+1)^n, n), in base-(k+1) order of the codes z_i + 1."""
    return digits(torch.arange((k + 1) ** n), n, k + 1) - 1


def partial_index(z: torch.Tensor, k: int) -> torch.Tensor:
    """The base-(k+1) index of partial states (..., n)."""
    n = z.shape[-1]
    return ((z.long() + 1) * (k + 1) ** torch.arange(n - 1, -1, -1, dtype=torch.int64)).sum(-1)


class PartialTable:
    """ℓ_i(· | z) of a denoiser at every partial state: `table` ((k+1)^n, n, k) float64."""

    def __init__(self, table: torch.Tensor):
        self.table = table.double()
        S, self.n, self.vocab_size = table.shape
        self.k = self.vocab_size
        self.device = torch.device("cpu")
        if S != (self.k + 1) ** self.n:
            raise ValueError(f"a partial table has (k+1)^n = {(self.k + 1) ** self.n} rows, got {S}.")

    def logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(· | z) looked up, float64 (B, n, k)."""
        return self.table[partial_index(torch.as_tensor(partial), self.k)]

    def log_probs(self, temperature: float = 1.0) -> torch.Tensor:
        """log p_i^τ(v | z) = log_softmax(ℓ_i(· | z)/τ) at every partial state, ((k+1)^n, n, k); τ read as the
        samplers read it (`as_temperatures`, float32), so the twin and the Monte Carlo sampler share one τ."""
        tau = float(as_temperatures(temperature, 1, torch.device("cpu"))[0])
        return torch.log_softmax(self.table / tau, -1)


def partial_table(denoiser: Denoiser, n: int, k: int, rows_per_call: int = 256) -> PartialTable:
    """`denoiser` (on local ids 0 … k−1, e.g. `RestrictedDenoiser`, `JointDenoiser`) at all (k+1)^n partial states."""
    n, k = check_int("n", n, 1), check_int("k", k, 2)
    if (k + 1) ** n > MAX_PARTIAL_STATES:
        raise ValueError(f"(k+1)^n = {(k + 1) ** n} partial states is more than {MAX_PARTIAL_STATES}: use fewer sites "
                         "or candidates.")
    if denoiser.vocab_size != k:
        raise ValueError(f"the denoiser has {denoiser.vocab_size} values per site, not k = {k}.")
    states = partial_states(n, k)
    table = torch.cat([denoiser.logits(states[a : a + rows_per_call]).double().cpu()
                       for a in range(0, states.shape[0], rows_per_call)])
    masked = states == MASK
    if not torch.isfinite(table[masked]).all():
        raise ValueError("the denoiser gave non-finite logits to some candidate at a masked site: pick candidates on "
                         "its support (exact.candidate_sets does).")
    return PartialTable(table)


class OneMaskChain:
    """The Glauber chain of a partial table: ℓ_i(v | y_{−i}) = ℓ_i(v | y with site i masked); a `ConditionalModel`."""

    def __init__(self, partial: PartialTable):
        self.partial = partial
        self.n, self.vocab_size, self.max_length = partial.n, partial.k, partial.n
        self.device = torch.device("cpu")
        self.support = torch.ones(partial.k, dtype=torch.bool)

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(· | y_{−i}) for each row's site i, (B, k), kept in the table's float64 (the exact tools read it so)."""
        z = states.clone().long()
        z[torch.arange(z.shape[0]), sites.long()] = MASK
        return self.partial.logits(z)[torch.arange(z.shape[0]), sites.long()]
