"""Planted truths and planted nulls at a page's design: the data on which a check's power and size are measured.

Each function returns what a page's rule reads (coupling times, chains of a summary), drawn from a law whose
answer is known, at the page's own design (lengths, pairs, budget, chains, steps), so that `checks.calibrate`
can run the page's rule on replicates of it.
"""
from __future__ import annotations

import numpy as np
import torch

from .. import exact
from ..samplers.coupling import coupling_times
from ..stats import law_function


def ising_coupling_samples(seed: int, replicates: int, lengths, pairs: int, budget: int, coupling: float = 1.0,
                           temperature: float = 2.0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`replicates` samples (n, times, met): coupled Glauber on the Ising chain from independent uniform starts,
    `pairs` per length, all replicates of a length in one batch.

    At high temperature path coupling contracts (δ = 1 − tanh(J/τ) > 0) and T ≈ (n/δ)·log(n/2): n log n with a
    lower-order linear term, the truth of the rule "not faster than n log n". Each (n, τ) cell's starts and chain
    seeds come from its own block (`rng.cell_seed(seed, "planted ising pairs", n, τ)`), so the cells of different
    lengths and temperatures share no chain however many pairs they hold."""
    from ..rng import cell_seed

    per_length = []
    for n in lengths:
        base = cell_seed(seed, "planted ising pairs", int(n), float(temperature))
        g = torch.Generator().manual_seed(base)
        x0, y0 = (torch.randint(2, (replicates * pairs, int(n)), generator=g) for _ in range(2))
        res = coupling_times(exact.potts_chain(int(n), 2, coupling), x0, y0, budget, temperature, seed=base)
        per_length.append((res.times.numpy().reshape(replicates, pairs), res.met.numpy().reshape(replicates, pairs)))
    n = np.repeat(np.asarray(lengths, float), pairs)
    return [(n, np.concatenate([t[r] for t, _ in per_length]).astype(float),
             np.concatenate([m[r] for _, m in per_length])) for r in range(replicates)]


GROWTH_LIMIT = 1.5  # the exponent the growth rule's upper bound must lie below: n^1.5, the nearest faster law
# the one-sided coverage of the rule's bootstrap bound: the percentile bound of the Harrell–Davis slope under-covers at
# 48 pairs per length (at nominal 95 % it passed 19 of 200 Ising runs replanted as n^1.5, 0.095), so the rule reads
# the 97.5 % bound, whose false-pass rate the pages' calibrations measure (about 0.05)
GROWTH_LEVEL = 0.975


def grows_slower_than_n15(sample, seed: int = 0, largest: int = 3) -> bool | None:
    """The growth rule of notebooks 02 and 00 on (n, times, met): True when the one-sided 97.5 % bootstrap upper bound
    of the local exponent at the `largest` largest lengths (`stats.local_exponent`: the slope of the log
    Harrell–Davis median on log n, pairs resampled within each length) lies below 1.5, i.e. the coupling times grow
    more slowly than n^1.5 there; False when it does not; None when the exponent cannot be computed (a length's
    censored pairs carry too much of its median's weight).

    n log n's local exponent falls towards 1 as n grows (1.29 over n = 32, 64, 128), so where n log n is the truth
    the rule passes once the bound is narrow enough. Pages show the bound of `local_exponent(..., level=GROWTH_LEVEL,
    seed=seed)`, the same call, so the bound beside the check is the one that decides."""
    from ..stats import local_exponent

    est = local_exponent(*sample, largest=largest, level=GROWTH_LEVEL, seed=seed)
    return None if not np.isfinite(est["beta"]) else bool(est["upper"] < GROWTH_LIMIT)


def _growth_locations(n, times, met, lengths) -> np.ndarray:
    """The log Harrell–Davis median of each length's times (censored pairs at their recorded time, sorted last)."""
    from ..stats import harrell_davis_weights

    out = []
    for length in lengths:
        t, c = times[n == length], ~met[n == length]
        t = np.where(c, t.max(), t)
        out.append(np.log(np.sort(t) @ harrell_davis_weights(t.size)))
    return np.array(out)


def replant_growth(n, times, met, law: str, budget: int, largest: int = 3, locations=None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of the `largest` largest lengths with their growth law replaced by `law`: each length keeps its
    pairs' scatter of log T around its location (the log Harrell–Davis median), and the location is set to
    c·f(n), with c such that the middle of these lengths keeps its own location. Times past `budget` become censored
    (at the budget); a censored pair stays censored.

    `locations`: the log locations the shifts are computed from (default: these pairs' own, which then lie on `law`
    exactly). Pass the locations of the law the pairs were drawn from (pooled over replicates) so that each
    replicate's own locations scatter around `law` as a sample's would."""
    n, times, met = np.asarray(n, float), np.asarray(times, float), np.asarray(met, bool)
    lengths = np.unique(n)[-largest:]
    if lengths.size < largest:
        raise ValueError(f"replanting the {largest} largest lengths needs {largest} distinct lengths, got "
                         f"{np.unique(n).tolist()}.")
    keep = np.isin(n, lengths)
    n, times, met = n[keep], times[keep], met[keep]
    own = _growth_locations(n, times, met, lengths) if locations is None else np.asarray(locations, float)
    if own.shape != lengths.shape or not np.isfinite(own).all():
        raise ValueError(f"replant_growth needs a finite location at each of the lengths {lengths.tolist()}.")
    mid = largest // 2
    f = law_function(law)
    target = own[mid] + np.log(f(lengths)) - np.log(f(lengths[mid]))
    shift = dict(zip(lengths.tolist(), target - own))
    new = np.round(times * np.exp(np.vectorize(shift.get)(n)))  # a pair that started equal (T = 0) stays at 0
    return n, np.minimum(new, budget), met & (new <= budget)


def growth_replant_calibration(n, times, met, budget: int, pairs: int | None = None, replicates: int = 400,
                               seed: int = 0, truth: str = "n log n", null: str = "n^1.5", largest: int = 3):
    """Power and size of `grows_slower_than_n15` on a page's own coupling times (post-processing, seconds).

    The pairs of the `largest` largest lengths are replanted twice (`replant_growth`): to grow like `truth`
    (n log n, the planted truth) and like `null` (n^1.5, the planted null), each length keeping its own scatter of
    log T around its location, the location matched at the middle length. A replicate draws `pairs` pairs per
    length (default: as many as the run has) with replacement from a replanted set, so its locations scatter as a
    fresh run's would, and the rule runs on it: power = the share of truth replicates that pass, size = the share of
    null replicates that pass. With `pairs` above the run's own, it says what a larger design would buy (the run's
    pairs standing in for the population). No finite location at some length (too many censored pairs): power 0
    and an unknown (NaN) size, so the check cannot decide."""
    from .checks import Calibration

    n, times, met = np.asarray(n, float), np.asarray(times, float), np.asarray(met, bool)
    lengths = np.unique(n)[-largest:]
    counts = [int((n == m).sum()) for m in lengths]
    draws = pairs if pairs is not None else None
    on = (f"this run's coupling times at n = {', '.join(f'{m:g}' for m in lengths)} ({', '.join(map(str, counts))} "
          f"pairs) replanted as {truth} / as {null} (each length's scatter of log T around its Harrell–Davis median "
          f"kept, the median set on the law through n = {lengths[largest // 2]:g}); "
          f"{draws if draws is not None else 'as many'} pairs per length drawn per replicate")
    from ..stats import local_exponent

    if not np.isfinite(local_exponent(n, times, met, largest=largest, n_boot=100)["beta"]):
        return Calibration(0.0, float("nan"), replicates, on)
    rng = np.random.default_rng(seed)
    rates = []
    for law in (truth, null):
        rn, rt, rm = replant_growth(n, times, met, law, budget, largest=largest)
        groups = [np.flatnonzero(rn == m) for m in lengths]
        passed = 0
        for _ in range(replicates):
            pick = np.concatenate([g[rng.integers(0, g.size, pairs or g.size)] for g in groups])
            passed += grows_slower_than_n15((rn[pick], rt[pick], rm[pick]), seed=int(rng.integers(2**31)),
                                            largest=largest) is True
        rates.append(passed / replicates)
    return Calibration(rates[0], rates[1], replicates, on)


def ising_growth_calibration(lengths, pairs: int, budget: int, temperature: float, replicates: int = 200,
                             seed: int = 0, coupling: float = 1.0, null: str = "n^1.5", largest: int = 3):
    """The rate at which `grows_slower_than_n15` passes the exact Ising chain at J/τ (`coupling`/`temperature`),
    whose coupling times grow like n log n (T ≈ (n/δ)·log(n/2), δ = 1 − tanh(J/τ)), over `replicates` fresh runs
    at a design (lengths, pairs per length, budget): the power. Size: the same runs replanted as `null`
    (`replant_growth`) with one shift per length taken from the pooled runs' locations, so that each run's own
    locations scatter around `null` as a sample of it would. Returns a Calibration (its counts are the result
    notebook 00 reports)."""
    from .checks import Calibration

    lengths = sorted(int(m) for m in lengths)
    samples = ising_coupling_samples(seed, replicates, lengths, pairs, budget, coupling=coupling,
                                     temperature=temperature)
    on = (f"Ising chain (J/τ = {coupling / temperature:.3g}, n log n) / its times replanted as {null}; {pairs} pairs "
          f"at n = {', '.join(map(str, lengths))}, budget {budget}")
    truth = [grows_slower_than_n15(s, seed=seed + r, largest=largest) is True for r, s in enumerate(samples)]
    n = np.concatenate([s[0] for s in samples])
    t = np.concatenate([s[1] for s in samples])
    m = np.concatenate([s[2] for s in samples])
    top = np.unique(n)[-largest:]
    from ..stats import local_exponent

    if not np.isfinite(local_exponent(n, t, m, largest=largest, n_boot=100)["beta"]):
        return Calibration(float(np.mean(truth)), float("nan"), replicates, on)
    pooled = _growth_locations(n, t, m, top)
    size = np.mean([grows_slower_than_n15(replant_growth(*s, null, budget, largest=largest, locations=pooled),
                                          seed=seed + r, largest=largest) is True for r, s in enumerate(samples)])
    return Calibration(float(np.mean(truth)), float(size), replicates, on)


def every_cell_fast(cells) -> bool | None:
    """The rule of notebook 05 on [(times, met) per cell]: True when every cell's censored median coupling time
    (`stats.censored_median`: censored pairs as +∞) is finite, i.e. more than half its pairs met within the budget;
    None when there is no cell."""
    from ..stats import censored_median

    return None if not cells else all(np.isfinite(censored_median(t, m)) for t, m in cells)


def fast_cells_calibration(cells, replicates: int = 40, slow_factor: float = 2.0, seed: int = 0):
    """Power and size of `every_cell_fast` at a set of cells [(n, pairs, budget)], each with its own length, pairs
    and budget: power on the Ising chain at J/τ = 1/2 (T ≈ (n/δ)·log(n/2), δ = 1 − tanh ½, fast), size on the same
    times scaled so that each cell's law has median `slow_factor` × its budget (a slow chain; each replicate's median
    scatters around it) and cut at the budget. Each cell draws its own planted pairs."""
    from .checks import Calibration

    cells = [(int(n), int(p), int(b)) for n, p, b in cells]
    if not cells:
        raise ValueError("fast_cells_calibration needs at least one (n, pairs, budget) cell.")
    per_cell, factor = [], []  # per cell: replicates × (times, met), and the factor that makes it slow
    for k, (n, pairs, budget) in enumerate(cells):
        s = ising_coupling_samples(seed * 1009 + k, replicates, [n], pairs, budget, coupling=1.0, temperature=2.0)
        per_cell.append([(t, m) for _, t, m in s])
        # the law's median (pooled over the replicates), so that each replicate's own median scatters around
        # slow_factor × budget as a slow chain's would, rather than sitting on it
        pooled = np.median(np.concatenate([np.where(m, t, np.inf) for _, t, m in s]))
        factor.append(slow_factor * budget / pooled if np.isfinite(pooled) else np.inf)

    def slow(times, met, f, budget):
        new = np.round(times * f) if np.isfinite(f) else np.full_like(times, np.inf)
        return np.minimum(new, budget), met & (new <= budget)

    power = np.mean([every_cell_fast([c[r] for c in per_cell]) is True for r in range(replicates)])
    size = np.mean([every_cell_fast([slow(*c[r], f, b) for c, f, (_, _, b) in zip(per_cell, factor, cells)]) is True
                    for r in range(replicates)])
    shown = ", ".join(f"n = {n} ({p} pairs, budget {b})" for n, p, b in sorted(set(cells)))
    on = (f"Ising chain (J/τ = 1/2, fast) / its times replanted to a median of {slow_factor:g} × the budget (slow), "
          f"at {len(cells)} cells: {shown}")
    return Calibration(float(power), float(size), replicates, on)


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
    from .checks import calibrate
    from ..diagnostics import convergence

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


def certification_calibration(length: int, logit_std: float, contexts: int, per_passage: int, top_k: int,
                              tolerance: float, replicates: int = 20, q: int = 64, seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Wilson 95% lower bound of the share of rectangles with |ρ| above
    `tolerance` exceeds one half" at its design (contexts × rectangles per context, top-k tokens).

    Planted truth: random incompatible pairwise models (independent W_ij, W_ji) whose logits have the MLM's spread
    `logit_std`; planted null: compatible ones at the same spread (ρ = 0 up to float noise). A fresh model and fresh
    contexts per replicate."""
    from .checks import calibrate
    from ..measures.rectangle import random_rectangles, rectangle_test
    from ..stats import proportion_ci

    def draw(rng: np.random.Generator, compatible: bool):
        s = int(rng.integers(2**31))
        model = (exact.compatible_pairwise(length, q, logit_std, seed=s) if compatible else
                 exact.incompatible_pairwise(length, q, scale=logit_std / (length - 1) ** 0.5, seed=s))
        ctx = torch.randint(q, (contexts, length), generator=torch.Generator().manual_seed(s))
        return rectangle_test(model, random_rectangles(model, ctx, per_passage, top_k=top_k, seed=s)).rho.abs().numpy()

    def rule(abs_rho: np.ndarray) -> bool:
        return proportion_ci(int((abs_rho > tolerance).sum()), abs_rho.size)[1] > 0.5

    return calibrate(rule, lambda rng: draw(rng, False), lambda rng: draw(rng, True), replicates, seed=seed,
                     null_replicates=null_replicates,
                     calibrated_on=(f"incompatible / compatible pairwise models (n = {length}, q = {q}, logit sd "
                                    f"{logit_std:.2g}), {contexts} × {per_passage} rectangles"))


def censored_dwells(rng: np.random.Generator, x, remaining, c: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """(dwell, censored): geometric dwells with escape hazard λ = exp(−(c·x + b)) per step, cut at `remaining` steps
    (the rest of each chain's run), so the planted data are censored as the page's are."""
    lam = np.exp(-(c * np.asarray(x, float) + b))
    d = rng.geometric(-np.expm1(-lam))
    remaining = np.asarray(remaining)
    return np.minimum(d, remaining), d > remaining


def dwell_fit_calibration(x, remaining, groups, b: float, rule, truth_c: float, null_c: float, replicates: int = 30,
                          n_boot: int = 200, seed: int = 0):
    """Power and size of a rule on `margins.fit_censored_dwell`'s result at notebook 05's design (its traps' m/τ,
    their chains and how much of each chain's run was left): planted dwells with c = `truth_c` and with c = `null_c`."""
    from .checks import calibrate
    from ..measures.margins import fit_censored_dwell

    def draw(c: float):
        def sample(rng: np.random.Generator):
            d, cens = censored_dwells(rng, x, remaining, c, b)
            return fit_censored_dwell(x, d, cens, groups, n_boot=n_boot, seed=int(rng.integers(2**31)))
        return sample

    return calibrate(rule, draw(truth_c), draw(null_c), replicates, seed=seed,
                     calibrated_on=(f"planted censored geometric dwells at these traps' m/τ (b = {b:.2f}): "
                                    f"c = {truth_c:g} / c = {null_c:g}"))


def stationary_test_calibration(model: exact.PairwiseModel, temperature: float, chains: int, sweeps: int,
                                scan: str = "random", replicates: int = 20, control_factor: float = 1.25,
                                level: float = 0.05, seed: int = 0):
    """Power and size of notebook 00's rule "the TV null test against π_τ gives p ≥ `level`" at its design (chains
    from uniform starts, `sweeps` sweeps recorded once per sweep, the first half dropped).

    Planted truth: Glauber chains at τ (whose stationary law is π_τ), fresh seeds per replicate; planted null:
    Glauber chains at `control_factor`·τ, tested against π_τ. All replicates run in one batch."""
    from ..exact.calibration import chain_counts
    from .checks import Calibration
    from ..samplers.sampling import glauber
    from ..stats import tv_null_test

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


def blocked_trend_calibration(units: int, levels: int, unit_sd: float, noise_sd: float, effect: float,
                              replicates: int = 400, level: float = 0.05, seed: int = 0):
    """Power and size of Page's test (p < `level`, `political.page_trend`) at a design of `units` starts × `levels`
    temperatures: values = a start effect (sd `unit_sd`) + a trend falling by `effect` in all from the lowest to the
    highest τ, linear in the rank of τ (planted truth; 0 for the planted null) + noise (sd `noise_sd`)."""
    import pandas as pd

    from .checks import calibrate
    from ..measures.political import page_trend

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


def level_gap_calibration(values, units, reference_mean: float, effect: float, reference_texts: int | None = None,
                          starts: int | None = None, replicates: int = 200, seed: int = 0, calibrated_on: str = ""):
    """Power and size of notebook 04's rule "these chains spend more time in the region than a reference: the
    interval of the difference (`stats.difference_ci`, resampling starts) lies above 0" at its design.

    Planted chains: this run's per-chain values and starts (`recentred_fractions`) recentred at reference_mean +
    `effect` (truth) or at reference_mean (null: the chains carry nothing beyond the reference). The reference is
    either planted chains of the same design at `reference_mean` or, with `reference_texts`, that many independent
    0/1 texts called political with probability reference_mean (the false-positive rate on edited text).
    `starts`: the planted runs' number of starts (default: this run's)."""
    from .checks import calibrate
    from ..stats import difference_ci

    def reference(rng: np.random.Generator):
        if reference_texts is None:
            return recentred_fractions(rng, values, units, reference_mean, starts)
        return (rng.random(reference_texts) < reference_mean).astype(float), np.arange(reference_texts)

    def draw(shift: float):
        def sample(rng: np.random.Generator):
            return (*recentred_fractions(rng, values, units, reference_mean + shift, starts), *reference(rng),
                    int(rng.integers(2**31)))
        return sample

    def rule(data) -> bool:
        *groups, s = data
        return difference_ci(*groups, seed=s)[1] > 0  # notebook 04's own call

    return calibrate(rule, draw(effect), draw(0.0), replicates, seed=seed,
                     calibrated_on=calibrated_on or (f"this run's chains recentred at the reference + {effect:g} / at "
                                                     f"the reference ({reference_mean:.2f})"))


def paired_difference_calibration(units: int, difference_sd: float, effect: float, replicates: int = 400,
                                  seed: int = 0):
    """Power and size of `diagnostics.paired_difference`'s rule "the t interval of the mean paired difference lies
    above 0" at `units` independent units: planted differences N(`effect`, difference_sd²) (truth) and
    N(0, difference_sd²) (null)."""
    from .checks import calibrate
    from ..diagnostics import paired_difference

    def draw(mean: float):
        return lambda rng: rng.normal(mean, difference_sd, units)

    return calibrate(lambda d: paired_difference(d, np.zeros_like(d))["above"], draw(effect), draw(0.0), replicates,
                     seed=seed, calibrated_on=(f"{units} units, paired differences with sd {difference_sd:.3f}: mean "
                                               f"{effect:g} / mean 0"))


def graded_pairwise(length: int, q: int, logit_std: float, seed: int) -> exact.PairwiseModel:
    """Incompatible pairwise model whose pairs differ in strength: W_ij = σ·s_ij·G_ij with s_ij = s_ji log-normal (sd 1
    on the log scale) and G i.i.d. normal, σ = logit_std / √((n−1)·e²) so that the logits have sd ≈ `logit_std`."""
    g = torch.Generator().manual_seed(seed)
    s = torch.triu(torch.exp(torch.randn(length, length, generator=g, dtype=torch.float64)), 1)
    sigma = logit_std / ((length - 1) * np.e**2) ** 0.5
    G = torch.randn(length, length, q, q, generator=g, dtype=torch.float64)
    return exact.PairwiseModel(sigma * (s + s.T)[:, :, None, None] * G)


def influence_rho_sample(rng: np.random.Generator, length: int, logit_std: float, contexts: int, per_passage: int,
                         top_k: int, context_sd: float, dependent: bool, q: int = 16
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(context, influence, |ρ|) of `contexts` × `per_passage` rectangles on a `graded_pairwise` model, every context
    at its own temperature τ_c = exp(context_sd·z_c): a context effect its rectangles share, as an MLM's do.

    dependent (planted truth): influence and |ρ| from the same model, both growing with s_ij and 1/τ_c. Otherwise
    (planted null) the influence is read on the same rectangles from an independent model at independent τ_c: the
    same spread and sharing within contexts, and no dependence between |ρ| and influence."""
    from ..measures.rectangle import random_rectangles, rectangle_test

    seeds = [int(s) for s in rng.integers(2**31, size=3)]
    model = graded_pairwise(length, q, logit_std, seeds[0])
    ctx = torch.randint(q, (contexts, length), generator=torch.Generator().manual_seed(seeds[1]))
    rects = random_rectangles(model, ctx, per_passage, top_k=top_k, seed=seeds[1])

    def taus() -> torch.Tensor:
        return torch.from_numpy(np.exp(context_sd * rng.standard_normal(contexts))).repeat_interleave(per_passage)

    res = rectangle_test(model, rects, temperature=taus())
    if not dependent:
        # the independent model reads each context with its sites relabelled at random (σ_c), so that rectangles of
        # different contexts on the same (i, j) share a pair strength only in |ρ|, as an MLM's contexts share none
        g = torch.Generator().manual_seed(seeds[2])
        perm = torch.stack([torch.randperm(length, generator=g) for _ in range(contexts)]).repeat_interleave(per_passage, 0)
        inv, rows = perm.argsort(1), torch.arange(contexts * per_passage)
        rects = type(rects)(rects.contexts.gather(1, perm), inv[rows, rects.i], inv[rows, rects.j], rects.a, rects.a2,
                            rects.b, rects.b2)
        res_other = rectangle_test(graded_pairwise(length, q, logit_std, seeds[2]), rects, temperature=taus())
    other = res if dependent else res_other
    return np.repeat(np.arange(contexts), per_passage), other.influence.numpy(), res.rho.abs().numpy()


def influence_correlation_calibration(length: int, logit_std: float, contexts: int, per_passage: int, top_k: int,
                                      context_sd: float, replicates: int = 20, q: int = 16, n_boot: int = 300,
                                      seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Spearman correlation of |ρ| with influence has a 95% lower bound > 0,
    resampling contexts" (`stats.spearman_ci`) at its design, on `influence_rho_sample` (truth: dependent; null: not)."""
    from .checks import calibrate
    from ..stats import spearman_ci

    def rule(sample) -> bool:
        units, influence, abs_rho = sample
        return spearman_ci(influence, abs_rho, units, n_boot=n_boot)[1] > 0

    def draw(dependent: bool):
        return lambda rng: influence_rho_sample(rng, length, logit_std, contexts, per_passage, top_k, context_sd,
                                                dependent, q)

    return calibrate(rule, draw(True), draw(False), replicates, seed=seed,
                     null_replicates=null_replicates,
                     calibrated_on=(f"graded pairwise models (n = {length}, q = {q}, logit sd {logit_std:.2g}, context "
                                    f"sd of log τ {context_sd:.2f}), {contexts} × {per_passage} rectangles: influence "
                                    f"and |ρ| from one model / from independent ones"))


def residual_calibration(length: int, logit_std: float, pairs: int, k: int, tolerance: float, share: float = 0.9,
                         replicates: int = 10, q: int = 64, seed: int = 0, null_replicates: int | None = None):
    """Power and size of notebook 01's rule "the Arnold–Press residual RMS exceeds `tolerance` on at least `share` of
    the pairs" at its design (`pairs` pairs of sites, top-k candidates): planted truth random incompatible pairwise
    models with the MLM's logit spread, planted null compatible ones (fresh seeds: the tolerance was set on another)."""
    from .checks import calibrate
    from ..measures.compatibility import compatibility_test, top_k_candidates

    def draw(compatible: bool):
        def sample(rng: np.random.Generator) -> np.ndarray:
            s = int(rng.integers(2**31))
            model = (exact.compatible_pairwise(length, q, logit_std, seed=s) if compatible else
                     exact.incompatible_pairwise(length, q, scale=logit_std / (length - 1) ** 0.5, seed=s))
            g = torch.Generator().manual_seed(s)
            ctx = torch.randint(q, (pairs, length), generator=g)
            i = torch.randint(length, (pairs,), generator=g)
            j = (i + 1 + torch.randint(length - 1, (pairs,), generator=g)) % length
            return compatibility_test(model, top_k_candidates(model, ctx, i, j, k)).rms.numpy()
        return sample

    return calibrate(lambda rms: bool((rms > tolerance).mean() >= share), draw(False), draw(True), replicates,
                     seed=seed, null_replicates=null_replicates,
                     calibrated_on=(f"incompatible / compatible pairwise models (n = {length}, q = {q}, logit sd "
                                    f"{logit_std:.2g}), {pairs} pairs, k = {k}"))


def slowdown_calibration(length: int, temperatures, pairs: int, budget: int, coupling: float = 1.0,
                         inside: float = 1.5, outside=(0.5, 2.5), replicates: int = 20, n_boot: int = 300,
                         seed: int = 0):
    """Power and size of notebook 00's rule "the 95% interval of b in log T ≈ b·J/τ + a (`margins.fit_log_linear`)
    meets [1, 2]" at its design: replicate runs of the ordered pair 00…0 / 11…1 on the Ising chain (`pairs` per τ),
    each temperature's times rescaled so that their medians follow e^{b·J/τ} exactly (fixed at the middle τ), with
    b = `inside` (planted truth) and b in `outside` (planted nulls; size is the largest of their pass rates)."""
    from .checks import Calibration
    from ..measures.margins import fit_log_linear
    from ..samplers.coupling import coupling_times

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


# ---- notebook 03: traps against a matched-rate null, and escape times against 1/τ ----

def jitter_draws(rng: np.random.Generator, shape, dim: int, jitter: float = 1.0) -> np.ndarray:
    """Planted one-token jitter: N(0, (jitter²/dim)·I) vectors in R^dim (norm ≈ `jitter`), shape (*shape, dim)."""
    return rng.normal(0.0, jitter / np.sqrt(dim), (*tuple(np.atleast_1d(shape)), dim))


def well_trajectories(rng: np.random.Generator, rates, steps: int, record_every: int, wells: bool, dim: int = 16,
                      jitter: float = 1.0, separation: float = 10.0, well_steps: float | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Embedding-like trajectories (records (R, B, dim), recorded steps 0, k, 2k, …) of B chains that edit a token with
    per-step probability rates[b], the page's change rates.

    No well (wells=False): every edit moves the embedding by a jitter draw, e_t = e_0 + Σ_edits ξ (a random walk).
    Two wells: e_t = c_w(t) + η, with η ~ N(0, jitter²/(2·dim)·I) redrawn at each edit (so one edit moves the
    embedding by a jitter draw in law, and it never leaves the jitter of its well's centre), and an edit moves to
    the other well (centres `separation`·jitter apart) with probability 1/(rate·well_steps), so that a well lasts
    `well_steps` steps on average (default steps/3). Exact in law at the records."""
    rates = np.asarray(rates, dtype=float)
    recorded = np.arange(0, steps + 1, record_every)
    R, B = recorded.size, rates.size
    edits = rng.binomial(np.diff(recorded)[:, None], rates[None, :])            # (R−1, B) edits between records
    if not wells:
        moves = jitter_draws(rng, (R - 1, B), dim, jitter) * np.sqrt(edits)[..., None]
        return np.concatenate([np.zeros((1, B, dim)), np.cumsum(moves, 0)]), recorded
    hop = np.minimum(1.0, 1.0 / (np.maximum(rates, 1e-12) * (steps / 3 if well_steps is None else well_steps)))
    flips = rng.random((R - 1, B)) < (1 - (1 - 2 * hop) ** edits) / 2             # an odd number of hops
    well = np.concatenate([np.zeros((1, B), int), np.cumsum(flips, 0) % 2])
    redrawn = np.concatenate([np.ones((1, B), bool), edits > 0])
    last = np.maximum.accumulate(np.where(redrawn, np.arange(R)[:, None], 0), axis=0)
    eta = jitter_draws(rng, (R, B), dim, jitter / np.sqrt(2))[last, np.arange(B)]
    centre = np.zeros((R, B, dim))
    centre[..., 0] = separation * jitter * (well - 0.5)
    return centre + eta, recorded


def trap_criterion_calibration(rates, steps: int, record_every: int, min_dwell: int, levels, level: float,
                               jitter_sample: int, replicates: int = 100, dim: int = 16, chain_step: float = 1.0,
                               null_step: float = 1.0, seed: int = 0):
    """Power and size of notebook 03's trap criterion at its design, at radius quantile `level` and across the panel
    `levels`: returns (criterion Calibration, panel Calibration).

    One replicate: a sample of `jitter_sample` planted one-token jitters gives the radii (their `levels` quantiles,
    the page's rule); chains at the page's change `rates` (`well_trajectories`) and their matched-rate null (no-well
    chains at the same rates) are scanned for traps (`semantic.chain_traps`, `min_dwell`); the criterion passes
    when the 95 % bootstrap lower bound (`stats.bootstrap_ci` over chains) of the mean paired difference in time
    trapped is above zero; the panel rule when the criterion passes at more than half of the radii. Planted truth:
    two-well chains; planted null: no-well chains (no structure beyond the edit rate). An edit of the chains moves the
    embedding by `chain_step` × the one-token jitter, one of the matched null by `null_step` × it (the page measures
    both): the page's chains and their uniform-token null need not move it equally per edit, and smaller steps alone
    look like traps."""
    from .checks import calibrate
    from ..measures.semantic import calibrated_thresholds, time_trapped_at
    from ..stats import bootstrap_ci

    rates, levels = np.asarray(rates, float), [float(q) for q in levels]
    B = rates.size

    def lower_bounds(rng: np.random.Generator, wells: bool) -> np.ndarray:  # one replicate, every radius
        radii = calibrated_thresholds(np.linalg.norm(jitter_draws(rng, jitter_sample, dim), axis=-1), levels)
        chains, rec = well_trajectories(rng, rates, steps, record_every, wells, dim, jitter=chain_step)
        null, _ = well_trajectories(rng, rates, steps, record_every, False, dim, jitter=null_step)
        both = np.concatenate([chains, null], 1)
        frac = time_trapped_at(both, rec, radii, min_dwell, steps)                      # (radii, 2B)
        return np.array([bootstrap_ci(f[:B] - f[B:], seed=int(rng.integers(2**31)))[1] for f in frac])

    k = levels.index(float(level))
    on = (f"planted embedding trajectories (R^{dim}) at these {B} chains' change rates, {steps} steps: two wells / "
          f"no well (a random walk); edits step {chain_step:.2f} × the one-token jitter, against a no-well matched-rate "
          f"null stepping {null_step:.2f} × it")
    # the same seed gives both rules the same replicates
    return tuple(calibrate(rule, lambda rng: lower_bounds(rng, True), lambda rng: lower_bounds(rng, False), replicates,
                           on, seed=seed)
                 for rule in (lambda lows: bool(lows[k] > 0), lambda lows: bool((lows > 0).sum() > len(levels) / 2)))


def span_coordinates(emb: np.ndarray) -> np.ndarray:
    """Each chain's trajectory e_t − e_0 in an orthonormal basis of the span of its own increments (zeros padded to
    the largest rank): every distance between points of a chain, and between points of any walk made of its increments
    with any signs, is kept exactly, in fewer dimensions than the embedder's (the trap scan's cost is per dimension).
    emb (R, B, d) → (R, B, k), k ≤ min(R − 1, d)."""
    emb = np.asarray(emb, dtype=float)
    steps = np.diff(emb, axis=0)                                                     # (R−1, B, d)
    bases = []
    for b in range(emb.shape[1]):
        u, sv, vt = np.linalg.svd(steps[:, b], full_matrices=False)
        bases.append(vt[sv > sv.max(initial=0.0) * 1e-10] if sv.size else vt[:0])
    k = max(1, max(len(v) for v in bases))
    out = np.zeros((emb.shape[0], emb.shape[1], k))
    for b, v in enumerate(bases):
        out[:, b, :len(v)] = (emb[:, b] - emb[0, b]) @ v.T
    return out


def trap_null_scores(emb: np.ndarray, steps, radii, min_dwell: int, total_steps: int, copies: int = 4,
                     seed: int = 0, project: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Notebook 03's statistics at every radius, each chain against `copies` sign-randomised walks of its own
    increments (`semantic.sign_randomised_walks`, the matched null): (difference, rank), each (len(radii), B).
    difference: the chain's time trapped minus its walks' mean; rank: the chain's mid-rank among itself and its walks,
    in [0, 1] (#walks trapped less + ½ #ties, over `copies`). A walk with independent symmetric increments is
    unchanged in law by the signs, so there the chain and its walks are exchangeable and the rank is symmetric about ½.
    emb (R, B, d); `project`: scan in each chain's own span (`span_coordinates`, exact)."""
    from ..measures.semantic import sign_randomised_walks

    emb = span_coordinates(emb) if project else np.asarray(emb, dtype=float)
    B, nr = emb.shape[1], len(np.atleast_1d(radii))
    walks = sign_randomised_walks(emb, copies, seed=seed)
    frac = trapped_fractions(np.concatenate([emb, walks], 1), steps, radii, min_dwell, total_steps)  # (radii, B + c·B)
    own, null = frac[:, :B], frac[:, B:].reshape(nr, copies, B)
    rank = ((null < own[:, None]).sum(1) + 0.5 * (null == own[:, None]).sum(1)) / copies
    return own - null.mean(1), rank


def signflip_p(centred) -> float:
    """One-sided p-value of the sign-flip test over independent units: P(Σ ε_b |x_b| ≥ Σ x_b) over independent fair
    signs ε, exact (every sign pattern) up to 16 units, else 2¹⁶ random patterns. Valid when each x_b is symmetric
    about zero under the null (notebook 03: a chain's mid-rank among its sign-randomised walks, minus ½)."""
    x = np.asarray(centred, dtype=float).ravel()
    if x.size == 0:
        return float("nan")
    if x.size <= 16:
        eps = 1 - 2 * ((np.arange(2 ** x.size)[:, None] >> np.arange(x.size)) & 1)
    else:
        eps = np.random.default_rng(0).choice([-1, 1], size=(2 ** 16, x.size))
    return float(np.mean(eps @ np.abs(x) >= x.sum() - 1e-12))


def _trapped_dwell(emb, steps, r2, min_dwell):  # compiled by numba on first use (`trapped_fractions`)
    T, L, k = emb.shape
    out = np.zeros(L)
    total = np.empty(k)
    for lane in range(L):
        s = 0
        while s < T:
            e = s
            for j in range(k):
                total[j] = emb[s, lane, j]
            count = 1.0
            while e + 1 < T:
                d2 = 0.0
                for j in range(k):
                    g = emb[e + 1, lane, j] - total[j] / count
                    d2 += g * g
                if d2 > r2[lane]:
                    break
                e += 1
                for j in range(k):
                    total[j] += emb[e, lane, j]
                count += 1.0
            dwell = steps[e] - steps[s]
            if dwell >= min_dwell and e > s:
                out[lane] += dwell
                s = e + 1
            else:
                s += 1
    return out


_DWELL_KERNEL = []


def trapped_fractions(emb: np.ndarray, steps, radii, min_dwell: int, total_steps: int) -> np.ndarray:
    """`semantic.time_trapped_at` (the page's trap detector, the same scan record by record) compiled with numba, for
    the many replicates of notebook 03's calibration: emb (T, B, d) → (len(radii), B) fractions of each run trapped."""
    import numba

    if not _DWELL_KERNEL:
        _DWELL_KERNEL.append(numba.njit(cache=False)(_trapped_dwell))
    emb = np.ascontiguousarray(emb, dtype=float)
    radii = np.asarray(radii, dtype=float).ravel()
    T, B, _ = emb.shape
    lanes = np.ascontiguousarray(np.tile(emb, (1, radii.size, 1)))
    dwell = _DWELL_KERNEL[0](lanes, np.asarray(steps, dtype=np.int64), np.repeat(radii, B) ** 2, int(min_dwell))
    return dwell.reshape(radii.size, B) / total_steps


def trap_null_calibration(emb: np.ndarray, steps, radii, rates, record_every: int, min_dwell: int, total_steps: int,
                          level_index: int, chain_step: float, jitter_sample: int, levels, replicates: int = 200,
                          copies: int = 4, dim: int = 16, alpha: float = 0.05, seed: int = 0):
    """Power and size of notebook 03's trap criterion against its matched null (each chain against sign-randomised
    walks of its own increments): returns (criterion Calibration, panel Calibration).

    Size, on the run's own steps: a structureless walk made of the chains' own record-to-record increments, each with
    a random sign (`semantic.sign_randomised_walks` of `emb`, the page's embeddings (R, B, d)), is scored by the
    page's rule at the page's `radii` against its own sign-randomised copies; its edit rate, edit times and step
    lengths are the chains', so whatever it passes is the rule's false-pass rate on this run's steps. Power: planted
    two-well trajectories at the chains' change `rates` (`well_trajectories`, one edit stepping `chain_step` × the
    planted one-token jitter, the radii re-calibrated in each replicate as the `levels` quantiles of `jitter_sample`
    planted jitters), scored the same way. The rule (`trap_null_scores`, `signflip_p`): the one-sided sign-flip test
    over chains of each chain's mid-rank among its walks, p < `alpha`, at radius `levels[level_index]` (criterion) and
    at more than half of the radii (panel)."""
    from .checks import calibrate
    from ..measures.semantic import calibrated_thresholds, sign_randomised_walks

    emb, radii, rates = span_coordinates(emb), np.asarray(radii, float), np.asarray(rates, float)
    levels = [float(q) for q in levels]

    def lows(rng: np.random.Generator, x: np.ndarray, rec, rr) -> np.ndarray:  # the rule's p-value at every radius
        _, rank = trap_null_scores(x, rec, rr, min_dwell, total_steps, copies, seed=int(rng.integers(2**31)),
                                   project=False)
        return np.array([signflip_p(row - 0.5) for row in rank])

    def truth(rng):
        rr = calibrated_thresholds(np.linalg.norm(jitter_draws(rng, jitter_sample, dim), axis=-1), levels)
        x, rec = well_trajectories(rng, rates, total_steps, record_every, True, dim, jitter=chain_step)
        return lows(rng, x, rec, rr)

    def null(rng):
        return lows(rng, sign_randomised_walks(emb, 1, seed=int(rng.integers(2**31))), np.asarray(steps), radii)

    on = (f"size: the run's own {emb.shape[1]} chains' increments with random signs (a structureless walk at their "
          f"edit rate and step lengths); power: planted two-well trajectories at their change rates, steps "
          f"{chain_step:.2f} × the one-token jitter; each against {copies} sign-randomised walks of itself")
    return tuple(calibrate(rule, truth, null, replicates, on, seed=seed)
                 for rule in (lambda p: bool(p[level_index] < alpha), lambda p: bool((p < alpha).sum() > len(levels) / 2)))


def arrhenius_escapes(rng: np.random.Generator, temperatures, chains: int, starts: int, reach_steps: int,
                      record_every: int, slope: float, intercept: float, start_sd: float = 0.5):
    """Planted escape times at notebook 03's escape design (`chains` chains per temperature, chain j from start
    j mod `starts`): per-step escape hazard λ = exp(−(slope/τ + intercept + u_start)), u_start ~ N(0, start_sd²) a
    start's own offset, so log escape time is linear in 1/τ with slope `slope`; the escape step is geometric, seen
    at the first record at or after it and censored at the last record. Returns (1/τ, time, escaped, start), one
    entry per chain, temperature by temperature."""
    temps = np.repeat(np.asarray(temperatures, float), chains)
    start = np.tile(np.arange(chains) % starts, len(temperatures))
    u = rng.normal(0.0, start_sd, starts)[start]
    lam = np.exp(-(slope / temps + intercept + u))
    step = rng.geometric(-np.expm1(-lam)).astype(float)
    last = (reach_steps // record_every) * record_every
    seen = np.ceil(step / record_every) * record_every
    escaped = seen <= last
    return 1 / temps, np.where(escaped, seen, last), escaped, start


def arrhenius_truth(temperatures, reach_steps: int, low_median: float = 2.0, high_median: float = 0.1):
    """(slope, intercept) of the planted truth: median escape time `low_median`·reach_steps at the lowest τ and
    `high_median`·reach_steps at the highest (a geometric escape with hazard λ has median ≈ ln 2/λ)."""
    x = 1 / np.asarray(temperatures, float)
    slope = np.log(low_median / high_median) / (x.max() - x.min())
    return float(slope), float(np.log(high_median * reach_steps / np.log(2)) - slope * x.min())


def escape_calibrations(temperatures, chains: int, starts: int, reach_steps: int, record_every: int,
                        replicates: int = 200, n_boot: int = 300, start_sd: float = 0.5, seed: int = 0):
    """Power and size of notebook 03's two escape rules at its design: returns (Wilson Calibration, slope
    Calibration).

    Wilson rule: the share of chains that escape at the lowest τ lies below the share at the highest, Wilson 95 %
    intervals apart. Slope rule: the 95 % lower bound of the censored slope of log escape time on 1/τ
    (`margins.fit_censored_dwell`, bootstrap over starts) is above zero. Planted truth (`arrhenius_escapes`):
    median escape 2·reach_steps at the lowest τ and reach_steps/10 at the highest, log time linear in 1/τ in
    between (`arrhenius_truth`); planted null: slope 0, the median at every τ their geometric mean."""
    from .checks import calibrate
    from ..measures.margins import fit_censored_dwell
    from ..stats import proportion_ci

    temps = np.asarray(temperatures, float)
    lo, hi = int(np.argmin(temps)), int(np.argmax(temps))
    slope, intercept = arrhenius_truth(temps, reach_steps)
    flat = intercept + slope * float(np.mean([1 / temps.max(), 1 / temps.min()]))

    def draw(m: float, b: float):
        return lambda rng: arrhenius_escapes(rng, temps, chains, starts, reach_steps, record_every, m, b, start_sd)

    def wilson(sample) -> bool:
        escaped = sample[2].reshape(len(temps), chains)
        a, b = (proportion_ci(int(escaped[k].sum()), chains) for k in (lo, hi))
        return bool(a[2] < b[1])

    def positive_slope(sample) -> bool | None:
        x, t, escaped, start = sample
        low = fit_censored_dwell(x, t, ~escaped, start, n_boot=n_boot, seed=0)["slope_low"]
        return None if not np.isfinite(low) else bool(low > 0)

    on = (f"planted censored escape times, {chains} chains × {len(temps)} τ from {starts} starts (start sd "
          f"{start_sd:g} in log time), {reach_steps} steps: log time linear in 1/τ, slope {slope:.3g} / slope 0")
    return (calibrate(wilson, draw(slope, intercept), draw(0.0, flat), replicates, on, seed=seed),
            calibrate(positive_slope, draw(slope, intercept), draw(0.0, flat), replicates, on, seed=seed))


def closed_form_calibration(n: int, q: int, scale: float, rectangles: int, tolerance: float, error: float = 1e-3,
                            replicates: int = 20, seed: int = 0):
    """Power and size of notebook 00's rule "the measured ρ of an incompatible toy matches its closed form
    (`exact.exact_rectangle`) within `tolerance`" at its design (n sites, q states, `rectangles` rectangles from uniform
    contexts): planted truth, the closed form of the model measured; planted null, the closed form of a planted wrong
    model, the same W off by a relative `error` (a code that computes ρ that far from the truth)."""
    from .checks import calibrate
    from ..measures.rectangle import random_rectangles, rectangle_test

    def draw(wrong: bool):
        def sample(rng: np.random.Generator) -> float:
            s = int(rng.integers(2**31))
            toy = exact.incompatible_pairwise(n, q, scale=scale, seed=s)
            ctx = torch.randint(q, (rectangles, n), generator=torch.Generator().manual_seed(s))
            rects = random_rectangles(toy, ctx, 1, top_k=q, seed=s)
            rho = rectangle_test(toy, rects).rho
            ref = exact.PairwiseModel(toy.W * (1 + error * torch.randn(toy.W.shape, generator=torch.Generator().manual_seed(s + 1),
                                                                       dtype=torch.float64))) if wrong else toy
            closed = exact.exact_rectangle(ref, rects.i, rects.j, rects.a, rects.a2, rects.b, rects.b2)
            return float((rho - closed).abs().max())
        return sample

    return calibrate(lambda err: bool(err < tolerance), draw(False), draw(True), replicates, seed=seed,
                     calibrated_on=(f"incompatible pairwise toys (n = {n}, q = {q}, {rectangles} rectangles): their own "
                                    f"closed form / that of the same W off by a relative {error:g}"))


def ising_influence_calibration(n: int, temperatures, coupling: float = 1.0, threshold: float = 1e-5,
                                error: float = 1e-3, replicates: int = 10, seed: int = 0):
    """Power and size of notebook 00's rule "the measured influence of the Ising chain (interior α, end α and total,
    over all 2^n contexts, `influence.influence_matrix`) equals tanh(J/τ)/2, tanh(J/2τ) and tanh(J/τ) within `threshold`"
    at its design (n sites, its temperatures): planted truth, chains with J drawn in [J/2, 2J] and the closed form at
    that J; planted null, the chain at J·(1 + `error`) against the closed form at J (a code that is off by that much)."""
    import itertools

    from .checks import calibrate
    from ..measures.influence import influence_matrix, total_influence

    every = torch.tensor(list(itertools.product([0, 1], repeat=n)))
    taus = [float(t) for t in temperatures]
    mid = n // 2

    def largest_error(J: float, J_measured: float) -> float:
        alpha = influence_matrix(exact.potts_chain(n, 2, J_measured), every, taus, replacements=1, top_k=1).amax(0)
        return max(max(abs(alpha[t, mid, mid + 1].item() - np.tanh(J / tau) / 2),
                       abs(alpha[t, 0, 1].item() - np.tanh(J / (2 * tau))),
                       abs(total_influence(alpha[t]).item() - np.tanh(J / tau))) for t, tau in enumerate(taus))

    def draw(off: float):
        def sample(rng: np.random.Generator) -> float:
            J = coupling * float(np.exp(rng.uniform(np.log(0.5), np.log(2))))
            return largest_error(J, J * (1 + off))
        return sample

    return calibrate(lambda err: bool(err < threshold), draw(0.0), draw(error), replicates, seed=seed,
                     calibrated_on=(f"Ising chains (n = {n}, J in [{coupling / 2:g}, {2 * coupling:g}]): the closed "
                                    f"form at the chain's J / at J off by a relative {error:g}"))
