"""The political basin (page 04): Page's trend test blocked by start, the level gap against one reference, and the
combined rule "above the reference under every null family".
"""
from __future__ import annotations

import numpy as np


def blocked_trend_calibration(units: int, levels: int, unit_sd: float, noise_sd: float, effect: float,
                              replicates: int = 400, level: float = 0.05, seed: int = 0):
    """Power and size of Page's test (p < `level`, `political.page_trend`) at a design of `units` starts × `levels`
    temperatures: values = a start effect (sd `unit_sd`) + a trend falling by `effect` in all from the lowest to the
    highest τ, linear in the rank of τ (planted truth; 0 for the planted null) + noise (sd `noise_sd`)."""
    import pandas as pd

    from ..checks import calibrate
    from ...measures.political import page_trend

    slope = np.linspace(effect / 2, -effect / 2, levels)

    def draw(trend: np.ndarray):
        def sample(rng: np.random.Generator) -> pd.DataFrame:
            v = rng.normal(0, unit_sd, (units, 1)) + trend + rng.normal(0, noise_sd, (units, levels))
            return pd.DataFrame(dict(start_id=np.repeat(np.arange(units), levels), temperature=np.tile(np.arange(levels), units),
                                     value=v.ravel()))
        return sample

    return calibrate(lambda d: bool(page_trend(d, "value")["p_value"] < level), draw(slope), draw(0 * slope),
                     replicates, seed=seed,
                     calibrated_on=(f"{units} starts × {levels} temperatures, start sd {unit_sd:.2f}, noise sd "
                                    f"{noise_sd:.2f}: a fall of {effect:g} across τ / no trend"))


def recentred_fractions(rng: np.random.Generator, values, units, mean: float, starts: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Planted per-chain fractions with a run's own spread and a chosen mean m: `starts` units (default: as many as
    the run has) drawn with replacement from the units (starting passages) of (`values`, `units`), each keeping all
    its chains, and every value v moved towards the nearer bound so that the run's mean v̄ becomes m while staying in
    [0, 1]: v·m/v̄ when m ≤ v̄, 1 − (1 − v)(1 − m)/(1 − v̄) when m > v̄ (a shift would be clipped at the bounds and
    miss m). Returns (values, units), the units relabelled 0, 1, …"""
    values, units = np.asarray(values, float), np.asarray(units)
    if not 0 <= mean <= 1 or values.min() < 0 or values.max() > 1:
        raise ValueError(f"fractions and their planted mean must lie in [0, 1], got mean {mean!r} and values in "
                         f"[{values.min()}, {values.max()}].")
    labels, inverse = np.unique(units, return_inverse=True)
    pick = rng.integers(0, labels.size, starts or labels.size)
    rows = [np.flatnonzero(inverse == k) for k in pick]
    v, vbar = np.concatenate([values[r] for r in rows]), values.mean()
    if mean <= vbar:
        v = v * (mean / vbar if vbar > 0 else 0.0)
    else:
        v = 1 - (1 - v) * ((1 - mean) / (1 - vbar) if vbar < 1 else 0.0)
    return v, np.repeat(np.arange(pick.size), [r.size for r in rows])


def _resampled(rng: np.random.Generator, values, units, starts: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One planted reference of the same law and design: the reference's units resampled with replacement, each keeping
    its rows (`recentred_fractions` at the reference's own mean)."""
    return recentred_fractions(rng, values, units, float(np.mean(values)), starts)


def planted_effect(reference_mean: float, effect: float) -> float:
    """The truth's lift above a reference: `effect`, or half the room left above the reference when `effect` would
    carry a fraction past 1 (a reference at 0.81 and effect 0.2 plant the truth at 0.905, not at 1.01)."""
    return min(effect, (1.0 - reference_mean) / 2)


def level_gap_calibration(values, units, reference_mean: float, effect: float, reference=None,
                          starts: int | None = None, replicates: int = 200, seed: int = 0, calibrated_on: str = ""):
    """Power and size of notebook 04's rule "these chains spend more time in the region than a reference: the
    interval of the difference (`stats.difference_ci`, resampling starts) lies above 0" at its design.

    Planted chains: this run's per-chain values and starts (`recentred_fractions`) recentred at reference_mean +
    `effect` (truth; `planted_effect`: capped at half the room above the reference) or at reference_mean (null: the chains carry nothing beyond the reference). The reference is
    either planted chains of the same design at `reference_mean` or, with `reference` = (0/1 values, units) (the texts
    of a null family and their documents), that reference with its units resampled. `starts`: the planted runs'
    number of starts (default: this run's)."""
    from ..checks import calibrate
    from ...stats import difference_ci

    def planted_reference(rng: np.random.Generator):
        if reference is None:
            return recentred_fractions(rng, values, units, reference_mean, starts)
        return _resampled(rng, *reference)

    def draw(shift: float):
        def sample(rng: np.random.Generator):
            return (*recentred_fractions(rng, values, units, reference_mean + shift, starts), *planted_reference(rng),
                    int(rng.integers(2**31)))
        return sample

    def rule(data) -> bool:
        *groups, s = data
        return difference_ci(*groups, seed=s)[1] > 0  # notebook 04's own call

    lift = planted_effect(reference_mean, effect)
    return calibrate(rule, draw(lift), draw(0.0), replicates, seed=seed,
                     calibrated_on=calibrated_on or (f"this run's chains recentred at the reference + {lift:.3g} / at "
                                                     f"the reference ({reference_mean:.2f})"))


def every_family_calibration(values, units, references: dict[str, tuple], effect: float, starts: int | None = None,
                             replicates: int = 200, seed: int = 0, calibrated_on: str = ""):
    """Power and size of notebook 04's combined rule `political.under_every_family` (pass: the difference interval
    lies above 0 under every null family; fail: under none; otherwise no answer) at its design.

    `references` maps each family to its (0/1 values, units); each replicate resamples every family's units. The
    strictest family (the highest reference mean m*) decides both error rates: planted truth, this run's chains
    recentred at m* + `effect` (`planted_effect`: capped at half the room above m*) (the claim holds against every family); planted null, at m* (it fails against one).
    A replicate on which the families disagree counts as not passing (`checks.calibrate`)."""
    from ..checks import calibrate
    from ...measures.political import under_every_family
    from ...stats import difference_ci

    top = max(float(np.mean(v)) for v, _ in references.values())

    def draw(shift: float):
        def sample(rng: np.random.Generator):
            chains = recentred_fractions(rng, values, units, top + shift, starts)
            return chains, {f: _resampled(rng, *ref) for f, ref in references.items()}, int(rng.integers(2**31))
        return sample

    def rule(data) -> bool | None:
        chains, refs, s = data
        return under_every_family({f: difference_ci(*chains, *ref, seed=s) for f, ref in refs.items()})

    lift = planted_effect(top, effect)
    return calibrate(rule, draw(lift), draw(0.0), replicates, seed=seed,
                     calibrated_on=calibrated_on or (f"this run's chains recentred at the strictest family's reference "
                                                     f"+ {lift:.3g} / at it ({top:.2f})"))
