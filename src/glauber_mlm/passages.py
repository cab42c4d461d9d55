"""The texts every notebook starts from: embedded passages and political / non-political text.

`load_passages("embedded")` reads `data/passages.jsonl` (held out of the embedded MLM's training
text, see data/README.md); `load_passages("ms_marco")` loads MS MARCO passages through `datasets`,
as the paper did, and needs the internet.
"""
from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: rebuild the data with `glauber-mlm build-data`.")
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def load_passages(source: str = "embedded", topic: str | None = None, limit: int | None = None) -> list[dict]:
    """Starting passages as dicts with `id`, `text`, `topic`; `topic` filters (e.g. 'politics')."""
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
    try:
        from datasets import load_dataset

        ds = load_dataset("microsoft/ms_marco", "v2.1", split="validation", streaming=True)
        rows = []
        for k, ex in enumerate(ds):
            for text in ex["passages"]["passage_text"]:
                rows.append({"id": f"ms_marco/{k}/{len(rows)}", "text": text, "topic": None})
            if len(rows) >= limit:
                break
        return rows[:limit]
    except Exception as err:  # ImportError offline installs, connection errors without a hub
        raise OSError(
            "MS MARCO passages need `pip install datasets` and internet access to the Hugging Face hub "
            f"({type(err).__name__}: {err}). Offline, use passages='embedded', the passages shipped in data/."
        ) from err


def load_political_text() -> list[dict]:
    """Labelled text for the political score: dicts with `text` and `label` (1 political, 0 not)."""
    return _read_jsonl(DATA / "political.jsonl")
