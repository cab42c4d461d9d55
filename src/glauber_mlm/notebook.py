"""What every result notebook shares: profiles with explicit overrides, provenance, saved tables and figures.

A notebook declares `PROFILES = {"smoke": {...}, "cpu": {...}, "paper": {...}}` and calls
`run = Run("02_high_temperature_mixing", profile, PROFILES, output_dir, model=model, ...)`:
every keyword that is not None overrides the profile. Tables go to CSV, figures to PNG, and
`run.finish()` writes provenance.json (model, profile, parameters, device, versions, commit, wall time).
"""
from __future__ import annotations

import json
import math
import numbers
import platform
import subprocess
import time
from importlib.metadata import version
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> str:
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} CPU threads"


def _finite_positive(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v) and v > 0


class Run:
    """Resolved parameters of one notebook run, and where its numbers and figures are saved."""

    def __init__(self, name: str, profile: str, profiles: dict[str, dict], output_dir: str | Path | None = None, **overrides):
        if profile not in profiles:
            raise ValueError(f"unknown profile {profile!r}: choose one of {sorted(profiles)} (smoke for tests, cpu offline, paper on a GPU).")
        unknown = set(overrides) - set(profiles[profile])
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)} for {name}: known ones are {sorted(profiles[profile])}.")
        self.name, self.profile = name, profile
        self.params = {**profiles[profile], **{k: v for k, v in overrides.items() if v is not None}}
        self.out = Path(output_dir or Path("results") / name)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = self.params.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        self.started = time.time()
        torch.manual_seed(self.params.get("seed", 0))

    def __getitem__(self, key: str):
        return self.params[key]

    def integer(self, key: str, low: int, high: int | None = None) -> int:
        """The parameter ``key`` as an int in [low, high]; a clear error otherwise."""
        v = self.params[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low or (high is not None and v > high):
            upper = f" and ≤ {high}" if high is not None else ""
            raise ValueError(f"{key} must be an integer ≥ {low}{upper}, got {v!r}.")
        return int(v)

    def positive(self, key: str) -> float:
        """The parameter ``key`` as a finite float > 0 (a temperature, a coupling strength)."""
        v = self.params[key]
        if not _finite_positive(v):
            raise ValueError(f"{key} must be a finite number > 0, got {v!r}.")
        return float(v)

    def temperatures(self, key: str, at_least: int = 1) -> list[float]:
        """The parameter ``key`` as a list of at least ``at_least`` finite temperatures > 0, in the given order."""
        v = self.params[key]
        if not isinstance(v, (list, tuple)) or len(v) < at_least or not all(_finite_positive(t) for t in v):
            raise ValueError(f"{key} must be a list of at least {at_least} finite temperatures > 0, got {v!r}.")
        return [float(t) for t in v]

    def provenance(self) -> dict:
        return {
            "notebook": self.name, "profile": self.profile, "parameters": self.params, "device": self.device,
            "machine": machine(), "commit": git_commit(), "wall_time_s": round(time.time() - self.started, 1),
            "versions": {p: version(p) for p in ("glauber-mlm", "torch", "transformers", "numpy")},
            "python": platform.python_version(),
        }

    def show(self) -> None:
        """Print the provenance so that every executed notebook says what produced it."""
        for key, value in self.provenance().items():
            print(f"{key:>12}: {value}")

    def save_table(self, df, name: str):
        df.to_csv(self.out / f"{name}.csv", index=False)
        return df

    def save_figure(self, fig, name: str) -> None:
        fig.savefig(self.out / f"{name}.png", dpi=130, bbox_inches="tight")

    def finish(self) -> dict:
        info = self.provenance()
        (self.out / "provenance.json").write_text(json.dumps(info, indent=2, default=str))
        self.show()
        return info
