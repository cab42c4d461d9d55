"""What every result notebook shares: profiles with explicit overrides, provenance, saved tables and figures.

A notebook declares its parameters once, `PROFILES = {"smoke": {...}, "cpu": {...}, "paper": {...}}`, and calls
`run = Run("02_high_temperature_mixing", profile, PROFILES, output_dir, scale=scale, dtype=dtype, budgets=BUDGETS,
overrides=globals())`: each profile key that papermill injected as a variable (`-p KEY VALUE`) and is not None
overrides the profile (a notebook that rebinds such a name later reads it again when its set-up cell is re-run by
hand in the same kernel). It loads its models with `run.load_mlm(name)`, in the run's
forward dtype (`dtype`: None for the device's default, `hf.forward_dtype`), so that the run knows the dtype each
model runs in after any fallback. Tables go to CSV, figures to PNG, and `run.finish()` writes provenance.json
(`contract.write_provenance`: model, profile, parameters, device, the dtype asked for and the one the models ran
in, machine and CPU class, versions, commit, wall time, and the run id that ties it to its executed page).
`run.conclude(claim, key_numbers, checks)` makes the page's result box and checks.csv (see `verdict.py`, `checks.py`).
`run.rules_history()`, in a page's last cell, shows how its rules came to be (`history.py`).
`run.upstream_table(NAME, TABLE)` reads another notebook's published table (a read `contract.READS` declares) only
when its provenance matches this run's model, profile, scale and forward dtype.

A dry run: `Run(..., scale=S, budgets=BUDGETS)` with 0 < S ≤ 1 multiplies the profile's budgets (the integer
entries a notebook names in its `BUDGETS = {name: least value}`: steps, pairs, chains, contexts …) by S, rounded
up and never below their least value; temperatures, lengths, grids, models and thresholds stay as in the profile,
so the code path is the full run's. Its provenance, build line and result box say "dry run at scale S".
"""
from __future__ import annotations

import json
import math
import numbers
import platform
import subprocess
import time
import types
import uuid
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

import torch

from .. import contract

REPO = Path(__file__).resolve().parents[3]


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """'NVIDIA H200 (CUDA)' or 'AMD EPYC (no native bf16), 2 CPU threads': where the chains ran, and its class."""
    from ..models.hf import fast_bf16

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    bf16 = "native bf16" if fast_bf16(torch.device("cpu")) else "no native bf16"
    return f"{cpu_name()} ({bf16}), {torch.get_num_threads()} CPU threads"


SMOKE_PROFILE = "smoke"  # the tests' profile: its pages say "smoke test, not a result" in place of a verdict


def profile_models(profiles: dict[str, dict]) -> set[str]:
    """Every model (`model`, `models`) a notebook's profiles name: models the book runs this page on."""
    named = set()
    for profile in profiles.values():
        for key in ("model", "models"):
            value = profile.get(key)
            named.update(str(m) for m in (value if isinstance(value, (list, tuple)) else [value]) if m is not None)
    return named


def known_model(model, named: set[str]) -> bool:
    """Whether the book knows `model`: the embedded default (None), an embedded model by its bare name (a folder of
    `hf.EMBEDDED_MODELS`), or a model one of the page's profiles names (`named`, see `profile_models`). A path, even to
    an embedded model's folder, and any other hub name are the user's: the book cannot vouch for what they hold."""
    from ..models.hf import EMBEDDED_MODELS

    if model is None or str(model) in named:
        return True
    name = str(model)
    return not any(sep in name for sep in "/\\") and name not in (".", "..") and (EMBEDDED_MODELS / name).is_dir()


SHARPNESS_PASSAGES, SHARPNESS_LENGTH = 32, 16  # the passages (of that many tokens) an unknown model is measured on


def book_passages() -> list[str]:
    """The texts of the book's embedded passages (`passages.load_passages('embedded')`), where `sharpness` is measured."""
    from ..models.passages import load_passages

    return [row["text"] for row in load_passages("embedded")]


def _deciding(check) -> dict:
    """The check a verdict rests on, for result.json: its sentence, value, outcome, the rule that decided it or why it
    does not decide, power and size, and their one-sided 95 % upper error bounds (None: uncalibrated)."""
    c = check.calibration
    return dict(check=check.check, value=check.value, outcome=check.outcome, core=check.core, reason=check.reason,
                power=float(c.power) if c else None, size=float(c.size) if c else None,
                false_pass_upper=float(c.false_pass_upper) if c else None,
                false_fail_upper=float(c.false_fail_upper) if c else None, to_decide=check.to_decide,
                decide_with=dict(check.decide_with) if check.deciding_parameters else None)


def _finite_positive(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v) and v > 0


def check_scale(scale) -> float:
    """`scale` as a float in (0, 1]: the share of the profile's budgets a dry run keeps."""
    if not _finite_positive(scale) or scale > 1:
        raise ValueError(f"scale must be a number in (0, 1] (1: the profile as it is; 0.01: a dry run with 1 % of "
                         f"its budgets), got {scale!r}.")
    return float(scale)


def scaled_profile(profile: dict, budgets: dict[str, int], scale: float) -> dict:
    """`profile` with each budget multiplied by `scale`, rounded up and at least its least value in `budgets` (but
    never above the profile's value: a small profile's budget below the least stays as it is).

    Only the entries named in `budgets` change (a None budget, meaning "all", stays None); temperatures, lengths,
    grids, models and thresholds are the profile's, so a dry run takes the same code path as the full run."""
    scale = check_scale(scale)
    if scale < 1 and not budgets:
        raise ValueError("this notebook declares no BUDGETS, so it cannot be scaled: run it with scale = 1.")
    scaled = dict(profile)
    for key, least in budgets.items():
        if key not in profile:
            raise ValueError(f"BUDGETS names {key!r}, which the profile does not hold: its entries are {sorted(profile)}.")
        value = profile[key]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"budget {key!r} must be a whole number in the profile (a count of steps, pairs, "
                             f"chains …), got {value!r}: only such entries can be scaled.")
        scaled[key] = min(value, max(int(least), math.ceil(value * scale)))  # never above the profile's own value
    return scaled


def namespace_overrides(name: str, profile: dict, namespace: Mapping[str, object]) -> dict:
    """The values `namespace` binds to keys of `profile`: the parameters papermill injected into a notebook.
    A key bound to a module, class or function is a name clash, refused (rename the import or the key)."""
    taken = {key: namespace[key] for key in profile if key in namespace}
    clashes = sorted(k for k, v in taken.items() if isinstance(v, (types.ModuleType, type)) or callable(v))
    if clashes:
        raise ValueError(f"{name}: {', '.join(clashes)} names both a parameter (a PROFILES key) and a module, class or "
                         "function of the notebook: rename one of them.")
    return taken


class Run:
    """Resolved parameters of one notebook run, and where its numbers and figures are saved."""

    def __init__(self, name: str, profile: str, profiles: dict[str, dict], output_dir: str | Path | None = None, *,
                 scale: float = 1.0, dtype: str | None = None, budgets: dict[str, int] | None = None,
                 overrides: Mapping[str, object] | None = None, **given):
        """`overrides`: the notebook's namespace (`globals()`), from which each key of the chosen profile that is
        bound there (papermill injects `-p KEY VALUE` as a variable) overrides the profile; `given`: explicit
        keyword overrides. A None keeps the profile's value."""
        if profile not in profiles:
            raise ValueError(f"unknown profile {profile!r}: choose one of {sorted(profiles)} (smoke for tests, cpu offline, paper on a GPU).")
        overrides = {**namespace_overrides(name, profiles[profile], overrides or {}), **given}
        unknown = set(overrides) - set(profiles[profile])
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)} for {name}: known ones are {sorted(profiles[profile])}.")
        self.name, self.profile, self.scale = name, profile, check_scale(scale)
        self.profile_models = profile_models(profiles)  # the models the book knows for this page (`unknown_models`)
        self.requested_dtype = contract.check_dtype_name(dtype)  # None: the device's default
        # the scale applies to the profile's budgets; an explicit parameter is taken as given
        base = scaled_profile(profiles[profile], budgets or {}, self.scale)
        self.params = {**base, **{k: v for k, v in overrides.items() if v is not None}}
        self.out = Path(output_dir or Path("results") / name)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = self.params.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        from ..models.hf import forward_dtype

        self.dtype = forward_dtype(torch.device(self.device), self.requested_dtype)  # what `load_mlm` is asked for
        self.loaded: dict[str, str] = {}  # model name -> the dtype it runs in once loaded (after any fallback)
        self.near_uniform: list[str] = []  # the warning of each loaded model whose conditionals are near uniform
        # `glauber-mlm run/book` passes the id it stamps on the executed page; an interactive run makes its own
        self.run_id = contract.run_id() or uuid.uuid4().hex[:16]
        self.started = time.time()
        torch.manual_seed(self.params.get("seed", 0))
        from .plots import use_book_style

        use_book_style()

    def __getitem__(self, key: str):
        return self.params[key]

    def seed_for(self, name: str, n=0, s: int = 0):
        """The seed of the named draw `name` at (n, s) of this run: `rng.stream(run["seed"], name, n, s)`."""
        from ..rng import stream

        return stream(self.params["seed"], name, n, s)

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

    def load_mlm(self, name_or_path: str | Path | None = None, **kwargs):
        """`hf.load_mlm` on this run's device in its forward dtype, the dtype it loaded in (after any fallback to
        fp32) recorded for the provenance and the build line."""
        from ..models.hf import load_mlm

        mlm = load_mlm(name_or_path, device=self.device, dtype=self.dtype, **kwargs)
        self.loaded[mlm.name] = str(mlm.dtype).removeprefix("torch.")
        if not known_model(name_or_path, self.profile_models):
            self.check_sharpness(mlm)
        return mlm

    def check_sharpness(self, mlm) -> None:
        """Measure a model the book does not know on the book's passages (`sharpness.sharpness`: the first
        `SHARPNESS_PASSAGES` with `SHARPNESS_LENGTH` supported tokens): near uniform, its warning is printed and kept
        for the result box (`conclude`)."""
        from ..sharpness import sharpness

        states, _ = mlm.encode(book_passages(), min(SHARPNESS_LENGTH, mlm.max_length))
        if len(states) == 0:
            print(f"note: none of the book's passages has {SHARPNESS_LENGTH} tokens in {mlm.name}'s support, so "
                  "whether its conditionals are near uniform was not measured")
            return
        warning = sharpness(mlm, states[:SHARPNESS_PASSAGES]).warning(mlm.name)
        if warning:
            print(f"warning: {warning}", flush=True)
            self.near_uniform.append(warning)

    def forward_dtype(self) -> str:
        """The chains' forward dtype: the one every model loaded by `load_mlm` runs in ('float32 (deberta-base),
        bfloat16 (roberta-base)' when they differ); before any is loaded, the one they are asked for."""
        dtypes = set(self.loaded.values())
        if len(dtypes) > 1:
            return ", ".join(f"{dtype} ({name})" for name, dtype in sorted(self.loaded.items()))
        return dtypes.pop() if dtypes else str(self.dtype).removeprefix("torch.")

    def provenance(self) -> dict:
        return {
            "notebook": self.name, "profile": self.profile, "scale": self.scale, "parameters": self.params, "device": self.device,
            "dtype": self.requested_dtype, "forward_dtype": self.forward_dtype(), "machine": machine(), "run_id": self.run_id, "commit": git_commit(), "wall_time_s": round(time.time() - self.started, 1),
            "versions": {p: version(p) for p in ("glauber-mlm", "torch", "transformers", "numpy")},
            "python": platform.python_version(),
        }

    def show(self) -> None:
        """Print the provenance so that every executed notebook says what produced it."""
        for key, value in self.provenance().items():
            print(f"{key:>12}: {value}")

    def upstream_table(self, notebook: str, table: str):
        """(DataFrame, source) for `notebook`'s published `table`, or (None, why not) when it must not be used.

        The read must be declared in `contract.READS` (a ValueError otherwise), and the other page's seal must hold (a
        ValueError naming what changed and the fix: a table edited after it was published is never read). The table is used only when the other
        notebook's provenance is complete and names the same profile, scale and forward dtype as this run, and this
        run's model among its models: a smoke table never feeds a cpu page, a dry run never a full one, nor one
        model's table another's (a table with a `model` column holds several models' rows: the caller keeps its own).
        The published results folder is `contract.results_folder()` (set by `glauber-mlm run/book`), else this run's
        parent.
        """
        import pandas as pd

        contract.check_read(self.name, notebook, table)
        folder = (contract.results_folder() or self.out.resolve().parent) / notebook
        path = folder / f"{table}.csv"
        if not path.is_file() or not (folder / contract.PROVENANCE).is_file():
            return None, f"{notebook} has no published {table}.csv with its provenance"
        try:
            prov = contract.read_provenance(folder)
        except ValueError:
            return None, f"{notebook}'s provenance.json is not valid JSON"
        changed = contract.broken_seal(folder.parent / f"{notebook}.ipynb", folder, prov)
        if changed:
            raise ValueError(f"{notebook}'s published page is not as it was published ({'; '.join(changed)}), so "
                             f"{self.name} does not read its {table}.csv: {contract.reexecute(folder)}.")
        mine = {"profile": self.profile, "scale": self.scale, "forward dtype": self.forward_dtype()}
        theirs = {"profile": prov.get("profile"), "scale": prov.get("scale", 1.0), "forward dtype": prov.get("forward_dtype")}
        differ = [f"{k} {theirs[k]!r} ≠ {mine[k]!r}" for k in mine if theirs[k] != mine[k]]
        params = prov.get("parameters", {})
        their_models = params["models"] if "models" in params else [params.get("model")]
        if self.params.get("model") not in their_models:
            differ.append(f"models {their_models!r} lack {self.params.get('model')!r}")
        if differ:
            return None, f"{notebook}'s published run differs from this one ({', '.join(differ)})"
        return pd.read_csv(path), f"{notebook}/{table}.csv, run {prov.get('run_id', '?')}"

    def checkpoint(self, label: str) -> Path | None:
        """Where a long call saves its progress (`glauber(..., checkpoint=run.checkpoint("chains"))`).

        Under `glauber-mlm run/book` it is `<root>/_build/checkpoints/NAME/<inputs key>/LABEL.pt`, kept until the run
        is published, so that a killed or interrupted run resumes where it stopped; run interactively, None (no
        checkpoint)."""
        folder = contract.checkpoints_folder()
        if folder is None:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{label}.pt"

    def save_table(self, df, name: str):
        df.to_csv(self.out / f"{name}.csv", index=False)
        return df

    def save_figure(self, fig, name: str) -> None:
        """Save `fig` as NAME.png at the book's resolution, its log axes labelled in plain numbers.

        The PNG is also glued as `fig:NAME` (myst-nb), so the page shows it in a numbered `{glue:figure}` with its
        caption and alt text; in a book run (`glauber-mlm run/book`) the figure is closed so that it is not shown
        a second time below its cell. Run interactively, the figure shows below its cell as usual.
        """
        import matplotlib.pyplot as plt

        from .plots import DPI, plain_log_ticks

        plain_log_ticks(fig)
        path = self.out / f"{name}.png"
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        try:
            from IPython.display import Image
            from myst_nb import glue
        except ImportError:
            return
        glue(f"fig:{name}", Image(filename=str(path)), display=False)
        if contract.run_id():
            plt.close(fig)

    @property
    def dry_run(self) -> str | None:
        """'dry run at scale S' when the budgets were scaled down (S < 1), else None."""
        return f"dry run at scale {self.scale:g}" if self.scale < 1 else None

    def build(self) -> str:
        """This build in one line: profile (and scale of a dry run), model(s), the chains' forward dtype, the machine."""
        models = self.params.get("model", self.params.get("models"))
        models = models if isinstance(models, (list, tuple)) else [models]
        names = ", ".join(str(m or "the embedded minilm-mlm") for m in models)
        profile = f"`{self.profile}` profile" + (f", **{self.dry_run}** (budgets × {self.scale:g})" if self.dry_run else "")
        return f"{profile} · model {names} · {self.forward_dtype()} forward · {machine()}"

    def conclude(self, claim: str, key_numbers: dict[str, str], checks: list, question: str = "paper",
                 not_shown: str = "", paper: str = "") -> None:
        """The page's result box: glued as `result` (shown at the top of the page), saved as result.json, and its
        checks as checks.csv.

        `key_numbers` are this run's key numbers, already formatted with their intervals; `checks` are the page's
        pre-stated `checks.Check`s with their calibrations; `question` is "paper" for a claim of the paper, "book"
        for the book's own question; `not_shown` says what this build does not show; `paper` what the paper reports
        for the claim (its value, model and scale; "" for the book's own questions), shown in the box and on the
        intro's dashboard beside this build's deciding check. A dry run's verdict is
        "dry run at scale S", a smoke run's "smoke test, not a result" (its checks' verdict is kept as
        `checks_verdict`), never a result; a run on models this book does not know (`unknown_models`) says so, and
        its word counts its checks (`verdict.shown_word`).
        """
        from IPython.display import Markdown

        from .checks import table
        from .verdict import box_markdown, judge, shown_word

        verdict = judge(checks, question)
        smoke, unknown = self.profile == SMOKE_PROFILE, self.unknown_models()
        text = box_markdown(claim, self.build(), key_numbers, checks, verdict, dry_run=self.dry_run, not_shown=not_shown,
                            paper=paper, smoke=smoke, unknown=unknown, where=self.scope(),
                            provenance=self.provenance_of_rules())
        text += "".join(f"\n\n**Warning:** {warning}" for warning in self.near_uniform)
        rules = self.rules_in_force()
        if rules:
            text += f"\n\n*Rules:* {rules}"
        self.save_table(table(checks), "checks")
        (self.out / "result.json").write_text(json.dumps(dict(
            notebook=self.name, verdict=shown_word(verdict, self.dry_run, smoke, unknown), checks_verdict=verdict.word,
            unknown_models=list(unknown), near_uniform=self.near_uniform,
            reason=verdict.reason, summary=verdict.summary, question=question, scale=self.scale, claim=claim,
            build=self.build(), numbers=key_numbers, checks={c.check: c.outcome for c in checks},
            deciding=_deciding(verdict.deciding), paper=paper, not_shown=not_shown), indent=2, ensure_ascii=False))
        try:
            from myst_nb import glue
        except ImportError:  # outside the book's environment: show the box where it is computed
            from IPython.display import display

            display(Markdown(text))
        else:
            glue("result", Markdown(text), display=False)

    def unknown_models(self) -> tuple[str, ...]:
        """The models this run loads that the book does not know (`known_model`), by name: a verdict claims nothing
        of the paper's result for them."""
        ran = self.params.get("model", self.params.get("models"))
        ran = ran if isinstance(ran, (list, tuple)) else [ran]
        return tuple(str(m) for m in ran if not known_model(m, self.profile_models))

    def _source(self) -> Path | None:
        """This page's notebook source in the repository, None outside it."""
        source = REPO / "notebooks" / f"{self.name}.py"
        return source if source.is_file() else None

    def scope(self) -> str:
        """What this run's verdict is about: 'on minilm-mlm at `cpu` scale' (`verdict.scope`)."""
        from .verdict import scope

        models = self.params.get("model", self.params.get("models"))
        models = models if isinstance(models, (list, tuple)) else [models]
        return scope([m or "minilm-mlm" for m in models], self.profile)

    def provenance_of_rules(self):
        """Whether this page's rules were stated before the run or revised after outcomes (`history.Provenance`);
        None outside the repository or for a page with no entry in the rules record."""
        from .history import page_provenance

        return page_provenance(self.name) if self._source() else None

    def rules_in_force(self) -> str:
        """For the result box: since when this page's rules hold (`history.rules_in_force`); "" outside the repository."""
        from .checks import rules_hash
        from .history import rules_in_force

        source = self._source()
        return rules_in_force(self.name, rules_hash(source.read_text())) if source else ""

    def rules_history(self) -> None:
        """Show the section "How these rules came to be" (`history.rules_history`): the call a page makes in its last
        cell. Outside the repository it shows nothing."""
        from IPython.display import Markdown, display

        from .history import rules_history

        if self._source():
            display(Markdown(rules_history(self.name)))

    def finish(self) -> dict:
        """Write provenance.json (the page printed it already in its set-up cell; the execution page lists it too)."""
        info = self.provenance()
        contract.write_provenance(self.out, info)
        return info
