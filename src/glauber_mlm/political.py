"""A political score on sentence embeddings: P(political | e) from a logistic regression or a centroid direction.

logistic: p(e) = σ(w·e + b) fitted on labelled text; centroid: z = e·(μ₁ − μ₀)/‖μ₁ − μ₀‖, p = σ(a z + c).
The "political region" is {e : p(e) ≥ threshold}. Train on `passages.load_political_text()` (disjoint from
the starting passages); hold out whole documents (`split_by_group`) so that held-out accuracy is honest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .stats import proportion_ci

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
