"""Counter-based randomness: every uniform is a pure function of (seed, step, stream).

The random numbers a chain uses therefore depend on its own seed only, not on which other chains
share its batch, whether coupled pairs have left the batch, or how the batch is split. Its draws also
depend on the conditionals it is given: where these are computed per row in float64 (the exact models)
the whole trajectory is batch-independent; for a neural model see `sampling` for what is guaranteed.
"""
from __future__ import annotations

import torch

from .validate import check_int

# the streams of a chain's uniforms, one per use: Glauber's site and token, coupling's branch and X/Y tokens, MH's test
SITE_STREAM, TOKEN_STREAM, BRANCH_STREAM, X_STREAM, Y_STREAM, ACCEPT_STREAM = range(6)
_MASK64 = (1 << 64) - 1
SEED_MIN, SEED_MAX = -(1 << 63), (1 << 63) - 1  # seeds are int64: the streams hash them as such


def check_seed(seed, count: int = 1) -> int:
    """`seed` as a Python int such that seed, seed + 1, …, seed + count − 1 (the seeds of `count` chains) are int64."""
    seed = check_int("seed", seed)
    if not SEED_MIN <= seed <= SEED_MAX - (count - 1):
        chains = f" so that the seeds seed, …, seed + {count - 1} of its {count} chains are too" if count > 1 else ""
        raise ValueError(f"seed must be an int64, in [-2**63, 2**63 - {count}]{chains}; got {seed}: "
                         "reduce it, e.g. seed % 2**62.")
    return seed


def _signed(c: int) -> int:
    """A 64-bit constant as torch's signed int64 (torch integer arithmetic wraps around)."""
    return c - (1 << 64) if c >= 1 << 63 else c


_GOLDEN = _signed(0x9E3779B97F4A7C15)
_M1 = _signed(0xBF58476D1CE4E5B9)
_M2 = _signed(0x94D049BB133111EB)


def _shr(z: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def _splitmix64(z: torch.Tensor) -> torch.Tensor:
    z = z + _GOLDEN
    z = (z ^ _shr(z, 30)) * _M1
    z = (z ^ _shr(z, 27)) * _M2
    return z ^ _shr(z, 31)


def uniforms(seeds: torch.Tensor, step: int | torch.Tensor, stream: int) -> torch.Tensor:
    """U[0,1) float64 per seed: u = splitmix64(splitmix64(seed ⊕ stream) + step) / 2^64."""
    seeds = seeds.to(torch.int64)
    key = _splitmix64(seeds * 0x100000001B3 + stream)
    z = _splitmix64(key + torch.as_tensor(step, dtype=torch.int64, device=seeds.device))
    return _shr(z, 11).to(torch.float64) * (1.0 / (1 << 53))


def check_probabilities(probs: torch.Tensor) -> None:
    """Refuse rows of weights that define no law: a NaN, infinite or negative weight, or a zero total.

    A ValueError names the rows and the likely cause (a vectorised check, cheap next to the draw)."""
    total = probs.to(torch.float64).sum(-1)
    nonfinite = ~torch.isfinite(total) | (probs.amin(-1) < 0)  # NaN and ±inf propagate into the total
    if nonfinite.any() or (total <= 0).any():
        rows = torch.nonzero(nonfinite | (total <= 0)).flatten()[:5].tolist()
        cause = "non-finite or negative" if nonfinite.any() else "sum to zero"
        raise ValueError(
            f"cannot sample: the probabilities of rows {rows} are {cause}. Likely causes: NaN logits from the "
            "model (check its weights and the forward dtype), a temperature so small that ℓ/τ overflows "
            "(raise τ, e.g. τ ≥ 1e-3), or an empty support (no token may be drawn)."
        )


def sample_categorical(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draw per row: the first v with cdf(v) > u · total (zero-probability ids never win).

    Rows that define no law are refused (`check_probabilities`) instead of returning the last id."""
    check_probabilities(probs)
    cdf = probs.to(torch.float64).cumsum(-1)
    target = (u.to(torch.float64) * cdf[:, -1]).unsqueeze(-1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return idx.clamp_max(probs.shape[-1] - 1)


# ---- named seed streams of the notebooks -----------------------------------------------------------------------

# offset of each named stream in `stream`: the integers the notebooks used before the streams had names
NAMED_STREAMS = {
    "starts": 0,          # a length's chain starts (`sample_passages`), n = the length
    "chains": 0,          # one seed per chain of a batch, n = the chain's index (a tensor of them)
    "grid pairs": 0,      # the coupled starting pairs of a (τ, n) grid cell, s = the cell's seed index, n = the length
    "pairs": 7_777_777,   # a length's coupled starting pairs (scaling study, diagnostics, L-lag runs), n = the length
    "tempering calibration": 5_000_000,  # 07's replica-exchange calibration on the two-well model
    "tempering": 6_000_000,  # 07's replica exchange on the MLM
    "plain MH": 6_100_000,   # 07's plain MH on the MLM, beside it
    "ising pairs": 8_000_000,          # 00's Ising coupling cells, through `cell_seed` (n, τ)
    "planted ising pairs": 8_100_000,  # `pages.planted.ising_coupling_samples`, through `cell_seed` (n, τ)
}


def stream(seed: int, name: str, n: int | torch.Tensor = 0, s: int = 0) -> int | torch.Tensor:
    """The seed of the named draw `name` at index (n, s) of a run seeded `seed`:
    seed · 1_000_003 + NAMED_STREAMS[name] + 1009 · s + n (an int, or a tensor of seeds when n is one).

    The formula is the one the notebooks wrote out before the streams had names, so every table is as it was."""
    if name not in NAMED_STREAMS:
        raise ValueError(f"unknown seed stream {name!r}: the named streams are {', '.join(map(repr, NAMED_STREAMS))}.")
    return check_int("seed", seed) * 1_000_003 + NAMED_STREAMS[name] + 1009 * check_int("s", s) + (
        n if isinstance(n, torch.Tensor) else check_int("n", n))


def _splitmix64_int(z: int) -> int:
    """splitmix64 on a Python int (the same mix as `_splitmix64`, unsigned)."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def cell_seed(seed: int, name: str, n: int, temperature: float) -> int:
    """The first seed of the block of chains of cell (n, τ) of the named draw `name` in a run seeded `seed`: a
    62-bit hash of (`stream(seed, name)`, n, the bits of float τ). A block of P chains takes cell_seed, …,
    cell_seed + P − 1 (an int seed in `sampling.chain_seeds`), and its starts may be drawn from a generator seeded
    with it. Blocks of distinct cells are disjoint however many chains they hold, unless two hashes fall within P of
    each other (a chance of about cells² · P / 2^62), where consecutive seeds `stream` gives overlap once a block
    outgrows the spacing of its index."""
    import struct

    tau_bits = struct.unpack("<Q", struct.pack("<d", float(temperature)))[0]
    z = _splitmix64_int(stream(seed, name) & _MASK64)
    for k in (check_int("n", n) & _MASK64, tau_bits):
        z = _splitmix64_int(z ^ k)
    return z >> 2
