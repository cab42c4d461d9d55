"""`glauber-mlm plan` against what the published pages took (issue 38, item 6): how far the plan's estimate is from
the measured wall time, page by page, on this machine.

For each page published in book/notebooks/ it reads the measured `wall_time_s` (and the profile, dtype and machine
that ran it) from its provenance.json, plans the same profile with rates calibrated here (`plan.calibrate`: a few
timed forwards of the embedded model and a few timed steps of exact models, as `glauber-mlm plan --calibrate`
does), and prints one Markdown row per page: the plan's time (MLM forwards, sentence embeddings and exact-model
steps; runs that stop when their pairs meet at the length their notebook expects, where it gives one), the exact
models' share of it, the measured time and their ratio. A ratio within [0.5, 2] is the issue's target. Not timed
by the plan: kernel starts, imports, statistics (bootstraps, fits), plotting, and 08's dense linear algebra.

    .venv/bin/python benchmarks/plan_vs_measured.py            # calibrates here, then prints the table
    .venv/bin/python benchmarks/plan_vs_measured.py --length 16
    .venv/bin/python benchmarks/plan_vs_measured.py --notebooks /tmp/edited   # plan cells edited there, not applied
    .venv/bin/python benchmarks/plan_vs_measured.py --worst-case              # every part at its bound

Calibrate on a quiet machine: the rates of a loaded CPU make every estimate long.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from glauber_mlm.book import plan
from glauber_mlm.book.parameters import NOTEBOOKS, REPO

PUBLISHED = REPO / "book" / "notebooks"


def measured() -> dict[str, dict]:
    """{page: its provenance} for every published page."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(PUBLISHED.glob("*/provenance.json"))}


def rows(pages: dict[str, dict], rates: plan.Rates, notebooks: Path = NOTEBOOKS, worst_case: bool = False
         ) -> list[list[str]]:
    """One row per page: planned time, its exact-model share, measured time, their ratio and the rows timed."""
    out = []
    for name, prov in pages.items():
        works = plan.plan([name], prov["profile"], scale=float(prov.get("scale") or 1.0), notebooks_dir=notebooks)[name]
        planned = sum(plan.seconds(w, rates, worst_case) or 0.0 for w in works)
        exact = sum(plan.seconds(w, rates, worst_case) or 0.0 for w in works if w.kind == "exact")
        timed = {kind: sum(plan.timed_work(w, worst_case)[0] for w in works if w.kind == kind)
                 for kind in ("mlm", "embedder", "exact")}
        wall = float(prov["wall_time_s"])
        out.append([name, prov["profile"], str(prov.get("forward_dtype") or prov.get("dtype")), plan.duration(planned),
                    plan.duration(exact), plan.duration(wall), f"{wall / planned:.2f}" if planned else "–",
                    f"{timed['mlm']:,}", f"{timed['embedder']:,}", f"{timed['exact']:,}"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--length", type=int, default=32, help="tokens per chain of the calibration [32]")
    ap.add_argument("--notebooks", type=Path, default=NOTEBOOKS,
                    help="the folder whose notebooks' plan cells are read [notebooks/]: try an edit before applying it")
    ap.add_argument("--worst-case", action="store_true", help="time every part at its bound, as `plan --worst-case`")
    args = ap.parse_args(argv)
    rates = plan.calibrate(None, args.length)
    print(f"rates: {rates.source}; load average {os.getloadavg()[0]:.2f} when calibrated"
          + (f"; plan cells read from {args.notebooks}" if args.notebooks != NOTEBOOKS else "")
          + ("; every part at its bound" if args.worst_case else "") + "\n")
    header = ["page", "profile", "dtype", "plan", "of which exact models", "measured", "measured / plan",
              "MLM rows timed", "sentences timed", "exact-model rows timed"]
    print(plan._table(header, rows(measured(), rates, args.notebooks, args.worst_case)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
