"""A political score on sentence embeddings: P(political | e) from a logistic regression or a centroid direction.

logistic: p(e) = σ(w·e + b) fitted on labelled text; centroid: z = e·(μ₁ − μ₀)/‖μ₁ − μ₀‖, p = σ(a z + c).
The "political region" is {e : p(e) ≥ threshold}. Train on `passages.load_political_text()` (disjoint from
the starting passages); hold out whole documents (`split_by_group`) so that held-out accuracy is honest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..stats import proportion_ci

METHODS = ("logistic", "centroid")


@dataclass
class PoliticalScore:
    """A fitted score: `score(emb)` → P(political) in [0, 1]; `inside(emb)` → score ≥ threshold."""

    method: str
    classifier: object  # sklearn LogisticRegression on e (logistic) or on the 1-D projection z (centroid)
    direction: np.ndarray | None = None  # unit (μ₁ − μ₀), centroid method only
    threshold: float = 0.5

    def _features(self, emb: np.ndarray) -> np.ndarray:
        emb = np.atleast_2d(np.asarray(emb, dtype=float))
        return emb if self.direction is None else (emb @ self.direction)[:, None]

    def score(self, emb: np.ndarray) -> np.ndarray:
        """P(political) for each row of `emb` (…, d) → (…)."""
        emb = np.asarray(emb, dtype=float)
        flat = emb.reshape(-1, emb.shape[-1])
        return self.classifier.predict_proba(self._features(flat))[:, 1].reshape(emb.shape[:-1])

    def inside(self, emb: np.ndarray) -> np.ndarray:
        """Whether each embedding lies in the political region (score ≥ threshold)."""
        return self.score(emb) >= self.threshold


def fit_political_score(emb: np.ndarray, labels, method: str = "logistic", C: float = 1.0,
                        threshold: float = 0.5, seed: int = 0) -> PoliticalScore:
    """Fit the score on embeddings (N, d) and 0/1 labels (1 = political); classes are weighted to balance."""
    from sklearn.linear_model import LogisticRegression

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: use one of {METHODS}.")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold}.")
    emb, labels = np.asarray(emb, dtype=float), np.asarray(labels).astype(int)
    if emb.ndim != 2 or emb.shape[0] != labels.shape[0]:
        raise ValueError(f"need emb (N, d) and N labels, got {emb.shape} and {labels.shape}.")
    if set(np.unique(labels)) != {0, 1}:
        raise ValueError("labels must contain both classes, 0 (not political) and 1 (political).")
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=2000, random_state=seed)
    if method == "logistic":
        return PoliticalScore(method, clf.fit(emb, labels), None, threshold)
    direction = emb[labels == 1].mean(0) - emb[labels == 0].mean(0)
    direction /= np.linalg.norm(direction)
    return PoliticalScore(method, clf.fit((emb @ direction)[:, None], labels), direction, threshold)


def split_by_group(groups, test_fraction: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row indices with no group (e.g. document) on both sides."""
    from sklearn.model_selection import GroupShuffleSplit

    groups = np.asarray(groups)
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}.")
    split = GroupShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed)
    train, test = next(split.split(np.zeros(len(groups)), groups=groups))
    return train, test


def accuracy_table(score: PoliticalScore, emb: np.ndarray, labels, level: float = 0.95) -> pd.DataFrame:
    """Held-out accuracy with Wilson intervals: overall, and on political / non-political rows (recall)."""
    labels = np.asarray(labels).astype(int)
    pred = score.inside(emb).astype(int)
    rows = []
    for subset, mask in (("all", np.ones_like(labels, bool)), ("political", labels == 1), ("not political", labels == 0)):
        n, correct = int(mask.sum()), int((pred[mask] == labels[mask]).sum())
        if n == 0:
            continue
        acc, lo, hi = proportion_ci(correct, n, level)
        rows.append(dict(subset=subset, n=n, correct=correct, accuracy=acc, ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


def subsample(rows: list[dict], limit: int | None, seed: int = 0, key: str = "label") -> list[dict]:
    """At most `limit` rows, drawn without replacement, keeping each `key` class in its proportion."""
    if limit is None or limit >= len(rows):
        return list(rows)
    rng = np.random.default_rng(seed)
    labels = np.array([r[key] for r in rows])
    keep = []
    for value in np.unique(labels):
        idx = np.flatnonzero(labels == value)
        take = max(1, round(limit * idx.size / len(rows)))
        keep.extend(rng.choice(idx, size=min(take, idx.size), replace=False).tolist())
    return [rows[i] for i in sorted(keep)]


# ---------------------------------------------------------------- separation of the text sets

def document_roles(text_sets: dict[str, list[dict]]) -> pd.DataFrame:
    """Per text set and source: rows, documents, and the role(s) `data.role_of` gives their documents.

    `data.role_of` is the hash of a document id that assigned every document exactly one role (MLM training
    text, MLM held-out text, starting passages, political text) when data/ was built; recomputing it here
    checks, document by document, that a set holds no document of another role (e.g. none of 'train').
    """
    from ..build.data import Doc, role_of

    rows = []
    for name, texts in text_sets.items():
        frame = pd.DataFrame({"source": [r.get("source") for r in texts], "doc_id": [r.get("doc_id") for r in texts]})
        for source, g in frame.groupby("source", sort=True):
            docs = sorted(set(g.doc_id))
            roles = sorted({role_of(Doc(d, source, None)) for d in docs})
            rows.append(dict(text_set=name, source=source, rows=len(g), documents=len(docs), roles="+".join(roles)))
    return pd.DataFrame(rows)


def shared_documents(a: list[dict], b: list[dict]) -> set:
    """The document ids (`doc_id`) that appear in both lists of rows."""
    return {r.get("doc_id") for r in a} & {r.get("doc_id") for r in b}


# ---------------------------------------------------------------- intervals over starting passages

def fraction_ci(values, units, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of per-chain values in [0, 1] whose independent units are `units` (starting passages).

    Chains of one unit (seeds of one start, passages of one document) are not independent, so the interval
    resamples units: with one 0/1 value per unit it is the Wilson interval over units (exact at 0 and 1,
    where a bootstrap collapses); otherwise a percentile bootstrap of the mean over resampled units, each
    unit weighted by its number of chains (so the estimate is the plain mean over chains).
    """
    values, units = np.asarray(values, dtype=float), np.asarray(units)
    if values.size == 0 or values.shape != units.shape:
        raise ValueError(f"need one unit per value, got {values.shape} values and {units.shape} units.")
    labels, inverse = np.unique(units, return_inverse=True)
    binary = np.isin(values, (0.0, 1.0)).all()
    if binary and labels.size == values.size:
        p, lo, hi = proportion_ci(int(values.sum()), int(values.size), level)
        return p, min(lo, p), max(hi, p)  # rounding at p = 0 or 1
    sums, counts = np.bincount(inverse, values), np.bincount(inverse).astype(float)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, labels.size, (n_boot, labels.size))
    boots = sums[pick].sum(1) / counts[pick].sum(1)
    tail = (1 - level) / 2
    return float(values.mean()), float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))


def temperature_contrasts(chains: pd.DataFrame, value: str, unit: str = "start_id", temperature: str = "temperature",
                          level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Every pair of temperatures τ_a < τ_b: the difference mean(value at τ_a) − mean(value at τ_b), paired by unit.

    The same starting passages run at every temperature, so the difference is taken start by start (the
    mean over that start's chains at each τ) and its percentile interval resamples starts; only starts
    present at both temperatures count. `reading` says whether the value at τ_a is 'higher', 'lower' or
    'indistinguishable' from the value at τ_b (the interval of the difference excludes 0 or not). The
    intervals are per pair, not simultaneous over pairs.
    """
    per_unit = chains.groupby([temperature, unit])[value].mean().unstack(temperature)
    taus = sorted(per_unit.columns)
    rng = np.random.default_rng(seed)
    tail = (1 - level) / 2
    rows = []
    for i, a in enumerate(taus):
        for b in taus[i + 1:]:
            pair = per_unit[[a, b]].dropna()
            if pair.empty:
                continue
            d = (pair[a] - pair[b]).to_numpy()
            boots = d[rng.integers(0, d.size, (n_boot, d.size))].mean(1)
            lo, hi = float(np.quantile(boots, tail)), float(np.quantile(boots, 1 - tail))
            reading = "higher" if lo > 0 else "lower" if hi < 0 else "indistinguishable"
            rows.append(dict(quantity=value, tau_a=a, tau_b=b, starts=len(pair), mean_a=float(pair[a].mean()),
                             mean_b=float(pair[b].mean()), difference=float(d.mean()), ci_low=lo, ci_high=hi,
                             reading=reading))
    return pd.DataFrame(rows, columns=["quantity", "tau_a", "tau_b", "starts", "mean_a", "mean_b", "difference",
                                       "ci_low", "ci_high", "reading"])


def trend_verdict(contrasts: pd.DataFrame) -> str:
    """Whether a quantity is monotone in τ within its intervals, from `temperature_contrasts`' table.

    'falls as τ rises' ('rises as τ rises') when some pair resolves a difference and every resolved pair
    points that way; 'not monotone' when resolved pairs point both ways (a reversal); 'not resolved' when no
    pair's interval excludes 0.
    """
    falls = (contrasts.reading == "higher").any()   # higher at the lower temperature
    rises = (contrasts.reading == "lower").any()
    if falls and rises:
        return "not monotone"
    if falls:
        return "falls as τ rises"
    if rises:
        return "rises as τ rises"
    return "not resolved"


def page_trend(chains: pd.DataFrame, value: str, falls: bool = True, unit: str = "start_id",
               temperature: str = "temperature") -> dict[str, float]:
    """Page's L test of a monotone trend of `value` over temperature, blocked by `unit` (the starting passage).

    The mean per (unit, temperature) is ranked within each unit; L = Σ_τ (predicted rank of τ)·(rank sum at τ), and the
    one-sided p-value (`scipy.stats.page_trend_test`) tests "one distribution at every τ" against "falls as τ rises"
    (`falls`) or "rises as τ rises". Units present at every temperature only. Returns dict(L, p_value, units, levels)."""
    from scipy.stats import page_trend_test

    per_unit = chains.groupby([unit, temperature])[value].mean().unstack(temperature).dropna()
    taus = sorted(per_unit.columns, reverse=falls)  # Page's alternative: values rise along this order
    if len(taus) < 3 or len(per_unit) < 2:
        return dict(L=float("nan"), p_value=float("nan"), units=len(per_unit), levels=len(taus))
    res = page_trend_test(per_unit[taus].to_numpy())
    return dict(L=float(res.statistic), p_value=float(res.pvalue), units=len(per_unit), levels=len(taus))


def corrupted_false_positives(score: PoliticalScore, embed, states, support_ids, rates, rng: np.random.Generator,
                              decode) -> pd.DataFrame:
    """The score's false-positive rate on non-political text with a share `rate` of its tokens replaced at random.

    `states` (N, n) are token ids of non-political passages; each site is replaced with probability `rate` by a token
    drawn uniformly from `support_ids` (the tokens a chain may visit), the text decoded (`decode`), embedded (`embed`)
    and scored: what the score calls political in text edited as much as a chain edits it, but with no pull towards
    any topic. Rows: rate, texts, fraction (called political), ci_low, ci_high (Wilson)."""
    rows = []
    for rate in rates:
        inside = score.inside(embed(decode(uniform_edits(states, support_ids, rate, rng))))
        f, lo, hi = proportion_ci(int(inside.sum()), inside.size)
        rows.append(dict(rate=float(rate), texts=int(inside.size), fraction=f, ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


def uniform_edits(states, support_ids, rate: float, rng: np.random.Generator):
    """Text edited at random: each site of `states` (N, n) replaced with probability `rate` by a token drawn uniformly
    from `support_ids` (the tokens a chain may visit). Returns the edited states (N, n)."""
    import torch

    states, support_ids = torch.as_tensor(states), torch.as_tensor(support_ids)
    edit = torch.as_tensor(rng.random(tuple(states.shape)) < rate)
    random_tokens = support_ids[torch.as_tensor(rng.integers(0, len(support_ids), tuple(states.shape)))]
    return torch.where(edit, random_tokens, states)


def start_memory(starts, ends, units) -> pd.DataFrame:
    """Per chain: how far its end state is from its own start and from the other units' starts, in share of sites.

    own_b = (1/n) Σ_i [end_{b,i} ≠ start_{b,i}];  others_b = mean over chains c of another unit of
    (1/n) Σ_i [end_{b,i} ≠ start_{c,i}]. A chain that has forgotten its start is as far from it as from any other
    start (own ≈ others); own < others is memory of the start, at the level of tokens. `starts`, `ends`: (B, n)
    token ids; `units`: (B,) the starting passage of each chain."""
    starts, ends, units = np.asarray(starts), np.asarray(ends), np.asarray(units)
    if starts.ndim != 2 or starts.shape != ends.shape or units.shape != (starts.shape[0],):
        raise ValueError(f"need starts and ends (B, n) and one unit per chain, got {starts.shape}, {ends.shape} and "
                         f"{units.shape}.")
    labels, first = np.unique(units, return_index=True)
    if labels.size < 2:
        raise ValueError("start_memory needs chains from at least two starting passages (units) to compare with.")
    distinct = starts[first]                                       # one start per unit, (U, n)
    dist = (ends[:, None, :] != distinct[None, :, :]).mean(-1)     # (B, U)
    mine = units[:, None] == labels[None, :]
    own = dist[mine]  # exactly one own unit per chain, in chain order
    others = np.where(mine, 0.0, dist).sum(1) / (labels.size - 1)
    return pd.DataFrame(dict(unit=units, own=own, others=others))


def conditional_edits(model, states, share: float, temperature: float, seed: int = 0, chunk: int = 256,
                      dtype=None):
    """A null for "drawn into the region": text edited as much as a chain edits it, each edit drawn from the model's
    own conditional, but with no dynamics to pull it anywhere.

    Each site of each state (N, n) is edited independently with probability `share` (the chains' share of changed
    sites); an edited site gets a token drawn from the model's conditional at `temperature` given the *unedited*
    state, renormalised without its current token (so an edited site changes, as a chain's changed site has). Every
    edit sees only the starting text, so no edit builds on another: the model's local preferences at the chains'
    rate, without the accumulation a basin would need. Returns the edited states (N, n), int64. Seeded."""
    import torch

    from ..conditionals import log_conditionals
    from ..validate import as_temperatures, check_states

    if not 0 <= share <= 1 or not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"need share in [0, 1] and a finite temperature > 0, got {share!r}, {temperature!r}.")
    states = check_states(model, torch.as_tensor(states)).cpu()
    gen = torch.Generator().manual_seed(int(seed))
    rows, sites = torch.nonzero(torch.rand(states.shape, generator=gen, dtype=torch.float64) < share, as_tuple=True)
    out = states.clone()
    for lo in range(0, rows.numel(), chunk):
        r, s = rows[lo:lo + chunk], sites[lo:lo + chunk]
        x = states[r]
        logp = log_conditionals(model, x.to(model.device), s.to(model.device),
                                as_temperatures(float(temperature), len(r), model.device), dtype).double().cpu()
        logp[torch.arange(len(r)), x[torch.arange(len(r)), s]] = float("-inf")      # never the current token
        out[r, s] = torch.multinomial(torch.softmax(logp, 1), 1, generator=gen).squeeze(1)
    return out


# ---------------------------------------------------------------- the null families of the level checks

NULL_FAMILIES = ("clean text", "uniform edits", "conditional edits")


def null_family_calls(score: PoliticalScore, embed, decode, model, states, share: float, temperature: float,
                      support_ids, documents, seed: int = 0, families=NULL_FAMILIES) -> pd.DataFrame:
    """What the score calls political in text written with no dynamics, under each null family of `families`
    (`NULL_FAMILIES`): the texts `states` (N, n) unedited ("clean text"); each site replaced with probability `share`
    by a uniform token of `support_ids` ("uniform edits", `uniform_edits`); each site edited with probability `share`
    from the model's conditional at `temperature` ("conditional edits", `conditional_edits`). Rows: family, text
    (0 … N−1), document (`documents[text]`, the unit to resample), rate (`share`), changed (share of the text's sites
    changed), called (1: in the region). Seeded."""
    import torch

    states, documents = torch.as_tensor(states), np.asarray(documents)
    unknown = set(families) - set(NULL_FAMILIES)
    if unknown or documents.shape != (len(states),):
        raise ValueError(f"need families among {NULL_FAMILIES} and one document per text, got {sorted(unknown)} and "
                         f"{documents.shape} documents for {len(states)} texts.")
    write = {"clean text": lambda: states,
             "uniform edits": lambda: uniform_edits(states, support_ids, share, np.random.default_rng(seed)),
             "conditional edits": lambda: conditional_edits(model, states, share, temperature, seed=seed)}
    frames = []
    for family in families:
        edited = write[family]()
        frames.append(pd.DataFrame(dict(family=family, text=np.arange(len(states)), document=documents,
                                        rate=float(share), changed=(edited != states).float().mean(1).numpy(),
                                        called=np.asarray(score.inside(embed(decode(edited))), dtype=float))))
    return pd.concat(frames, ignore_index=True)


def under_every_family(gaps: dict[str, tuple[float, float, float]]) -> bool | None:
    """The rule "more time in the region than every null family gives": True when each family's difference interval
    (estimate, low, high) lies above 0, False when none does, None when the families disagree (the answer then depends
    on which null is chosen, so it decides nothing)."""
    above = [g[1] > 0 for g in gaps.values()]
    if not above:
        raise ValueError("under_every_family needs the difference under at least one null family.")
    return True if all(above) else False if not any(above) else None
