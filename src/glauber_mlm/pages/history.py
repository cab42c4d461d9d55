"""How a page's rules came to be: its entries in the rules record (notebooks/rules.json), for the page's end and
for its result box.

The record holds, per notebook, one dated entry each time its checks (the cell calling `run.conclude`, hashed by
`checks.rules_hash`) or its `paper` profile changed, oldest first:

    date               YYYY-MM-DD, the day the change was made
    change             what changed, in words
    hash, paper        the rules hash and the paper-profile hash after the change (null before the record began)
    builds_committed   whether a build under this entry's rules was committed
    outcome_before     optional: the page's outcome under the earlier rules, as seen when the change was made
    outcome_after      optional: the page's outcome under the new rules, from the first build under them
    display_only       optional, true: the change touched only how the page shows its checks (text, figures,
                       where code lives); its rules, design and calibration are unchanged
    revised_after_outcome  optional, true: the change was made after an outcome had been seen, even though no
                       build under the earlier rules was committed

An entry revises the page's rules after an outcome (`revised_after_outcome`) when it is not display-only and either
the entry before it had a committed build or it says so itself. A page's rules are "stated before the run" only
when no entry does; otherwise its result box and the intro's first screen say "revised after N outcomes (last
DATE)" and show the latest outcome the record wrote down before a change of its rules, design or calibration
(`Provenance`).

The outcome fields are rendered only where an entry records them: an outcome that was not written down is shown
as "not recorded", never reconstructed. The result box names only the rules in force and the date they were
fixed (`rules_in_force`); the whole history goes to the section the page shows at its end (`rules_history`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .checks import rules_record


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def fixed_on(entries: list[dict], current_hash: str) -> str | None:
    """The date the rules in force (`current_hash`) were fixed: the first of the record's last entries that carry
    that hash (a later entry with the same hash changed the design, not the rules); None when the last entry's hash
    is another (the checks changed without a dated entry) or there is no entry."""
    if not entries or entries[-1].get("hash") != current_hash:
        return None
    first = len(entries) - 1
    while first > 0 and entries[first - 1].get("hash") == current_hash:
        first -= 1
    return entries[first]["date"]


def rules_in_force(name: str, current_hash: str, record_path: str | Path | None = None) -> str:
    """One sentence for the result box: since when the rules in force hold, or that they have no dated entry."""
    date = fixed_on(rules_record(name, record_path), current_hash)
    if date is None:
        return (f"these checks (rules hash {current_hash}) have no dated entry in `notebooks/rules.json`: they changed "
                "after the last registered rules.")
    return (f"in force since {date} (rules hash {current_hash}); every earlier rule, dated, with whether a build "
            "under it had been seen: `notebooks/rules.json`, shown on the rules page.")


def revised_after_outcome(entries: list[dict], i: int) -> bool:
    """Whether entry `i` changed the rules, design or calibration after an outcome had been seen: it is not
    display-only, and the entry before it had a committed build or it says it was made after an outcome."""
    entry = entries[i]
    if entry.get("display_only"):
        return False
    return bool(entry.get("revised_after_outcome")) or (i > 0 and bool(entries[i - 1].get("builds_committed")))


@dataclass(frozen=True)
class Provenance:
    """Where a page's rules in force come from: the dates of the entries that revised them after an outcome, and the
    latest outcome the record wrote down before a change (None: not recorded) with its entry's date."""
    revisions: tuple[str, ...]
    previous_outcome: str | None = None
    previous_date: str | None = None

    @property
    def stated_before_run(self) -> bool:
        return not self.revisions

    @property
    def label(self) -> str:
        """'stated before the run', or 'revised after 3 outcomes (last 2026-12-03)'."""
        n = len(self.revisions)
        if not n:
            return "stated before the run"
        return f"revised after {n} outcome{'s' if n > 1 else ''} ({'last ' if n > 1 else ''}{self.revisions[-1]})"

    @property
    def previous(self) -> str:
        """The earlier rules' outcome as the record wrote it, dated, or 'not recorded'."""
        if self.previous_outcome is None:
            return "not recorded in `notebooks/rules.json`"
        return f"{self.previous_outcome} (recorded {self.previous_date}, when the rules were revised)"


def provenance(entries: list[dict]) -> Provenance:
    """The `Provenance` of a page from its entries in the rules record, oldest first: the outcome before is the latest
    one an entry that changed more than the display recorded."""
    revisions = tuple(e["date"] for i, e in enumerate(entries) if revised_after_outcome(entries, i))
    recorded = [e for e in entries if e.get("outcome_before") and not e.get("display_only")]
    if not recorded:
        return Provenance(revisions)
    return Provenance(revisions, recorded[-1]["outcome_before"], recorded[-1]["date"])


def page_provenance(name: str, record_path: str | Path | None = None) -> Provenance | None:
    """The `Provenance` of notebook `name` (`provenance`); None when the record has no entry for it."""
    entries = rules_record(name, record_path)
    return provenance(entries) if entries else None


def _outcomes(entry: dict) -> str:
    before, after = entry.get("outcome_before"), entry.get("outcome_after")
    if before is None and after is None:
        return "not recorded"
    return f"{before or 'not recorded'} → {after or 'not recorded'}"


def rules_history(name: str, record_path: str | Path | None = None) -> str:
    """Markdown for the section "How these rules came to be": every entry of notebook `name` in the rules record,
    oldest first, with its date, whether builds under the earlier rules had been committed when it was made, and
    the page's outcome before and after it where the entry records them. A ValueError when `name` has no entry."""
    entries = rules_record(name, record_path)
    if not entries:
        raise ValueError(f"{name} has no entry in notebooks/rules.json: add one (date, change, hash, paper, "
                         "builds_committed) before the page shows its history.")
    seen = sum(revised_after_outcome(entries, i) for i in range(1, len(entries)))
    changes = len(entries) - 1
    lines = ["## How these rules came to be", "",
             f"This page's checks and its `paper` design changed {changes} times after its first entry in the rules "
             f"record (`notebooks/rules.json`); {seen} of these changed its rules, design or calibration after an "
             "outcome had been seen (the others changed only how the page shows them, or came before any build). "
             "The last entry holds the rules in force. An outcome is shown only where the record wrote it down at the time.", "",
             "| date | what changed | after an outcome was seen | outcome before → after | rules hash |",
             "| --- | --- | --- | --- | --- |"]
    for i, e in enumerate(entries):
        after_build = "–" if i == 0 else ("yes" if revised_after_outcome(entries, i) else
                                          "display only" if e.get("display_only") else "no")
        lines.append(f"| {e['date']} | {_cell(e['change'])} | {after_build} | {_cell(_outcomes(e))} | "
                     f"{_cell(e.get('hash') or '–')} |")
    return "\n".join(lines)
