"""The CI workflow, checked offline: every command it runs exists, and the GPU job plans, caches and resumes."""
from __future__ import annotations

import re

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
