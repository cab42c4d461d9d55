"""Checks on exact chains (page 00): the stationary-law test and the low-temperature slow-down rate.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import exact
from ...samplers.coupling import coupling_times


def stationary_test_calibration(model: exact.PairwiseModel, temperature: float, chains: int, sweeps: int,
                                scan: str = "random", replicates: int = 20, control_factor: float = 1.25,
                                level: float = 0.05, seed: int = 0):
    """Power and size of notebook 00's rule "the TV null test against π_τ gives p ≥ `level`" at its design (chains
    from uniform starts, `sweeps` sweeps recorded once per sweep, the first half dropped).

    Planted truth: Glauber chains at τ (whose stationary law is π_τ), fresh seeds per replicate; planted null:
    Glauber chains at `control_factor`·τ, tested against π_τ. All replicates run in one batch."""
    from ...exact.calibration import chain_counts
    from ..checks import Calibration
    from ...samplers.sampling import glauber
    from ...stats import tv_null_test

    n, q = model.W.shape[0], model.W.shape[2]
    _, law = model.joint(temperature)
    g = torch.Generator().manual_seed(seed)
    init = torch.randint(q, (replicates * chains, n), generator=g)

    def pass_rate(tau: float, offset: int) -> float:
        traj = glauber(model, init, sweeps * n, tau, seed=seed * 1_000_003 + offset, scan=scan, record_every=n)
        kept = traj.states[traj.states.shape[0] // 2 + 1:]
        passes = [tv_null_test(chain_counts(kept[:, r * chains:(r + 1) * chains], q), law.numpy(),
                               seed=seed + r)["p_value"] >= level for r in range(replicates)]
        return float(np.mean(passes))

    return Calibration(pass_rate(temperature, 0), pass_rate(control_factor * temperature, 500_000), replicates,
                       f"Glauber at τ / at {control_factor:g} τ on the same Potts chain, {scan} scan, {chains} chains × "
                       f"{sweeps} sweeps")


def slowdown_calibration(length: int, temperatures, pairs: int, budget: int, coupling: float = 1.0,
                         inside: float = 1.5, outside=(0.5, 2.5), replicates: int = 20, n_boot: int = 300,
                         seed: int = 0):
    """Power and size of notebook 00's rule "the 95% interval of b in log T ≈ b·J/τ + a (`margins.fit_log_linear`)
    meets [1, 2]" at its design: replicate runs of the ordered pair 00…0 / 11…1 on the Ising chain (`pairs` per τ),
    each temperature's times rescaled so that their medians follow e^{b·J/τ} exactly (fixed at the middle τ), with
    b = `inside` (planted truth) and b in `outside` (planted nulls; size is the largest of their pass rates)."""
    from ..checks import Calibration
    from ...measures.margins import fit_log_linear
    from ...samplers.coupling import coupling_times

    taus = np.asarray(sorted(temperatures, reverse=True), float)
    n = int(length)
    times = []
    for t, tau in enumerate(taus):
        x0 = torch.zeros(replicates * pairs, n, dtype=torch.long)
        res = coupling_times(exact.potts_chain(n, 2, coupling), x0, 1 - x0, budget, float(tau),
                             seed=seed * 1_000_003 + 7919 * t + torch.arange(replicates * pairs))
        times.append(res.times.numpy().reshape(replicates, pairs).astype(float))
    times = np.stack(times, 1)  # (replicates, τ, pairs)
    x = coupling / taus
    mid = len(taus) // 2

    def passes(r: int, b: float) -> bool:
        med = np.median(times[r], axis=1)
        target = med[mid] * np.exp(b * (x - x[mid]))
        planted = np.clip(np.round(times[r] * (target / med)[:, None]), 1, budget)
        fit = fit_log_linear(np.repeat(x, pairs), planted.ravel(), n_boot=n_boot, seed=seed + r)
        return bool(fit["slope_low"] <= 2 and fit["slope_high"] >= 1)

    power = np.mean([passes(r, inside) for r in range(replicates)])
    size = max(np.mean([passes(r, b) for r in range(replicates)]) for b in outside)
    return Calibration(float(power), float(size), replicates,
                       f"ordered-pair Ising times (n = {n}, {pairs} pairs per τ) replanted at b = {inside:g} / at b = "
                       f"{' or '.join(f'{b:g}' for b in outside)}")
