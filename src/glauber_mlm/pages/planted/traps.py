"""Metastable traps (page 03): planted two-well and random-walk trajectories, the matched null of the chains' own
signed increments, the trap scan, and the escape-time (Arrhenius) calibrations.
"""
from __future__ import annotations

import numpy as np


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
    from ..checks import calibrate
    from ...measures.semantic import calibrated_thresholds, time_trapped_at
    from ...stats import bootstrap_ci

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
    from ...measures.semantic import sign_randomised_walks

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
    from ..checks import calibrate
    from ...measures.semantic import calibrated_thresholds, sign_randomised_walks

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
    from ..checks import calibrate
    from ...measures.margins import fit_censored_dwell
    from ...stats import proportion_ci

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
