"""The texts every notebook starts from: embedded passages and political / non-political text.

`load_passages("embedded")` reads `data/passages.jsonl` (held out of the embedded MLM's training
text, see data/README.md); `load_passages("ms_marco")` loads MS MARCO passages through `datasets`,
as the paper did, and needs the internet. Offline, `GLAUBER_MLM_MS_MARCO=/path/to/file.parquet|.jsonl` names
a local copy of the v2.1 validation split, in the dataset's own record format (one query per record:
`query`, `query_id`, `query_type`, `answers`, `wellFormedAnswers`, and `passages` with the lists `is_selected`,
`passage_text`, `url`), such as the split's parquet file from the hub; it is read in place of the download and
parsed by the same code.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..validate import check_int
from ..contract import MS_MARCO, ms_marco_file
from ..build.data import verify_product

DATA = Path(__file__).resolve().parents[3] / "data"


def _read_jsonl(path: Path) -> list[dict]:
    """The rows of a data file, after checking its sha256 against data/MANIFEST.json; a parse error names file and line."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: rebuild the data with `glauber-mlm build-data`.")
    verify_product(path)
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}, line {number}: not valid JSON ({err.msg}, column {err.colno}).") from err
    return rows


def load_passages(source: str = "embedded", topic: str | None = None, limit: int | None = None) -> list[dict]:
    """Starting passages as dicts with `id`, `text`, `topic`; `topic` filters (e.g. 'politics')."""
    limit = None if limit is None else check_int("limit", limit, 1)
    if source == "embedded":
        rows = _read_jsonl(DATA / "passages.jsonl")
    elif source == "ms_marco":
        rows = _ms_marco(limit or 2000)
    else:
        raise ValueError(f"unknown passages {source!r}: use 'embedded' (offline, in data/) or 'ms_marco' (needs the internet).")
    if topic is not None:
        rows = [r for r in rows if r.get("topic") == topic]
    return rows[:limit] if limit else rows


def _ms_marco(limit: int) -> list[dict]:
    """The first `limit` passages of MS MARCO v2.1 validation, query by query, each passage a row."""
    local = ms_marco_file()
    records = _ms_marco_file(local) if local else _ms_marco_hub()
    rows = []
    for k, ex in enumerate(records):
        for text in ex["passages"]["passage_text"]:
            rows.append({"id": f"ms_marco/{k}/{len(rows)}", "text": text, "topic": None})
        if len(rows) >= limit:
            break
    return rows[:limit]


def _ms_marco_hub() -> Iterator[dict]:
    """The split streamed from the hub; a connection lost while streaming fails with the same message."""
    try:
        from datasets import load_dataset

        yield from load_dataset("microsoft/ms_marco", "v2.1", split="validation", streaming=True)
    except Exception as err:  # ImportError offline installs, connection errors without a hub
        raise OSError(
            "MS MARCO passages need `pip install datasets` and internet access to the Hugging Face hub "
            f"({type(err).__name__}: {err}). Offline, use passages='embedded', the passages shipped in data/, or set "
            f"{MS_MARCO} to a local copy of the v2.1 validation split (.parquet or .jsonl)."
        ) from err


def _ms_marco_file(path: Path) -> list[dict]:
    """The records of a local MS MARCO file (.parquet as the hub holds the split, or .jsonl, one record a line)."""
    if not path.is_file():
        raise FileNotFoundError(f"{MS_MARCO}={path}: no such file (a .parquet or .jsonl copy of MS MARCO v2.1).")
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path).to_dict("records")
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    raise ValueError(f"{MS_MARCO}={path}: give a .parquet or .jsonl file.")


def load_political_text() -> list[dict]:
    """Labelled text for the political score: dicts with `text` and `label` (1 political, 0 not)."""
    return _read_jsonl(DATA / "political.jsonl")


def sample_passages(model, rows: list[dict], length: int, count: int, seed: int = 0):
    """`count` passages of exactly `length` tokens, from distinct documents, with distinct token sequences.

    `model` is an `MLMAdapter` (its `encode` keeps the first `length` tokens of texts that have at least
    that many supported tokens). Passages are drawn in a random order fixed by `seed`; at most one per
    document (`doc_id`, else `id`), so that no two share a source text. Returns (states (count, length), ids).
    """
    import numpy as np
    import torch

    count, seed = check_int("count", count, 1), check_int("seed", seed)
    states, kept = model.encode([r["text"] for r in rows], length)
    order = np.random.default_rng(seed).permutation(len(kept))
    docs, seqs, pick = set(), set(), []
    for k in order:
        row = rows[kept[k]]
        doc, seq = row.get("doc_id") or row.get("id"), tuple(states[k].tolist())
        if doc in docs or seq in seqs:
            continue
        docs.add(doc)
        seqs.add(seq)
        pick.append(int(k))
        if len(pick) == count:
            break
    if len(pick) < count:
        raise ValueError(
            f"only {len(pick)} passages from distinct documents have {length} supported tokens, but {count} are "
            "needed: ask for fewer pairs or rectangles, a shorter length, or more passages."
        )
    ids = [rows[kept[k]].get("id", str(kept[k])) for k in pick]
    return states[torch.as_tensor(pick)], ids


def passage_pairs(model, rows: list[dict], length: int, pairs: int, seed: int = 0):
    """Starting pairs for coupled chains: (x0, y0, ids), two independent passages of `length` tokens per pair.

    All 2·pairs passages come from distinct documents (see `sample_passages`), so x0[p] ≠ y0[p] and no
    passage is reused across pairs. `ids` lists (id of x0[p], id of y0[p]).
    """
    states, ids = sample_passages(model, rows, length, 2 * pairs, seed)
    return states[:pairs], states[pairs:], list(zip(ids[:pairs], ids[pairs:]))
