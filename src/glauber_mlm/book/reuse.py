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


def machine_dtype(device: str | None = None) -> str:
    """The forward dtype a run here uses by default ('bfloat16' where the device runs it natively, else 'float32')."""
    import torch

    from ..hf import default_device, forward_dtype

    return str(forward_dtype(torch.device(device) if device else default_device())).removeprefix("torch.")


def built_by(published: Path) -> dict[str, str]:
    """The machine, forward dtype and commit that produced the published notebook `published` (its provenance)."""
    try:
        prov = read_provenance(Path(published).with_suffix(""))
    except (OSError, ValueError):
        prov = {}
    return {key: str(prov.get(key) or "unknown") for key in ("machine", "forward_dtype", "commit")}


def reused_line(published: Path, here: str) -> str:
    """'reused (its inputs are unchanged), built in bfloat16 on <machine> at commit abc123' for a page run whose dtype
    is `here` now, saying so when this machine would run another dtype."""
    by = built_by(published)
    line = f"reused (its inputs are unchanged), built in {by['forward_dtype']} on {by['machine']} at commit {by['commit']}"
    if by["forward_dtype"] != here:
        line += f"; this machine runs {here}, which gives other numbers"
    return line


def estimate(names: list[str], profile: str, model: str | None, scale: float, notebooks_dir: Path) -> str:
    """The plan's time for `names` on this machine ('about 1.6 h here (glauber-mlm plan --calibrate)'), calibrated
    here (a few seconds); notebooks the plan has no counting rule for are left out, and an estimate that cannot be
    made says why."""
    from . import plan

    counted = [name for name in names if name in plan.COUNTERS]
    if not counted:
        return "no time estimate: the plan counts none of these notebooks"
    try:
        works = plan.plan(counted, profile, model, notebooks_dir=notebooks_dir, scale=scale)
        rates = plan.calibrate(None, 32)
    except (ValueError, OSError) as err:
        return f"no time estimate ({err})"
    seconds = sum(plan.seconds(work, rates) or 0.0 for works_of in works.values() for work in works_of)
    left_out = sorted(set(names) - set(counted))
    return (f"about {plan.duration(seconds)} on this machine for {len(counted)} page(s) (glauber-mlm plan --calibrate"
            f"{' --profile ' + profile if profile != 'cpu' else ''})"
            + (f"; not counted: {', '.join(left_out)}" if left_out else ""))


def advice(reused: list[str], root: Path, here: str, profile: str, model: str | None, scale: float,
           notebooks_dir: Path) -> str:
    """What a build that reused `reused` says at its end: how many were built elsewhere or in another dtype, and
    how to re-execute them here, with the plan's time."""
    published = Path(root) / "book" / "notebooks"
    other = [name for name in reused if built_by(published / f"{name}.ipynb")["forward_dtype"] != here]
    lines = [f"{len(reused)} page(s) reused as published (their code, parameters, data and models are unchanged)"
             + (f"; {len(other)} of them were built in another dtype than this machine's {here}" if other else "")
             + ":",
             "  to re-execute them here and compare their tables with the published ones: make verify",
             "  to re-execute and publish them here: make book FORCE=1 (or glauber-mlm book --force; --dtype "
             "float32|bfloat16 sets the dtype)",
             f"  {estimate(reused, profile, model, scale, notebooks_dir)}"]
    return "\n".join(lines)
