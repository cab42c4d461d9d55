"""What `glauber-mlm book` says about the pages it reuses: where and in which forward dtype each was built, and
what re-executing them on this machine would take.

The machine is not a cache input (`cache`): a fresh clone reuses the committed pages, whatever dtype its CPU runs
natively. Those pages' numbers are the building machine's, so the build names that machine and dtype for each
reused page and points to `make verify` (re-execute in a scratch folder and compare the tables) and
`make book FORCE=1` (re-execute and publish here), with the plan's estimate of their time here
(`plan.plan` with rates calibrated on this machine, `plan.calibrate`).
"""
from __future__ import annotations

from pathlib import Path

from ..contract import read_provenance
from . import plan


def machine_dtype(device: str | None = None) -> str:
    """The forward dtype a run here uses by default ('bfloat16' where the device runs it natively, else 'float32')."""
    import torch

    from ..models.hf import default_device, forward_dtype

    return str(forward_dtype(torch.device(device) if device else default_device())).removeprefix("torch.")


def built_by(published: Path) -> dict[str, str]:
    """The machine, forward dtype, commit and notebook time (seconds) that produced the published notebook
    `published`, from its provenance ('unknown' where it does not say)."""
    try:
        prov = read_provenance(Path(published).with_suffix(""))
    except (OSError, ValueError):
        prov = {}
    return {key: str(prov.get(key) or "unknown") for key in ("machine", "forward_dtype", "commit", "wall_time_s")}


def reused_line(published: Path, here: str) -> str:
    """'reused (its inputs are unchanged), built in bfloat16 on <machine> at commit abc123' for a page run whose dtype
    is `here` now, saying so when this machine would run another dtype."""
    by = built_by(published)
    line = f"reused (its inputs are unchanged), built in {by['forward_dtype']} on {by['machine']} at commit {by['commit']}"
    if by["forward_dtype"] != here:
        line += f"; this machine runs {here}, which gives other numbers"
    return line


def estimate(names: list[str], profile: str, model: str | None, scale: float, notebooks_dir: Path) -> str:
    """The plan's time for `names` on this machine ('about 1.6 h on this machine for 7 page(s) ...'), calibrated
    here (a few seconds): forwards and exact-model steps, coupled pairs at the length their notebook expects where it
    gives one, else their whole budget. Notebooks the plan has no counting rule for are left out, and an estimate
    that cannot be made says why."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # the calibration's model loading: not this build's progress
    counted = [name for name in names if plan.has_plan(name, notebooks_dir)]
    if not counted:
        return "no time estimate: the plan counts none of these notebooks"
    try:
        works = plan.plan(counted, profile, model, notebooks_dir=notebooks_dir, scale=scale)
        rates = plan.calibrate(model, 32)
    except (ValueError, OSError) as err:
        return f"no time estimate ({err})"
    seconds = sum(plan.notebook_seconds(works_of, rates) for works_of in works.values())
    left_out = sorted(set(names) - set(counted))
    return (f"the plan's time: about {plan.duration(seconds)} on this machine for {len(counted)} page(s) (forwards "
            f"and exact-model steps, coupled pairs at their expected length where the notebook gives one, else their "
            f"whole budget; glauber-mlm plan --calibrate"
            f"{' --profile ' + profile if profile != 'cpu' else ''})"
            + (f"; not counted: {', '.join(left_out)}" if left_out else ""))


def advice(reused: list[str], root: Path, here: str, profile: str, model: str | None, scale: float,
           notebooks_dir: Path) -> str:
    """What a build that reused `reused` says at its end: how many were built elsewhere or in another dtype, and
    how to re-execute them here, with the plan's time."""
    published = Path(root) / "book" / "notebooks"
    by = [built_by(published / f"{name}.ipynb") for name in reused]
    other = sum(b["forward_dtype"] != here for b in by)
    took = [float(b["wall_time_s"]) for b in by if b["wall_time_s"] != "unknown"]
    lines = [f"{len(reused)} page(s) reused as published (their code, parameters, data and models are unchanged)"
             + (f"; {other} of them were built in another dtype than this machine's {here}" if other else "")
             + (f"; their notebooks took {plan.duration(sum(took))} where they were built" if took else "") + ":",
             "  to re-execute them here and compare their tables with the published ones: make verify",
             "  to re-execute and publish them here: make book FORCE=1 (or glauber-mlm book --force; --dtype "
             "float32|bfloat16 --publish sets the dtype)",
             f"  {estimate(reused, profile, model, scale, notebooks_dir)}"]
    return "\n".join(lines)
