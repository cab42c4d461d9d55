"""The CI workflow, checked offline: every command it runs exists, and the GPU job plans, caches and resumes."""
from __future__ import annotations

import re
import tomllib

import yaml

from glauber_mlm.book.parameters import REPO
from glauber_mlm.cli import COMMANDS

WORKFLOW = REPO / ".github" / "workflows" / "book.yml"


def _jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]


def _scripts(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_every_command_the_workflow_runs_exists():
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))
    for name, job in _jobs().items():
        for script in _scripts(job):
            for sub in re.findall(r"glauber-mlm (\S+)", script):
                assert sub in COMMANDS, f"job {name} runs `glauber-mlm {sub}`, which the CLI does not have"
            for target in re.findall(r"^\s*make (\S+)", script, re.M):
                assert target in targets, f"job {name} runs `make {target}`, which the Makefile does not have"


def test_the_gpu_job_prints_the_plan_then_builds_and_keeps_its_checkpoints():
    paper = _jobs()["paper"]
    checkout = next(step for step in paper["steps"] if step.get("uses", "").startswith("actions/checkout"))
    assert checkout.get("with", {}).get("clean") is False  # _build/checkpoints survives a re-run of the job
    script = next(s for s in _scripts(paper) if "glauber-mlm book" in s)
    lines = [line.strip() for line in script.splitlines()]
    plan = next(k for k, line in enumerate(lines) if "glauber-mlm plan" in line)
    build = next(k for k, line in enumerate(lines) if "glauber-mlm book" in line)
    assert plan < build
    assert "--force" not in lines[build]  # the cache decides what re-executes
    assert lines[build].endswith('"${args[@]}"')  # the same arguments as the plan: profile, model, notebooks
    assert "args=(--profile paper)" in script


def test_the_jobs_run_what_the_readme_documents():
    readme = (REPO / "README.md").read_text()
    book = next(s for s in _scripts(_jobs()["paper"]) if "glauber-mlm book" in s)
    assert "make book PROFILE=paper" in readme and "args=(--profile paper)" in book
    assert "make test" in readme and any(s.strip() == "make test" for s in _scripts(_jobs()["smoke"]))


def test_ci_runs_the_slow_tests_after_make_test():
    """`make test` leaves out the tests marked slow; .ci/run, the push job and the README run them after it."""
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert '-m "not slow"' in options["addopts"] and any(m.startswith("slow:") for m in options["markers"])
    recipe = re.search(r"^test-slow:.*\n\t(.+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert "-m slow" in recipe and recipe.endswith("|| [ $$? -eq 5 ]")  # status 5: nothing marked slow
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    push = [s.strip() for s in _scripts(_jobs()["smoke"])]
    for commands in (ci, push):
        assert commands.index("make test") < commands.index("make test-slow")
    assert "make test-slow" in (REPO / "README.md").read_text()
