"""The contract between the runner (`glauber-mlm run/book`, `glauber_mlm.book`) and the notebooks it executes.

Everything both sides must agree on lives here, and only here:

- the environment the runner gives a notebook's kernel (`RUN_ID`, `RESULTS`, `CHECKPOINTS`), read through
  `run_id`, `results_folder` and `checkpoints_folder`, and the two a user may set (`CACHE`, `MS_MARCO`), read through
  `download_cache`, `ms_marco_file` and (for the cache key) `input_files`: the library reads the environment
  nowhere else;
- the forward dtypes a notebook's `dtype` parameter accepts (`FORWARD_DTYPES`; None: the device's default,
  `hf.forward_dtype`). The dtype is an ordinary notebook parameter: `book --dtype` passes it like `--scale`;
- the provenance a finished run writes beside its tables (`PROVENANCE`, its keys `REQUIRED`, `write_provenance`)
  and the runner checks before it publishes or reuses a page (`read_provenance`, `publish.problems`), and the
  result box it saves (`RESULT`, `read_result`);
- the files a run reads that are named by the environment (`INPUT_FILES`) and the rules record of the pages' checks
  (`RULES`, `read_rules`): both are inputs of the runner's cache key;
- which notebook reads which published tables (`READS`): the reader must run after its upstream, re-executes
  when the upstream's run or tables change (`upstream`), and reads them only while their page's seal holds;
- the seal of a published page (`page_files`, `broken_seal`; `publish.seal` writes it): the runner checks it before
  it reuses or shows a page, a notebook before it reads another page's table.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

RUN_ID = "GLAUBER_MLM_RUN_ID"            # the run id the runner stamps on the executed page; written to provenance.json
RESULTS = "GLAUBER_MLM_RESULTS"          # the published results folder, where a notebook reads another's tables
CHECKPOINTS = "GLAUBER_MLM_CHECKPOINTS"  # where a run's long calls save their progress (`Run.checkpoint`)
CACHE = "GLAUBER_MLM_CACHE"              # the download and hash cache of `glauber-mlm data/train`, outside git
MS_MARCO = "GLAUBER_MLM_MS_MARCO"        # a local copy of MS MARCO v2.1 validation, read instead of the hub

# the variables that name a file a run reads: its content is a cache input and is recorded in provenance
INPUT_FILES = (MS_MARCO,)

FORWARD_DTYPES = ("float32", "bfloat16")  # the `dtype` parameter's values; None: bf16 where native, else fp32

PROVENANCE = "provenance.json"
RESULT = "result.json"  # the result box a page saves (`Run.conclude`): at least its verdict
RULES = Path(__file__).resolve().parents[2] / "notebooks" / "rules.json"  # the dated rules record, by notebook
# the keys every provenance.json holds: `forward_dtype` is the dtype of the models as loaded (after any fallback),
# `machine` where the chains ran. `Run` also records `dtype`, the one asked for (None: the device's default), and
# `python`; pages published before `dtype` was a parameter lack it, so it is read with a default (None)
REQUIRED = ("notebook", "profile", "scale", "parameters", "forward_dtype", "device", "machine", "commit", "versions",
            "run_id", "wall_time_s")
# the types of each entry of a provenance.json that the runner reads (a bool is not a number here)
TYPES: dict[str, tuple[type, ...]] = {"notebook": (str,), "profile": (str,), "scale": (int, float),
                                      "parameters": (dict,), "versions": (dict,), "run_id": (str, type(None)),
                                      "wall_time_s": (int, float, type(None))}

# reader -> {upstream notebook: the tables it reads (`Run.upstream_table`)}
READS: dict[str, dict[str, tuple[str, ...]]] = {
    "05_influence_and_margin": {"02_high_temperature_mixing": ("phase_diagram", "scaling_fit", "scaling_times")},
}


def upstream(name: str) -> tuple[str, ...]:
    """The notebooks whose published tables `name` reads (`READS`), in order."""
    return tuple(READS.get(name, {}))


def check_read(reader: str, notebook: str, table: str) -> None:
    """Refuse a read of `notebook`'s `table` by `reader` that `READS` does not declare: undeclared, the runner would
    neither order the two runs nor re-execute the reader when the upstream changes."""
    if table not in READS.get(reader, {}).get(notebook, ()):
        raise ValueError(f"{reader} reads {notebook}'s table {table!r}, which glauber_mlm.contract.READS does not "
                         f"declare: add it there, so that the runner executes {notebook} first and re-executes "
                         f"{reader} when {notebook}'s run changes.")


def check_dtype_name(dtype) -> str | None:
    """A notebook's `dtype` parameter: None (the device's default) or one of `FORWARD_DTYPES`."""
    if dtype is not None and dtype not in FORWARD_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, FORWARD_DTYPES))}, or None for the device's "
                         f"default (bfloat16 where it runs natively, else float32); got {dtype!r}.")
    return dtype


def run_id() -> str | None:
    """The run id the runner passed to this kernel; None when the notebook runs interactively."""
    return os.environ.get(RUN_ID) or None


def results_folder() -> Path | None:
    """The published results folder the runner passed (where other notebooks' tables are); None interactively."""
    folder = os.environ.get(RESULTS)
    return Path(folder) if folder else None


def checkpoints_folder() -> Path | None:
    """Where the runner keeps this run's checkpoints; None interactively (no checkpoint)."""
    folder = os.environ.get(CHECKPOINTS)
    return Path(folder) if folder else None


def download_cache() -> Path:
    """The cache for downloads and file hashes: `$GLAUBER_MLM_CACHE`, else ~/.cache/glauber-mlm."""
    return Path(os.environ.get(CACHE) or Path.home() / ".cache" / "glauber-mlm")


def ms_marco_file() -> Path | None:
    """The local MS MARCO copy the user named in `$GLAUBER_MLM_MS_MARCO`; None: read it from the hub."""
    local = os.environ.get(MS_MARCO)
    return Path(local) if local else None


def input_files() -> dict[str, Path | None]:
    """{variable: the file it names, None when it is unset} for each variable of `INPUT_FILES`."""
    return {variable: Path(os.environ[variable]).expanduser() if os.environ.get(variable) else None
            for variable in INPUT_FILES}


def write_provenance(folder: Path, info: dict) -> Path:
    """Write `info` as `folder/provenance.json`; refused (ValueError) when it lacks a key of `REQUIRED`."""
    missing = [k for k in REQUIRED if k not in info]
    if missing:
        raise ValueError(f"provenance lacks {', '.join(missing)}: every run records {', '.join(REQUIRED)}.")
    path = Path(folder) / PROVENANCE
    path.write_text(json.dumps(info, indent=2, default=str))
    return path


class MalformedFile(ValueError):
    """A file the runner reads that is not what its writer writes; the message names the file and the fix."""


def _json(path: Path, fix: str):
    """The JSON value in `path`; OSError when it is missing, MalformedFile (naming `fix`) when it is not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise MalformedFile(f"{path} is not valid JSON ({err}): {fix}.") from None


def reexecute(folder: Path) -> str:
    """The fix for a published page whose results folder `folder` holds a malformed file."""
    return f"re-execute the page with glauber-mlm book --only {Path(folder).name} (or restore it with git checkout -- {folder})"


def _of_type(value, types: tuple[type, ...]) -> bool:
    """Whether `value` is one of `types`, a bool counting only where bool is named (JSON's true is no number)."""
    return bool in types if isinstance(value, bool) else isinstance(value, types)


def read_provenance(folder: Path) -> dict:
    """`folder/provenance.json` as a dict. OSError when it is missing; MalformedFile (a ValueError naming the file
    and the fix) when it is not valid JSON, not a JSON object, lacks a key of `REQUIRED`, or holds an entry of
    another type than `TYPES` gives (`"scale": "0.5"`)."""
    path = Path(folder) / PROVENANCE
    fix = reexecute(folder)
    info = _json(path, fix)
    if not isinstance(info, dict):
        raise MalformedFile(f"{path} holds a JSON {type(info).__name__}, not the object a run writes: {fix}.")
    missing = [k for k in REQUIRED if k not in info]
    if missing:
        raise MalformedFile(f"{path} lacks {', '.join(missing)}: {fix}.")
    wrong = [f"{k} is {info[k]!r}" for k, types in TYPES.items() if not _of_type(info[k], types)]
    if wrong:
        raise MalformedFile(f"{path} has entries of the wrong type ({'; '.join(wrong)}): {fix}.")
    return info


def read_result(folder: Path) -> dict:
    """`folder/result.json` (the page's result box) as a dict. OSError when it is missing; MalformedFile when it is
    not valid JSON, not a JSON object, or has no verdict (a string)."""
    path = Path(folder) / RESULT
    fix = reexecute(folder)
    result = _json(path, fix)
    if not isinstance(result, dict) or not isinstance(result.get("verdict"), str):
        raise MalformedFile(f"{path} is not a result box (a JSON object with a verdict string): {fix}.")
    return result


def read_rules(path: Path | None = None) -> dict[str, list[dict]]:
    """The rules record (`RULES`): {notebook: its dated entries}; {} when there is none. MalformedFile (naming the
    file and the fix) when it is not valid JSON or not an object of lists of dated entries (`_rules_entry`)."""
    path = Path(path or RULES)
    if not path.is_file():
        return {}
    fix = f"restore it with git checkout -- {path} (or fix the entry you edited)"
    record = _json(path, fix)
    if not isinstance(record, dict) or not all(isinstance(entries, list) and all(map(_rules_entry, entries))
                                                for entries in record.values()):
        raise MalformedFile(f"{path} is not a rules record (an object mapping each notebook to a list of entries, "
                            f"each with a date and a change): {fix}.")
    return record


def _rules_entry(entry) -> bool:
    """Whether `entry` is a dated entry of the rules record: an object with a `date` and a `change` (strings)."""
    return isinstance(entry, dict) and isinstance(entry.get("date"), str) and isinstance(entry.get("change"), str)


# ---------------------------------------------------------------- the seal of a published page (`publish.seal`)


def sha256_of(path: Path) -> str:
    """The sha256 of the file at `path`, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance_digest(prov: dict) -> str:
    """The sha256 of a provenance's entries other than its seal (its key order and layout aside)."""
    return hashlib.sha256(json.dumps({k: v for k, v in prov.items() if k != "seal"}, sort_keys=True).encode()).hexdigest()


def page_files(notebook: Path, results: Path) -> dict[str, Path]:
    """Every file of a page, by its name beside the notebook: 'NAME.ipynb', 'NAME/<path in the results folder>',
    provenance.json aside (it holds the seal)."""
    files = {notebook.name: notebook}
    for path in sorted(results.rglob("*")):
        rel = path.relative_to(results).as_posix()
        if path.is_file() and rel != PROVENANCE:
            files[f"{results.name}/{rel}"] = path
    return files


def broken_seal(notebook: Path, results: Path, prov: dict) -> list[str]:
    """What changed in a page since it was sealed ('NAME/rhat.csv was edited', '... was deleted', '... was added',
    'NAME/provenance.json was edited'); a page without a seal says so. [] when the seal holds."""
    sealed = prov.get("seal")
    if not isinstance(sealed, dict) or not isinstance(sealed.get("files"), dict):
        return [f"{results.name}/provenance.json has no seal (published before outputs were sealed, or the seal was "
                "removed), so its files cannot be trusted"]
    now = page_files(notebook, results)
    found = [f"{name} was deleted" for name in sorted(sealed["files"].keys() - now.keys())]
    found += [f"{name} was added" for name in sorted(now.keys() - sealed["files"].keys())]
    found += [f"{name} was edited" for name in sorted(now.keys() & sealed["files"].keys())
              if sha256_of(now[name]) != sealed["files"][name]]
    if sealed.get("provenance") != provenance_digest(prov):
        found.append(f"{results.name}/provenance.json was edited")
    return [f"{f} after it was published" for f in found]
