"""Published outputs are sealed (issue 34, item 2): a page edited, damaged or added to after it was published is
re-executed by `book` (which names the file), refused by a build that cannot re-execute it, compared file by file by
`verify`, and kept off the dashboard; and every input of a run is in its key (item 3)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from glauber_mlm import contract
from glauber_mlm.book import BookError, cache, publish, verify
from glauber_mlm.book.execute import prepare_parameters
from glauber_mlm.book.site import VERDICTS, write_verdicts
from glauber_mlm.build import data
from test_book import EXAMPLE

NAME = "96_sealed"
RESULT = {"verdict": "inconclusive at this scale", "checks_verdict": "inconclusive at this scale", "question": "paper",
          "scale": 1.0, "checks": {"a check": "inconclusive"}, "numbers": {"n": "1.0"},
          "build": "`cpu` profile · model the embedded minilm-mlm · AMD EPYC"}


def make_page(published: Path, name: str = NAME, stamp: dict | None = None) -> Path:
    """A complete published page of `name` (notebook, tables, checks, result box, a figure, provenance), sealed."""
    results = published / name
    (results / "figures").mkdir(parents=True)
    (results / "rhat.csv").write_text("tau,rhat\n1.0,1.17\n3.0,1.01\n")
    (results / "checks.csv").write_text("check,outcome\na check,inconclusive\n")
    (results / "result.json").write_text(json.dumps(RESULT))
    (results / "figures" / "rhat.png").write_bytes(b"\x89PNG fake")
    return sealed(results, stamp)


def sealed(results: Path, stamp: dict | None = None) -> Path:
    """Publish the results folder `results` as a finished run leaves it: its executed notebook beside it (stamped
    with run id r1 and `stamp`), a complete provenance, the seal. Returns the notebook."""
    notebook = results.with_suffix(".ipynb")
    notebook.write_text(json.dumps({"cells": [], "metadata": {"glauber_mlm": {"run_id": "r1", **(stamp or {})}}}))
    contract.write_provenance(results, {**{key: "-" for key in contract.REQUIRED}, "profile": "cpu", "scale": 1.0,
                                        "parameters": {}, "versions": {}, "wall_time_s": 1.0, "run_id": "r1"})
    publish.seal(notebook, results, {"inputs": (stamp or {}).get("inputs", {})})
    return notebook


@pytest.fixture
def page(tmp_path) -> Path:
    return make_page(tmp_path / "book" / "notebooks")


def test_the_seal_covers_every_file_of_the_page_and_holds_as_published(page):
    prov = contract.read_provenance(page.with_suffix(""))
    assert sorted(prov["seal"]["files"]) == [f"{NAME}.ipynb", f"{NAME}/checks.csv", f"{NAME}/figures/rhat.png",
                                             f"{NAME}/result.json", f"{NAME}/rhat.csv"]
    assert publish.problems(page) == []


@pytest.mark.parametrize("tamper, said", [
    (lambda r: (r / "result.json").write_text(json.dumps({**RESULT, "verdict": "confirmed"})), "result.json was edited"),
    (lambda r: (r / "rhat.csv").unlink(), "rhat.csv was deleted"),
    (lambda r: (r / "figures" / "rhat.png").write_bytes(b"\x89PNG corrupted"), "figures/rhat.png was edited"),
    (lambda r: (r / "extra.csv").write_text("x\n1\n"), "extra.csv was added"),
    (lambda r: r.with_suffix(".ipynb").write_text(r.with_suffix(".ipynb").read_text().replace("[]", "[{}]")),
     f"{NAME}.ipynb was edited"),
    (lambda r: (r / "provenance.json").write_text((r / "provenance.json").read_text().replace('"cpu"', '"paper"')),
     "provenance.json was edited"),
])
def test_a_page_changed_after_publishing_names_the_file(page, tamper, said):
    tamper(page.with_suffix(""))
    found = publish.problems(page)
    assert len(found) == 1 and said in found[0] and "after it was published" in found[0], found
    with pytest.raises(BookError, match=f"{NAME}: .*{said}"):
        publish.check_published([page])


def test_a_page_published_before_the_seal_is_not_trusted(page):
    prov_path = page.with_suffix("") / "provenance.json"
    prov = json.loads(prov_path.read_text())
    del prov["seal"]
    prov_path.write_text(json.dumps(prov))
    assert publish.problems(page) == [f"{NAME}/provenance.json has no seal (published before outputs were sealed, or "
                                      "the seal was removed), so its files cannot be trusted"]


def test_book_re_executes_a_tampered_page_and_says_which_file(tmp_path):
    src = tmp_path / f"{NAME}.py"
    src.write_text(EXAMPLE.replace('Run("99_example"', f'Run("{NAME}"'))
    published = tmp_path / "book" / "notebooks"
    params = prepare_parameters(src, {"profile": "smoke"})
    page = make_page(published, stamp={"inputs": cache.inputs(src, params, published)})
    assert cache.stale_reason(src, params, page) is None
    (page.with_suffix("") / "rhat.csv").write_text("tau,rhat\n1.0,1.00\n3.0,1.00\n")
    assert cache.stale_reason(src, params, page) == f"{NAME}/rhat.csv was edited after it was published"


# ---- verify: every file compared, missing and extra files named --------------------------------------------------

def test_verify_compares_every_table_the_result_box_and_names_missing_and_extra_files(tmp_path, capsys):
    published = make_page(tmp_path / "published").with_suffix("")
    fresh = make_page(tmp_path / "fresh").with_suffix("")
    assert verify.compare_page(published, fresh, 0.0, 0.0) == []
    (published / "result.json").write_text(json.dumps({**RESULT, "verdict": "confirmed"}))
    (published / "checks.csv").write_text("check,outcome\na check,pass\n")
    (fresh / "figures" / "rhat.png").unlink()
    (fresh / "new.png").write_bytes(b"png")
    assert verify.compare_page(published, fresh, 0.0, 0.0) == [
        f"{NAME}/checks.csv: outcome (row 0: 'pass' vs 'inconclusive')",
        f"{NAME}/figures/rhat.png: not written by the re-execution",
        f"{NAME}/new.png: extra: written by the re-execution, not published",
        f"{NAME}/result.json: verdict: 'confirmed' vs 'inconclusive at this scale'",
    ]
    assert "rhat.csv: reproduced" in capsys.readouterr().out


def test_verify_compares_the_key_numbers_only_without_a_tolerance(tmp_path):
    published = make_page(tmp_path / "published").with_suffix("")
    fresh = make_page(tmp_path / "fresh").with_suffix("")
    (fresh / "result.json").write_text(json.dumps({**RESULT, "numbers": {"n": "1.1"}}))
    assert verify.compare_page(published, fresh, 0.0, 0.0) == [
        f"{NAME}/result.json: numbers: {{'n': '1.0'}} vs {{'n': '1.1'}}"]
    assert verify.compare_page(published, fresh, 0.1, 0.0) == []


# ---- the dashboard reads only sealed pages of existing notebooks --------------------------------------------------

def test_the_dashboard_shows_sealed_pages_only_and_leaves_out_pages_without_a_notebook(tmp_path, capsys):
    published = tmp_path / "book" / "notebooks"
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    for name in ("01_good", "02_tampered"):
        make_page(published, name)
        (nbs / f"{name}.py").write_text("")
    make_page(published, "03_removed")
    (published / "02_tampered" / "result.json").write_text(json.dumps({**RESULT, "verdict": "confirmed"}))
    rows = (write_verdicts(tmp_path, nbs)).read_text().splitlines()
    assert len(rows) == 4
    assert "01 · good" in rows[2] and "| **inconclusive** on minilm-mlm at `cpu` scale |" in rows[2]
    assert "02 · tampered" in rows[3] and "confirmed" not in rows[3]
    assert "not shown: 02_tampered/result.json was edited after it was published" in rows[3]
    assert "03_removed" not in (tmp_path / VERDICTS).read_text()
    assert "dashboard: leaving out 03_removed: there is no 03_removed.py" in capsys.readouterr().out


# ---- every input is in the key --------------------------------------------------------------------------------------

@pytest.fixture
def example(tmp_path, monkeypatch) -> tuple[Path, dict, Path]:
    """(source, parameters, results folder) of an example notebook; a private hash cache; the variable unset."""
    monkeypatch.setattr(data, "HASH_CACHE", tmp_path / "cache" / "sha256.json")
    monkeypatch.delenv(contract.MS_MARCO, raising=False)
    src = tmp_path / f"{NAME}.py"
    src.write_text(EXAMPLE.replace('Run("99_example"', f'Run("{NAME}"'))
    return src, prepare_parameters(src, {"profile": "smoke"}), tmp_path / "book" / "notebooks"


def test_a_file_named_by_the_environment_is_a_cache_input_by_content(example, tmp_path, monkeypatch):
    src, params, results = example
    unset = cache.inputs(src, params, results)
    assert cache.input_file_digests() == {contract.MS_MARCO: "unset"}
    passages = tmp_path / "ms_marco.jsonl"
    passages.write_text('{"passage": "one"}\n')
    monkeypatch.setenv(contract.MS_MARCO, str(passages))
    first = cache.inputs(src, params, results)
    passages.write_text('{"passage": "two"}\n')
    os.utime(passages, ns=(1, 1))  # another mtime, so the cached hash is not reused
    second = cache.inputs(src, params, results)
    monkeypatch.setenv(contract.MS_MARCO, str(tmp_path / "elsewhere.jsonl"))
    missing = cache.inputs(src, params, results)
    assert len({unset["files"], first["files"], second["files"], missing["files"]}) == 4
    assert {k for k in first if first[k] != unset[k]} == {"files"}
    assert cache.provenance(src, first)["input_files"] == {contract.MS_MARCO: f"missing: {tmp_path / 'elsewhere.jsonl'}"}


def test_the_rules_record_of_the_page_is_a_cache_input(example, tmp_path, monkeypatch):
    src, params, results = example
    rules = tmp_path / "rules.json"
    entry = {"date": "2026-12-01", "change": "first rules", "hash": None, "paper": None, "builds_committed": True}
    rules.write_text(json.dumps({NAME: [entry], "00_other": [entry]}))
    monkeypatch.setattr(contract, "RULES", rules)
    before = cache.inputs(src, params, results)
    rules.write_text(json.dumps({NAME: [entry], "00_other": [entry, {**entry, "date": "2026-12-02"}]}))
    assert cache.inputs(src, params, results) == before  # another page's entry
    rules.write_text(json.dumps({NAME: [entry, {**entry, "date": "2026-12-02", "change": "new rules"}]}))
    after = cache.inputs(src, params, results)
    assert {k for k in after if after[k] != before[k]} == {"rules"}
