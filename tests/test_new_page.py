"""`glauber-mlm new NN_topic [--exact-only]` (book/new.py): one command writes a page that the runner reads, its
smoke test, and its entry in every register that lists pages by hand; it refuses a bad or taken name and then writes
nothing; `book --model` leaves an exact-model page out instead of refusing the book. Each test works in a copy of the
repository's layout (its notebooks, rules record, toc, intro and run_it_yourself page) in a temporary folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from glauber_mlm import book
from glauber_mlm.book import plan
from glauber_mlm.book.command import model_pages
from glauber_mlm.book.new import PLAN_TABLE, PLAN_TABLE_RATES
from glauber_mlm.book.parameters import (accepted_parameters, declared_budgets, declared_parameters, declared_profiles,
                                         known_notebooks, resolve_parameters, takes_model)
from glauber_mlm.book.record import stale_entry
from glauber_mlm.cli import main as cli_main
from glauber_mlm.pages.checks import rules_source
from notebook_runner import execute
import test_pages

REPO = book.REPO
# the first page number the repository leaves free (a contributor's own pages take the next ones): the pages these
# tests write never collide with a page that exists
FREE = f"{max(int(name[:2]) for name in known_notebooks()) + 1:02d}"
PROBE, MODEL_PROBE = f"{FREE}_probe", f"{FREE}_model_probe"
COPIED = ["_toc.yml", "_config.yml", "book/intro.md", "book/run_it_yourself.md", "notebooks/rules.json"]


@pytest.fixture
def world(tmp_path) -> Path:
    """A copy of the repository's layout: every notebook source and the registers `new` edits; tests/ empty."""
    for path in COPIED + [f"notebooks/{p.name}" for p in sorted(book.NOTEBOOKS.glob("*.py"))]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / path, tmp_path / path)
    (tmp_path / "tests").mkdir()
    return tmp_path


def new(world: Path, *args: str) -> int:
    return cli_main(["new", *args, "--root", str(world)])


def plan_table(world: Path) -> dict[str, list[str]]:
    """run_it_yourself.md's plan table: {notebook (first word of the first cell): its cells}."""
    text = (world / "book" / "run_it_yourself.md").read_text()
    rows = text[text.index(PLAN_TABLE):].split("\n\n")[0].splitlines()[2:]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return {c[0].split()[0]: c for c in cells}


def printed_plan(world: Path) -> dict[str, list[str]]:
    """`glauber-mlm plan --profile paper --worst-case`'s summary rows at the GPU rates of the table, by notebook."""
    works = plan.plan(known_notebooks(world / "notebooks"), "paper", notebooks_dir=world / "notebooks")
    table, _ = plan.summary_table(works, PLAN_TABLE_RATES["GPU"](), worst_case=True)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    return {row[0]: row for row in rows}


def snapshot(world: Path) -> dict[str, bytes]:
    return {str(p.relative_to(world)): p.read_bytes() for p in sorted(world.rglob("*")) if p.is_file()}


def test_new_exact_page_is_read_by_the_runner_and_entered_in_every_register(world, capsys):
    assert new(world, PROBE, "--exact-only") == 0
    out = capsys.readouterr().out
    src, test = world / "notebooks" / f"{PROBE}.py", world / "tests" / "test_nb_probe.py"
    assert src.is_file() and test.is_file() and f"notebooks/{PROBE}.py" in out
    assert len(src.read_text().splitlines()) <= 150
    # the runner reads its parameters and profiles without running it; it has no model parameter
    assert declared_parameters(src) == ["profile", "dtype", "scale", "output_dir"]
    assert set(declared_profiles(src)) == {"smoke", "cpu", "paper"} and not takes_model(src)
    assert set(accepted_parameters(src)) == {"profile", "dtype", "scale", "output_dir", "seed", "coupling", "sites",
                                              "temperature", "chains", "steps", "replicates"}
    assert declared_budgets(src)["replicates"] >= 30 and all(p["replicates"] >= 30 for p in declared_profiles(src).values())
    assert plan.plan([PROBE], "smoke", notebooks_dir=world / "notebooks")[PROBE][0].kind == "exact"
    assert "run.conclude(" in rules_source(src.read_text()) and src.read_text().rstrip().endswith("run.finish()")
    test_pages.test_every_result_page_opens_with_its_result_box_and_captions_every_figure(src)  # the book's, on it
    compile(test.read_text(), str(test), "exec")
    # the registers: toc, intro, rules record, plan table
    toc = re.findall(r"file: book/notebooks/(\S+)", (world / "_toc.yml").read_text())
    assert toc == known_notebooks(world / "notebooks") and yaml.safe_load((world / "_toc.yml").read_text())
    assert f'href="notebooks/{PROBE}.html#result-{FREE}"' in (world / "book" / "intro.md").read_text()
    record = json.loads((world / "notebooks" / "rules.json").read_text())
    assert stale_entry(PROBE, src, record[PROBE]) is None and not record[PROBE][0]["builds_committed"]
    assert {k: v for k, v in record.items() if k != PROBE} == json.loads((REPO / "notebooks" / "rules.json").read_text())
    typed, printed = plan_table(world), printed_plan(world)
    assert sorted(typed) == sorted(printed) and typed[PROBE][1] == "0"
    for name, row in typed.items():  # the rows, sentences and FLOPs `plan` prints (the table test's exact columns)
        assert (row[1], row[3], row[4]) == (printed[name][1], "" if printed[name][3] == "0" else printed[name][3],
                                            printed[name][5]), name


def test_new_model_page_takes_a_model_and_its_forwards_join_the_plan_table(world):
    before = plan_table(world)
    assert new(world, MODEL_PROBE, "--title", "Does the model's chain mix?") == 0
    src = world / "notebooks" / f"{MODEL_PROBE}.py"
    assert takes_model(src) and declared_profiles(src)["paper"]["model"] in plan.PUBLISHED_CONFIGS
    assert len(src.read_text().splitlines()) <= 150 and "# Does the model's chain mix?" in src.read_text()
    test_pages.test_every_result_page_opens_with_its_result_box_and_captions_every_figure(src)
    works = plan.plan([MODEL_PROBE], "paper", notebooks_dir=world / "notebooks")[MODEL_PROBE]
    mlm_rows = sum(w.rows for w in works if w.kind == "mlm")
    after = plan_table(world)
    assert after[MODEL_PROBE][1] == f"{mlm_rows:,}" and mlm_rows > 0
    total = lambda row: int(re.sub(r"\D", "", row[1]))  # noqa: E731
    assert total(after["**total**"]) == total(printed_plan(world)["**total**"]) >= total(before["**total**"])


@pytest.mark.parametrize("name, message", [
    ("9_probe", "'9_probe' is not a page name: write NN_topic"),
    (f"{FREE}_Probe", f"e.g. {PROBE}"),
    (f"{FREE} probe", "is not a page name"),
    ("08_exact_answers", "notebooks/08_exact_answers.py exists already: choose another topic, or the next number "
                         f"({FREE}_exact_answers)"),
    ("08_other", "page number 08 is taken by 08_exact_answers"),
])
def test_new_refuses_a_bad_or_taken_name_naming_the_fix_and_writes_nothing(world, capsys, name, message):
    before = snapshot(world)
    assert new(world, name) == 1
    assert message in capsys.readouterr().err
    assert snapshot(world) == before


def test_new_refuses_a_taken_test_file_and_a_folder_that_is_not_the_repository(world, tmp_path, capsys):
    (world / "tests" / "test_nb_probe.py").write_text("")
    before = snapshot(world)
    assert new(world, PROBE) == 1 and "test_nb_probe.py exists already" in capsys.readouterr().err
    assert snapshot(world) == before
    (tmp_path / "elsewhere").mkdir()
    assert cli_main(["new", PROBE, "--root", str(tmp_path / "elsewhere")]) == 1
    assert "is not the repository's layout" in capsys.readouterr().err


def test_model_does_not_apply_to_an_exact_page(world, capsys):
    assert new(world, PROBE, "--exact-only") == 0
    nb_dir = world / "notebooks"
    names = known_notebooks(nb_dir)
    assert model_pages(names, nb_dir, None) == names
    assert model_pages(names, nb_dir, "roberta-base") == [n for n in names if n != PROBE]
    assert f"{PROBE}: --model does not apply" in capsys.readouterr().out
    with pytest.raises(book.BookError, match=f"{PROBE} runs exact models only .*--model does not apply to it"):
        resolve_parameters(nb_dir / f"{PROBE}.py", {"model": "roberta-base"})
    # the plan of a book on another model plans the exact page at its own profile
    assert plan.plan([PROBE], "cpu", model="roberta-base", notebooks_dir=nb_dir)[PROBE][0].model == "Ising chain"


@pytest.mark.slow  # the page executes twice: here, and in the pytest its own test runs in
@pytest.mark.parametrize("name, kind", [(PROBE, ["--exact-only"]), (MODEL_PROBE, [])])
def test_a_page_written_by_new_runs_in_the_smoke_profile_and_passes_its_own_test(world, tmp_path, name, kind):
    """End to end: the page executes (papermill, smoke profile), its check is calibrated with 30 nulls and decides,
    its rules entry is current, and the test `new` wrote for it passes."""
    assert new(world, name, *kind) == 0
    out = execute(name, tmp_path / "run", notebooks_dir=world / "notebooks")
    checks = pd.read_csv(out / "checks.csv")
    assert len(checks) == 1 and checks.null_replicates.iloc[0] == 30 and checks.truth_replicates.iloc[0] == 30
    assert checks.false_pass_upper.iloc[0] <= 0.10 and checks.outcome.iloc[0] == checks.rule_says.iloc[0] == "pass"
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "smoke test, not a result" and result["checks_verdict"] == "passes"
    assert result["question"] == "book" and (out / "law.csv").is_file() and (out / "law.png").is_file()
    record = json.loads((world / "notebooks" / "rules.json").read_text())
    assert stale_entry(name, world / "notebooks" / f"{name}.py", record[name]) is None
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests"), "HF_HUB_OFFLINE": "1"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--rootdir", str(world), str(world / "tests" / f"test_nb_{name[3:]}.py")],
                         cwd=world, env=env, capture_output=True, text=True)
    assert ran.returncode == 0 and "3 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]


def test_the_generated_test_survives_an_edited_page(world):
    """Once a contributor renames the template's parameters, the generated test of the template's loops skips and
    says what to write instead of failing with a KeyError."""
    assert new(world, PROBE, "--exact-only") == 0
    src = world / "notebooks" / f"{PROBE}.py"
    src.write_text(re.sub(r"\bsites\b", "free_sites", src.read_text()))
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests"), "HF_HUB_OFFLINE": "1"}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--rootdir", str(world), "-k", "plan", str(world / "tests" / "test_nb_probe.py")],
                         cwd=world, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0 and "1 skipped" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "no longer has the template's parameters ['sites']" in ran.stdout


def test_a_stale_plan_row_is_flagged_and_refresh_rewrites_it(world, capsys):
    """After a page's work changes, `stale_plan_rows` names its row of the plan table, the build says so with the
    command, and `new --refresh-plan` rewrites it so that nothing is stale."""
    from glauber_mlm.book.command import _flag_stale_plan
    from glauber_mlm.book.new import REFRESH, stale_plan_rows

    assert new(world, MODEL_PROBE) == 0 and stale_plan_rows(world) == []
    src = world / "notebooks" / f"{MODEL_PROBE}.py"
    paper = 'passages="ms_marco", length=32, sites=6'
    assert paper in src.read_text()
    src.write_text(src.read_text().replace(paper, paper[:-1] + "7"))  # the paper profile's restricted chain, grown
    assert stale_plan_rows(world) == ["**total**", MODEL_PROBE]
    capsys.readouterr()
    _flag_stale_plan(world)
    flagged = capsys.readouterr().out
    assert f"plan table is stale for **total**, {MODEL_PROBE}" in flagged and REFRESH in flagged
    assert cli_main(["new", "--refresh-plan", "--root", str(world)]) == 0
    assert f"rewrote the plan table's rows of **total**, {MODEL_PROBE}" in capsys.readouterr().out
    assert stale_plan_rows(world) == []
    assert plan_table(world)[MODEL_PROBE][1] == printed_plan(world)[MODEL_PROBE][1]
