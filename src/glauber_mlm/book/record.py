"""The rules record's two hashes (notebooks/rules.json, shown on the pre-registration page): a page's checks, or its
paper profile, cannot change without a new dated entry naming both.

`pages.checks.rules_hash` hashes the cell that states the checks (the one calling `run.conclude(`); `paper_hash`
hashes the paper profile as the page declares it. `stale_entry` says what the last entry of a page lacks, with the
two hashes to write: `tests/test_rules_record.py` asserts it is None for every page, and `glauber-mlm new` writes a
page's first entry with `first_entry`.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..pages.checks import rules_hash
from .parameters import declared_profiles


def paper_hash(src: Path) -> str:
    """The first 12 hex digits of the SHA-256 of the page's paper profile (its PROFILES["paper"], keys sorted)."""
    paper = (declared_profiles(src) or {}).get("paper")
    if paper is None:
        raise ValueError(f"{Path(src).name} declares no PROFILES['paper']: every page has a smoke, a cpu and a paper "
                         "profile (CONTRIBUTING.md, 'Add a notebook').")
    return hashlib.sha256(json.dumps(paper, sort_keys=True, default=str).encode()).hexdigest()[:12]


def hashes(src: Path) -> dict[str, str]:
    """{"hash": the rules hash, "paper": the paper-profile hash} of the page `src`, as an entry names them."""
    return {"hash": rules_hash(Path(src).read_text()), "paper": paper_hash(src)}


def stale_entry(name: str, src: Path, entries: list[dict]) -> str | None:
    """Why the last of `entries` does not name page `name`'s current checks and paper profile, with the fix (the
    entry to add and its hashes); None when it does."""
    now = hashes(src)
    fix = (f"add a dated entry to notebooks/rules.json for {name} saying what changed, with hash {now['hash']} and "
           f"paper {now['paper']}")
    if not entries:
        return f"{name} has no entry in notebooks/rules.json: {fix}"
    last = entries[-1]
    if last.get("hash") != now["hash"]:
        return f"{name}'s checks changed without a dated entry: {fix}"
    if last.get("paper") != now["paper"]:
        return f"{name}'s paper profile changed without a dated entry: {fix}"
    return None


def first_entry(src: Path, date: str, change: str) -> dict:
    """A page's first dated entry: its rules as written, with their two hashes; no build committed yet."""
    return {"date": date, "change": change, **hashes(src), "builds_committed": False}
