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
    assert new(world, "09_probe", "--exact-only") == 0
    out = capsys.readouterr().out
    src, test = world / "notebooks" / "09_probe.py", world / "tests" / "test_nb_probe.py"
    assert src.is_file() and test.is_file() and "notebooks/09_probe.py" in out
    assert len(src.read_text().splitlines()) <= 150
    # the runner reads its parameters and profiles without running it; it has no model parameter
    assert declared_parameters(src) == ["profile", "dtype", "scale", "output_dir"]
    assert set(declared_profiles(src)) == {"smoke", "cpu", "paper"} and not takes_model(src)
    assert set(accepted_parameters(src)) == {"profile", "dtype", "scale", "output_dir", "seed", "coupling", "sites",
                                              "temperature", "chains", "steps", "replicates"}
    assert declared_budgets(src)["replicates"] >= 30 and all(p["replicates"] >= 30 for p in declared_profiles(src).values())
    assert plan.plan(["09_probe"], "smoke", notebooks_dir=world / "notebooks")["09_probe"][0].kind == "exact"
    assert "run.conclude(" in rules_source(src.read_text()) and src.read_text().rstrip().endswith("run.finish()")
    test_pages.test_every_result_page_opens_with_its_result_box_and_captions_every_figure(src)  # the book's, on it
    compile(test.read_text(), str(test), "exec")
    # the registers: toc, intro, rules record, plan table
    toc = re.findall(r"file: book/notebooks/(\S+)", (world / "_toc.yml").read_text())
    assert toc == known_notebooks(world / "notebooks") and yaml.safe_load((world / "_toc.yml").read_text())
    assert 'href="notebooks/09_probe.html#result-09"' in (world / "book" / "intro.md").read_text()
    record = json.loads((world / "notebooks" / "rules.json").read_text())
    assert stale_entry("09_probe", src, record["09_probe"]) is None and not record["09_probe"][0]["builds_committed"]
    assert {k: v for k, v in record.items() if k != "09_probe"} == json.loads((REPO / "notebooks" / "rules.json").read_text())
    typed, printed = plan_table(world), printed_plan(world)
    assert sorted(typed) == sorted(printed) and typed["09_probe"][1] == "0"
    for name, row in typed.items():  # the rows, sentences and FLOPs `plan` prints (the table test's exact columns)
        assert (row[1], row[3], row[4]) == (printed[name][1], "" if printed[name][3] == "0" else printed[name][3],
                                            printed[name][5]), name


def test_new_model_page_takes_a_model_and_its_forwards_join_the_plan_table(world):
    before = plan_table(world)
    assert new(world, "09_model_probe", "--title", "Does the model's chain mix?") == 0
    src = world / "notebooks" / "09_model_probe.py"
    assert takes_model(src) and declared_profiles(src)["paper"]["model"] in plan.PUBLISHED_CONFIGS
    assert len(src.read_text().splitlines()) <= 150 and "# Does the model's chain mix?" in src.read_text()
    test_pages.test_every_result_page_opens_with_its_result_box_and_captions_every_figure(src)
    works = plan.plan(["09_model_probe"], "paper", notebooks_dir=world / "notebooks")["09_model_probe"]
    mlm_rows = sum(w.rows for w in works if w.kind == "mlm")
    after = plan_table(world)
    assert after["09_model_probe"][1] == f"{mlm_rows:,}" and mlm_rows > 0
    total = lambda row: int(re.sub(r"\D", "", row[1]))  # noqa: E731
    assert total(after["**total**"]) == total(printed_plan(world)["**total**"]) >= total(before["**total**"])


@pytest.mark.parametrize("name, message", [
    ("9_probe", "'9_probe' is not a page name: write NN_topic"),
    ("09_Probe", "e.g. 09_probe"),
    ("09 probe", "is not a page name"),
    ("08_exact_answers", "notebooks/08_exact_answers.py exists already: choose another topic, or the next number "
                         "(09_exact_answers)"),
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
    assert new(world, "09_probe") == 1 and "test_nb_probe.py exists already" in capsys.readouterr().err
    assert snapshot(world) == before
    (tmp_path / "elsewhere").mkdir()
    assert cli_main(["new", "09_probe", "--root", str(tmp_path / "elsewhere")]) == 1
    assert "is not the repository's layout" in capsys.readouterr().err


def test_model_does_not_apply_to_an_exact_page(world, capsys):
    assert new(world, "09_probe", "--exact-only") == 0
    nb_dir = world / "notebooks"
    names = known_notebooks(nb_dir)
    assert model_pages(names, nb_dir, None) == names
    assert model_pages(names, nb_dir, "roberta-base") == [n for n in names if n != "09_probe"]
    assert "09_probe: --model does not apply" in capsys.readouterr().out
    with pytest.raises(book.BookError, match="09_probe runs exact models only .*--model does not apply to it"):
        resolve_parameters(nb_dir / "09_probe.py", {"model": "roberta-base"})
    # the plan of a book on another model plans the exact page at its own profile
    assert plan.plan(["09_probe"], "cpu", model="roberta-base", notebooks_dir=nb_dir)["09_probe"][0].model == "Ising chain"


@pytest.mark.slow  # the page executes twice: here, and in the pytest its own test runs in
@pytest.mark.parametrize("name, kind", [("09_probe", ["--exact-only"]), ("09_model_probe", [])])
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
