"""The rules record (notebooks/rules.json, shown on the rules page, book/preregistration.md): a notebook's checks,
or its paper profile, cannot change without a new dated entry."""
import json
import re
from pathlib import Path

import pytest

from glauber_mlm import book
from glauber_mlm.book.record import paper_hash, stale_entry
from glauber_mlm.pages.checks import rules_hash, rules_source

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "notebooks" / "rules.json").read_text())
NAMES = [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))]


@pytest.mark.parametrize("name", NAMES)
def test_the_last_entry_names_the_current_checks_and_paper_profile(name):
    problem = stale_entry(name, ROOT / "notebooks" / f"{name}.py", RECORD.get(name, []))
    assert problem is None, problem


def test_a_stale_entry_is_named_with_the_hashes_to_write(tmp_path):
    src = tmp_path / "02_high_temperature_mixing.py"
    src.write_text((ROOT / "notebooks" / src.name).read_text().replace('"paper": dict(', '"paper": dict(extra=1, ', 1))
    entries = RECORD["02_high_temperature_mixing"]
    assert entries[-1]["hash"] == rules_hash(src.read_text()) and entries[-1]["paper"] != paper_hash(src)
    assert stale_entry("02_high_temperature_mixing", src, entries) == (
        "02_high_temperature_mixing's paper profile changed without a dated entry: add a dated entry to "
        f"notebooks/rules.json for 02_high_temperature_mixing saying what changed, with hash {rules_hash(src.read_text())} "
        f"and paper {paper_hash(src)}")
    assert "has no entry" in stale_entry("02_high_temperature_mixing", src, [])


def test_entries_are_dated_in_order_and_say_what_changed():
    for name, entries in RECORD.items():
        assert name in NAMES, f"notebooks/rules.json names {name}, which is not a notebook"
        dates = [e["date"] for e in entries]
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in dates) and dates == sorted(dates)
        assert all(e["change"].strip() and isinstance(e["builds_committed"], bool) for e in entries)
        outcomes = [e[k] for e in entries for k in ("outcome_before", "outcome_after") if k in e]
        assert all(isinstance(o, str) and o.strip() for o in outcomes), f"{name}: an outcome is a non-empty sentence"


def test_a_changed_threshold_changes_the_hash_and_a_changed_figure_does_not():
    src = (ROOT / "notebooks" / "02_high_temperature_mixing.py").read_text()
    moved = src.replace('threshold="passes when below 1.5', 'threshold="passes when below 2.0')
    assert moved != src and rules_hash(moved) != rules_hash(src)
    figure = src.replace("import numpy as np\n", "import numpy as np  # a cell that states no check\n", 1)
    assert rules_hash(figure) == rules_hash(src) and "run.conclude(" in rules_source(src)
    with pytest.raises(ValueError, match="exactly one cell"):
        rules_source(src.replace("run.conclude(", "run.finish("))


def test_every_result_notebook_is_in_the_book():
    assert set(NAMES) <= set(book.known_notebooks())
