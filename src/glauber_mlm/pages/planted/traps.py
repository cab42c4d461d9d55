"""Metastable traps (page 03): planted Glauber chains in a planted token geometry (two wells, and basin-free chains
on independent sites), the trap criterion against basin-free twins at the chains' change rate, its calibration, the
compiled trap scan, and the escape-time (Arrhenius) calibrations.
"""
from __future__ import annotations

import numpy as np


def token_geometry(rng: np.random.Generator, sites: int, vocab: int, dim: int = 16, jitter: float = 1.0,
                   well_sites: int = 8) -> np.ndarray:
    """Planted token embeddings (sites, vocab, dim): a state x embeds as e(x) = Σ_i U[i, x_i], so changing one token
    moves it by U[i, v'] − U[i, v], of norm ≈ `jitter` (entries N(0, jitter²/(2·dim))). At the first `well_sites`
    sites tokens 0 and 1 sit at ±jitter/2 along one shared direction, as the words of one phrase move a sentence
    coherently: switching all k of them moves the embedding k·jitter (the two-well chain's wells lie along it)."""
    U = rng.normal(0.0, jitter / np.sqrt(2 * dim), (sites, vocab, dim))
    axis = rng.normal(size=dim)
    axis /= np.linalg.norm(axis)
    U[:well_sites, 0], U[:well_sites, 1] = jitter / 2 * axis, -jitter / 2 * axis
    return U


def embed_states(geometry: np.ndarray, states) -> np.ndarray:
    """e(x) = Σ_i U[i, x_i] for states (..., n) → (..., dim)."""
    states = np.asarray(states)
    return geometry[np.arange(geometry.shape[0]), states].sum(-2)


def planted_jitter(rng: np.random.Generator, geometry: np.ndarray, size: int) -> np.ndarray:
    """`size` one-token jitters of the planted geometry: ‖e(x') − e(x)‖ for x' = x with one uniform site set to
    another uniform token (the planted counterpart of the page's one-token neighbours)."""
    n, V, _ = geometry.shape
    site, old = rng.integers(n, size=size), rng.integers(V, size=size)
    new = (old + rng.integers(1, V, size=size)) % V
    return np.linalg.norm(geometry[site, new] - geometry[site, old], axis=-1)


def curie_weiss_change_rate(coupling: float, well_sites: int) -> float:
    """Stationary share of visits to a well site that change its token, for k = `well_sites` sites holding token 0
    (s = +1) or 1 (s = −1) with π ∝ exp(J·M²/(2k)), M = Σ s: P(s_i = +1 | rest) = σ(2J·M₋ᵢ/k). Exact (sum over M)."""
    k = well_sites
    M = np.arange(-k, k + 1, 2)
    from scipy.special import comb, expit

    w = comb(k, (k + M) // 2) * np.exp(coupling * M ** 2 / (2 * k))
    up = (k + M) / (2 * k)                                   # share of sites at +1
    leave_up = expit(-2 * coupling * (M - 1) / k)             # a +1 site turns −1
    leave_down = expit(2 * coupling * (M + 1) / k)            # a −1 site turns +1
    return float((w * (up * leave_up + (1 - up) * leave_down)).sum() / w.sum())


def two_well_conditionals(log_laws: np.ndarray, x: np.ndarray, coupling: float, well_sites: int) -> np.ndarray:
    """The two-well chain's site conditionals at states x (B, n): log p(x_i = v | x_{-i}), (B, n, V). Sites below
    `well_sites` hold token 0 or 1 with P(0) = σ(2J·M₋ᵢ/k); the others follow their own law `log_laws`."""
    out = np.array(log_laws, dtype=float, copy=True)
    k = well_sites
    if k:
        s = np.where(x[:, :k] == 0, 1.0, -1.0)
        field = 2 * coupling * (s.sum(1, keepdims=True) - s) / k            # (B, k)
        out[:, :k] = -np.inf
        out[:, :k, 0], out[:, :k, 1] = -np.logaddexp(0, -field), -np.logaddexp(0, field)
    return out


def planted_glauber(rng: np.random.Generator, log_laws, x0, steps: int, record_every: int, coupling: float = 0.0,
                    well_sites: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random-scan Glauber, step by step, of B chains on `two_well_conditionals` (well_sites = 0: the product law of
    `log_laws` (B, n, V), no basin): (states (R, B, n) recorded every `record_every` steps from 0, recorded steps,
    each chain's share of steps that changed a token — the page's measured change rate)."""
    from ...measures.twins import _normalised

    log_laws = _normalised(np.asarray(log_laws, dtype=float))
    x = np.array(x0, dtype=np.int64, copy=True)
    B, n, V = log_laws.shape
    cdf = np.cumsum(np.exp(log_laws), -1)
    rows, k = np.arange(B), well_sites
    recorded = np.arange(0, steps + 1, record_every)
    out, changed = [x.copy()], np.zeros(B)
    for t in range(1, steps + 1):
        i, u = rng.integers(n, size=B), rng.random(B)
        new = np.minimum((cdf[rows, i] < (u * cdf[rows, i, -1])[:, None]).sum(-1), V - 1)
        if k:
            s = np.where(x[:, :k] == 0, 1.0, -1.0)
            inside = i < k
            own = np.where(inside, s[rows, np.minimum(i, k - 1)], 0.0)
            p0 = 1 / (1 + np.exp(-2 * coupling * (s.sum(1) - own) / k))
            new = np.where(inside, (u >= p0).astype(np.int64), new)
        changed += new != x[rows, i]
        x[rows, i] = new
        if t % record_every == 0:
            out.append(x.copy())
    return np.stack(out), recorded, changed / steps


def planted_chains(rng: np.random.Generator, rates, steps: int, record_every: int, wells: bool, twins: int = 4,
                   levels=(0.9,), sites: int = 24, vocab: int = 16, dim: int = 16, well_sites: int = 8,
                   coupling: float = 1.8, jitter_sample: int = 256, uniform_start: bool = False) -> dict:
    """Notebook 03's design on planted chains, with their basin-free twins, built as the page builds them.

    A planted geometry (`token_geometry`) and its trap radii (the `levels` quantiles of `jitter_sample` planted
    one-token jitters); B = len(rates) chains, each site started from its own law (uniform_start: from a uniform
    token, so the chain first moves towards its law, as the page's chains leave their passages): basin-free (wells=False, the null), Glauber
    on independent sites whose laws (`planted_site_laws`) are tempered to stationary change rate rates[b]; or two
    wells (the truth), the same plus a Curie–Weiss block of `well_sites` sites at coupling J (`planted_glauber`, the
    other sites tempered so that the whole chain's rate is near rates[b]). Each chain's `twins` twins: independent-site
    chains from its start whose laws are its conditionals at the start (`two_well_conditionals`) tempered to its
    measured change rate (`twins.tempered_to_rate`). Returns dict(chains (R, B, dim), twins (R, twins·B, dim), copy c
    of chain b at c·B + b, records, radii, rates: the chains' measured change rates)."""
    from ...measures.twins import independent_site_chains, tempered_to_rate

    rates = np.asarray(rates, dtype=float)
    B, k = rates.size, (well_sites if wells else 0)
    U = token_geometry(rng, sites, vocab, dim, well_sites=well_sites)
    radii = np.quantile(planted_jitter(rng, U, jitter_sample), list(levels))
    base = rng.normal(0.0, 3.0, (B, sites, vocab))
    rest = rates
    if k:  # the well block changes tokens at its own rate; the other sites make up the rest (at least a fifth, at
        # most a change at every visit: a chain near rate 1 gets the fastest two-well chain there is)
        block = curie_weiss_change_rate(coupling, k) * k / sites
        rest = np.minimum(np.maximum(rates - block, rates / 5) * sites / (sites - k), 1.0)
    laws = base.copy()
    laws[:, k:] = tempered_to_rate(base[:, k:], rest)
    x0 = rng.integers(vocab, size=(B, sites))
    if not uniform_start:  # each site from its own law: the chain changes tokens at its stated rate from step 0
        x0 = independent_site_chains(rng, laws, x0, sites * 50, sites * 50)[0][-1]
    if k:
        x0[:, :k] = 0                                          # the chain starts in well 0
    states, records, measured = planted_glauber(rng, laws, x0, steps, record_every, coupling, k)
    start_laws = tempered_to_rate(two_well_conditionals(laws, x0, coupling, k), measured)
    twin_states, _ = independent_site_chains(rng, np.tile(start_laws, (twins, 1, 1)), np.tile(x0, (twins, 1)), steps,
                                             record_every)
    return dict(chains=embed_states(U, states), twins=embed_states(U, twin_states), records=records, radii=radii,
                rates=measured)


def _trap_scan(emb, steps, r2, min_dwell):  # compiled by numba on first use (`trap_statistics`)
    T, L, k = emb.shape
    trapped, spread = np.zeros(L), np.zeros(L)
    total, centre, pooled = np.empty(k), np.empty(k), np.empty(k)
    for lane in range(L):
        s = 0
        weight, square = 0.0, 0.0
        for j in range(k):
            pooled[j] = 0.0
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
                trapped[lane] += dwell
                for j in range(k):   # Σ w‖c‖² − ‖Σ w c‖²/Σ w, accumulated trap by trap
                    centre[j] = total[j] / count
                    square += dwell * centre[j] * centre[j]
                    pooled[j] += dwell * centre[j]
                weight += dwell
                s = e + 1
            else:
                s += 1
        if weight > 0:
            p2 = 0.0
            for j in range(k):
                p2 += pooled[j] * pooled[j]
            spread[lane] = max(square - p2 / weight, 0.0)
    return trapped, spread


_SCAN_KERNEL = []


def trap_statistics(emb: np.ndarray, steps, radii, min_dwell: int, total_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The page's trap detector (`semantic.chain_traps`, the same scan record by record) compiled with numba, at every
    radius: emb (T, B, d) → (time trapped, trap spread), each (len(radii), B). Time trapped: Σ_traps dwell / total;
    trap spread: Σ_traps dwell·‖c_trap − c̄‖² / total, c_trap a trap's mean embedding and c̄ their dwell-weighted mean
    (zero for a chain with one trap or none: traps that all sit in one place spread nothing)."""
    import numba

    if not _SCAN_KERNEL:
        _SCAN_KERNEL.append(numba.njit(cache=False)(_trap_scan))
    emb = np.ascontiguousarray(emb, dtype=float)
    radii = np.asarray(radii, dtype=float).ravel()
    T, B, _ = emb.shape
    lanes = np.ascontiguousarray(np.tile(emb, (1, radii.size, 1)))
    trapped, spread = _SCAN_KERNEL[0](lanes, np.asarray(steps, dtype=np.int64), np.repeat(radii, B) ** 2, int(min_dwell))
    return trapped.reshape(radii.size, B) / total_steps, spread.reshape(radii.size, B) / total_steps


def within_chain_permutation_p(own, twins) -> float:
    """One-sided p-value of a chain's statistic against its twins, pooled over chains: each chain b and its c twins
    are exchangeable under the null, so the sum over chains of the statistic of one member drawn from each group is
    the null law of Σ_b own_b. P(Σ_b z_b ≥ Σ_b own_b) over every choice of one member per group where there are at
    most 2¹⁶ choices, else 2¹⁶ random choices (seed 0). own (B,), twins (c, B)."""
    own, twins = np.asarray(own, dtype=float), np.asarray(twins, dtype=float)
    groups = np.concatenate([own[None], twins.reshape(-1, own.size)])        # (c + 1, B)
    m, B = groups.shape
    if m ** B <= 2 ** 16:
        pick = (np.arange(m ** B)[:, None] // m ** np.arange(B)) % m
    else:
        pick = np.random.default_rng(0).integers(m, size=(2 ** 16, B))
    return float(np.mean(groups[pick, np.arange(B)].sum(1) >= own.sum() - 1e-12))


TRAP_MARGIN = 0.5   # the chains' traps spread at least r²/2 more than their twins' (half the run in traps 2r apart)
TRAP_ALPHA = 0.05   # and the within-chain permutation test against their twins gives p below this


def trap_twin_scores(chains, twins, records, radius: float, min_dwell: int, steps: int) -> dict:
    """Notebook 03's statistics at one radius, each chain against its basin-free twins (twins (R, c·B, d), copy c of
    chain b at column c·B + b): dict(spread (B,), twin_spread (B,): its twins' mean, excess (B,) = (spread −
    twin_spread)/radius², rank (B,): the chain's mid-rank among its twins in [0, 1], p: the one-sided permutation test
    of the summed spread, each chain exchangeable with its twins (`within_chain_permutation_p`), trapped,
    twin_trapped (B,): time trapped). Chain and twins are exchangeable when the chain has no basins either."""
    chains, twins = np.asarray(chains, dtype=float), np.asarray(twins, dtype=float)
    B = chains.shape[1]
    if chains.ndim != 3 or twins.ndim != 3 or twins.shape[0] != chains.shape[0] or twins.shape[1] % B \
            or twins.shape[1] == 0 or twins.shape[2] != chains.shape[2]:
        raise ValueError(f"need chains (R, B, d) and twins (R, c·B, d) of the same records, got {chains.shape} and "
                         f"{twins.shape}.")
    copies = twins.shape[1] // B
    trapped, spread = (a[0] for a in trap_statistics(np.concatenate([chains, twins], 1), records, [radius], min_dwell,
                                                     steps))
    own, null = spread[:B], spread[B:].reshape(copies, B)
    rank = ((null < own).sum(0) + 0.5 * (null == own).sum(0)) / copies
    return dict(spread=own, twin_spread=null.mean(0), excess=(own - null.mean(0)) / radius ** 2, rank=rank,
                p=within_chain_permutation_p(own, null), trapped=trapped[:B], twin_trapped=trapped[B:].reshape(copies, B).mean(0))


def trap_criterion(chains, twins, records, radius: float, min_dwell: int, steps: int) -> bool:
    """Notebook 03's trap criterion: do the chains hold traps in more distinct places than basin-free chains at their
    own change rate and in their geometry? Traps are found at `radius` (≥ `min_dwell` steps, `steps` in the run);
    a chain's trap spread is Σ_traps dwell·‖c_trap − c̄‖²/steps (`trap_statistics`). Passes when the chains' mean
    excess over their twins' spread is at least TRAP_MARGIN radius², and the one-sided permutation test of their summed
    spread, each chain exchangeable with its own twins, gives p < TRAP_ALPHA (`trap_twin_scores`). A basin-free chain sits in one
    place however slowly it changes tokens, so its traps spread no more than its twins'.
    chains (R, B, d) embeddings at `records` (R,); twins (R, c·B, d), copy c of chain b at column c·B + b (e.g.
    `planted_chains` or, on the model, `twins.independent_site_chains` embedded as the chains are)."""
    return criterion_passes(trap_twin_scores(chains, twins, records, radius, min_dwell, steps))


def criterion_passes(scores: dict) -> bool:
    """The trap criterion's decision from `trap_twin_scores`: p < TRAP_ALPHA and mean excess ≥ TRAP_MARGIN."""
    return bool(scores["p"] < TRAP_ALPHA and scores["excess"].mean() >= TRAP_MARGIN)


def trap_twin_calibration(rates, steps: int, record_every: int, min_dwell: int, levels, level_index: int,
                          replicates: int = 100, twins: int = 4, seed: int = 0, **design):
    """Power and size of notebook 03's trap criterion (`trap_criterion`) at its design: returns (criterion
    Calibration at radius quantile levels[level_index], panel Calibration: the criterion at more than half of the
    `levels` radii). Truth: planted two-well chains (`planted_chains(wells=True)`); null: planted basin-free chains
    on independent sites at the chains' change `rates`; each with `twins` basin-free twins per chain built as the
    page builds them. `design`: further `planted_chains` keywords."""
    from ..checks import calibrate

    levels = [float(q) for q in levels]

    def passes(rng, wells: bool) -> np.ndarray:  # the criterion at every radius of the panel
        d = planted_chains(rng, rates, steps, record_every, wells, twins, levels, **design)
        return np.array([trap_criterion(d["chains"], d["twins"], d["records"], r, min_dwell, steps) for r in d["radii"]])

    k = design.get("well_sites", 8)
    on = (f"planted Glauber chains ({len(np.atleast_1d(rates))} chains, n = {design.get('sites', 24)}, {steps} steps) "
          f"at these change rates: two wells (a Curie–Weiss block of {k} sites, J = {design.get('coupling', 1.8):g}) / "
          f"basin-free (independent sites); each against {twins} basin-free twins at its measured change rate")
    return tuple(calibrate(rule, lambda rng: passes(rng, True), lambda rng: passes(rng, False), replicates, on,
                           seed=seed)
                 for rule in (lambda ok: bool(ok[level_index]), lambda ok: bool(ok.sum() > len(levels) / 2)))


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
