"""What an open check's deciding design would cost, on the machine that built its page: the design's parameters
(`Check.decide_with`, in checks.csv and result.json) priced by the page's own plan (`plan.planned_work`, the notebook's
cell tagged "plan") against the build's, scaled from the build's measured time:

    cost ≈ wall time of this build × (forward FLOPs of the plan at the design) / (forward FLOPs of the plan now)

A ratio of the page's own counts needs no calibration of the machine, and it is taken on the machine whose time it
scales. It assumes the page's time goes with its forward work, which holds for the pages whose open checks name a
design (model forwards dominate them); a design that changes exact-model work, which has no FLOPs, is not priced.
Read at build time, so that a price never costs a re-execution.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from . import plan
from .parameters import NOTEBOOKS


def counted_work(name: str, parameters: Mapping, notebooks_dir: Path = NOTEBOOKS) -> tuple[float, int]:
    """(forward FLOPs, exact-model rows) the page's plan times at these parameters: each part at its expected rows
    where it declares them, as `plan.seconds` times it (`plan.timed_work`)."""
    works = plan.planned_work(name, notebooks_dir)(dict(parameters))
    rows = [plan.timed_work(w)[0] for w in works]
    return (sum(plan.work_flops(w) * r / max(w.rows, 1) for w, r in zip(works, rows)),
            sum(r for w, r in zip(works, rows) if w.kind == "exact"))


def deciding_cost(name: str, page: Path, design: Mapping, notebooks_dir: Path = NOTEBOOKS) -> dict | None:
    """{'seconds', 'ratio', 'built_seconds'}: the deciding design's estimated time on the machine that built `page`
    (its provenance's wall time and parameters); None when the build's time or parameters are not recorded, the plan
    counts no forward work, or the design changes exact-model work (which the plan counts in rows, not FLOPs)."""
    try:
        provenance = json.loads((Path(page) / "provenance.json").read_text())
        built, parameters = float(provenance["wall_time_s"]), dict(provenance["parameters"])
        now, exact_now = counted_work(name, parameters, notebooks_dir)
        then, exact_then = counted_work(name, {**parameters, **design}, notebooks_dir)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not now > 0 or exact_then != exact_now:  # exact-model work has no FLOPs to scale by
        return None
    return dict(seconds=built * then / now, ratio=then / now, built_seconds=built)


def describe(cost: Mapping | None) -> str:
    """'about 16 min on the machine that built this page (1.9 × its 8.1 min, by the plan's forward work)', or ''."""
    if not cost:
        return ""
    return (f"about {plan.duration(cost['seconds'])} on the machine that built this page ({cost['ratio']:.1f} × its "
            f"{plan.duration(cost['built_seconds'])}, by the plan's forward work)")


def with_cost(name: str, page: Path, result: dict, notebooks_dir: Path = NOTEBOOKS) -> dict:
    """`result` (a page's result.json) with `deciding.cost` (`describe`) where its deciding check names a design."""
    deciding = result.get("deciding") or {}
    if deciding.get("outcome") != "inconclusive" or not deciding.get("decide_with"):
        return result
    cost = describe(deciding_cost(name, page, deciding["decide_with"], notebooks_dir))
    return {**result, "deciding": {**deciding, "cost": cost}} if cost else result
