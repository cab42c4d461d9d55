"""`glauber-mlm plan` against what the published pages took (issue 38, item 6): how far the plan's estimate is from
the measured wall time, page by page, on this machine.

For each page published in book/notebooks/ it reads the measured `wall_time_s` (and the profile, dtype and machine
that ran it) from its provenance.json, plans the same profile with rates calibrated here (`plan.calibrate`: a few
timed forwards of the embedded model, as `glauber-mlm plan --calibrate` does), and prints one Markdown row per page:
the plan's forward time (MLM rows only: exact models, sentence embeddings, kernel starts and plotting are not timed
by the plan), the measured time and their ratio. A ratio within [0.5, 2] is the issue's target; the rows say where
the plan falls outside it and why (the share of the page's planned rows that the plan cannot time).

    .venv/bin/python benchmarks/plan_vs_measured.py            # calibrates here, then prints the table
    .venv/bin/python benchmarks/plan_vs_measured.py --length 16

Calibrate on a quiet machine: the rates of a loaded CPU make every estimate long.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from glauber_mlm.book import plan
from glauber_mlm.book.parameters import REPO

PUBLISHED = REPO / "book" / "notebooks"


def measured() -> dict[str, dict]:
    """{page: its provenance} for every published page."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(PUBLISHED.glob("*/provenance.json"))}


def rows(pages: dict[str, dict], rates: plan.Rates) -> list[list[str]]:
    """One row per page: planned forward time, measured time, their ratio and the planned rows the plan cannot time."""
    out = []
    for name, prov in pages.items():
        works = plan.plan([name], prov["profile"], scale=float(prov.get("scale") or 1.0))[name]
        planned = sum(plan.seconds(w, rates) or 0.0 for w in works)
        untimed = sum(w.rows for w in works if w.kind != "mlm")
        timed = sum(w.rows for w in works if w.kind == "mlm")
        wall = float(prov["wall_time_s"])
        out.append([name, prov["profile"], str(prov.get("forward_dtype") or prov.get("dtype")), plan.duration(planned),
                    plan.duration(wall), f"{wall / planned:.2f}" if planned else "–",
                    f"{timed:,}", f"{untimed:,}"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--length", type=int, default=32, help="tokens per chain of the calibration [32]")
    args = ap.parse_args(argv)
    rates = plan.calibrate(None, args.length)
    print(f"rates: {rates.source}; load average {os.getloadavg()[0]:.2f} when calibrated\n")
    header = ["page", "profile", "dtype", "plan (forwards)", "measured", "measured / plan", "MLM rows",
              "rows not timed (exact, embedder)"]
    print(plan._table(header, rows(measured(), rates)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
