"""Has my chain mixed (page 06): AR(1) chains with a known effective sample size for R̂'s agreement with coupling, and
the paired difference of two samplers.
"""
from __future__ import annotations

import numpy as np


def ar1_chains(rng: np.random.Generator, chains: int, draws: int, phi: float, spread: float = 0.0) -> np.ndarray:
    """(chains, draws) stationary AR(1) chains x_t = φ x_{t−1} + √(1−φ²) ε_t (unit variance), each shifted by its own
    N(0, spread²) offset: spread = 0 is a mixed cell, spread > 0 chains that each remember their own start."""
    if not 0 <= phi < 1:
        raise ValueError(f"phi must lie in [0, 1) (the lag-one autocorrelation of a stationary AR(1)), got {phi!r}.")
    x = np.empty((chains, draws))
    x[:, 0] = rng.standard_normal(chains)
    noise = np.sqrt(1 - phi**2) * rng.standard_normal((chains, draws))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x + spread * rng.standard_normal((chains, 1))


def ar1_phi_for_ess(ess: float, chains: int, draws: int) -> float:
    """The φ whose AR(1) chains have about `ess` effective draws in chains × draws: ESS/N = (1 − φ)/(1 + φ)."""
    r = min(max(ess / (chains * draws), 1e-3), 1.0)
    return float((1 - r) / (1 + r))


def rhat_agreement_calibration(chains: int, draws: int, phi: float, threshold: float, replicates: int = 200,
                               spread: float = 1.0, fast_cells: int = 1, slow_cells: int = 1, seed: int = 0):
    """Power and size of notebook 06's rule "R̂ ≥ h on every slow cell and < h on every fast one" at its design:
    `slow_cells` slow and `fast_cells` fast cells (the page's temperatures on either side of the coupling boundary),
    each of `chains` chains × `draws` draws.

    Planted truth: fast cells of stationary AR(1) chains and slow cells of the same chains, each shifted by its
    own offset (sd `spread` marginal sds: chains that remember their start). Planted null: every cell stationary, so
    R̂ has nothing to find and the rule passes only by a false alarm on every slow cell and none on a fast one."""
    from ..checks import calibrate
    from ...diagnostics import convergence

    def rhat(x: np.ndarray) -> float:
        return float(convergence({"x": x}).rhat.iloc[0])

    def rule(cells: tuple[list, list]) -> bool:
        fast, slow = cells
        return all(rhat(x) >= threshold for x in slow) and all(rhat(x) < threshold for x in fast)

    def cells(rng, slow_spread: float):
        return ([ar1_chains(rng, chains, draws, phi) for _ in range(fast_cells)],
                [ar1_chains(rng, chains, draws, phi, slow_spread) for _ in range(slow_cells)])

    return calibrate(rule, truth=lambda rng: cells(rng, spread), null=lambda rng: cells(rng, 0.0),
                     replicates=replicates, seed=seed,
                     calibrated_on=(f"AR(1) chains (φ = {phi:.2f}, {chains} × {draws} draws), {slow_cells} slow and "
                                    f"{fast_cells} fast cell{'s' if fast_cells != 1 else ''}: slow cells offset by "
                                    f"{spread:g} sd / every cell stationary"))


def paired_difference_calibration(units: int, difference_sd: float, effect: float, replicates: int = 400,
                                  seed: int = 0):
    """Power and size of `diagnostics.paired_difference`'s rule "the t interval of the mean paired difference lies
    above 0" at `units` independent units: planted differences N(`effect`, difference_sd²) (truth) and
    N(0, difference_sd²) (null)."""
    from ..checks import calibrate
    from ...diagnostics import paired_difference

    def draw(mean: float):
        return lambda rng: rng.normal(mean, difference_sd, units)

    return calibrate(lambda d: paired_difference(d, np.zeros_like(d))["above"], draw(effect), draw(0.0), replicates,
                     seed=seed, calibrated_on=(f"{units} units, paired differences with sd {difference_sd:.3f}: mean "
                                               f"{effect:g} / mean 0"))
