"""The execution cache: re-execute a notebook only when something its results depend on has changed.

The key of a run is the SHA-256 of eight inputs, each hashed on its own so that a stale page can say why:
- `notebook`: the notebook's Jupytext source;
- `parameters`: the parameters it is run with (profile and overrides, after `resolve_parameters`), the forward
  dtype among them when it is given (`book --dtype`); the profile always named (the notebook's default where none
  is given), so that `glauber-mlm run NAME` and `glauber-mlm book` key the same run alike;
- `library`: the library modules the notebook imports, transitively (`closure.closure`: a change to a module
  re-executes only the pages that run it); the whole package where an import cannot be resolved statically; the
  runner (`book/`, `cli.py`) never, as it decides what runs, not what it computes;
- `data`: `data/MANIFEST.json`, which holds the checksums of the embedded data and the embedded model;
- `files`: the files named by environment variables (`contract.INPUT_FILES`: `GLAUBER_MLM_MS_MARCO`), by content
  (`data.cached_sha256`: by path, size and mtime after the first time), an unset variable as "unset";
- `rules`: the notebook's entries in the rules record (`contract.RULES`), which its page quotes;
- `models`: for each model the run loads (a parameter given, else its profile's), the sha256 of its folder's config,
  tokenizer and weights: an embedded model (by name, or None for the default) as any local folder, so a damaged or
  retrained embedded model re-executes its pages; a hub name counts as itself;
- `upstream`: the run ids of the published notebooks whose tables it reads (`contract.READS`) and those tables'
  sha256, so that a page re-executes when the run it read from was replaced or a table it reads changed.
The machine is not an input: a page built elsewhere, in the dtype that machine ran natively (bf16 where native,
else fp32), is reused here; the book says which machine and dtype produced it (`command`), and `--dtype` or
`--force` re-executes it here.
`run_notebook` stamps the key into the executed notebook, and `provenance` (the inputs, which external files and
how many library modules) into its provenance.json; `glauber-mlm book` reuses a published page whose stamp equals
the key it would run with and whose seal holds (`publish.problems`), and re-executes the others (all with `--force`).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import contract
from ..contract import MalformedFile, input_files, read_provenance, read_rules, sha256_of
from .closure import closure, is_runner
from .errors import BookError
from .parameters import MODEL_KEYS, REPO, _default_profile, declared_profiles
from .publish import problems, stamp

LIBRARY = REPO / "src" / "glauber_mlm"
MANIFEST = REPO / "data" / "MANIFEST.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree(files: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.relative_to(base).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def library_files(src: Path, library: Path | None = None) -> tuple[list[Path], bool]:
    """The library modules a run of notebook `src` executes (`closure.closure`), and whether that closure was
    resolved; unresolved, every module of the package but the runner's."""
    library = library or LIBRARY
    files = closure(src, library)
    if files is not None:
        return files, True
    return [p for p in library.rglob("*.py") if not is_runner(library, p)], False


def library_digest(src: Path, library: Path | None = None) -> str:
    """One hash of the library modules notebook `src` runs (`library_files`): their paths and bytes."""
    library = library or LIBRARY
    return _tree(library_files(src, library)[0], library)


def input_file_digests() -> dict[str, str]:
    """{variable: the sha256 of the file it names} for each of `contract.INPUT_FILES`: "unset" when the variable is
    not set, "missing: PATH" when its file does not exist (the run will say so)."""
    from ..build.data import cached_sha256

    return {variable: "unset" if path is None else cached_sha256(path) if path.is_file() else f"missing: {path}"
            for variable, path in input_files().items()}


def rules_digest(name: str) -> str:
    """Hash of notebook `name`'s entries in the rules record (`contract.RULES`); a BookError names a malformed one."""
    try:
        return _sha(json.dumps(read_rules().get(name, []), sort_keys=True).encode())
    except MalformedFile as err:
        raise BookError(str(err)) from None


def models_digest(src: Path, params: dict) -> str:
    """Hash of the files of every local model folder a run of `src` with `params` loads (`hf.model_folder`: a folder,
    an embedded model's name, None for the embedded MLM), by their sha256 (`data.cached_sha256`: fast after the
    first time); hub names and the default embedder (None, a pinned package) as themselves."""
    from ..build.data import cached_sha256
    from ..models.hf import model_folder

    profile = (declared_profiles(src) or {}).get(params.get("profile") or _default_profile(src), {})
    h = hashlib.sha256()
    for key in MODEL_KEYS:
        if params.get(key) is None and key not in profile:
            continue  # a model this notebook never loads
        value = params[key] if params.get(key) is not None else profile[key]
        for ref in value if isinstance(value, list) else [value]:
            folder = None if key == "embedder" and ref is None else model_folder(ref)
            if folder is not None and folder.is_dir():
                files = sorted(p for p in folder.iterdir() if p.suffix in (".json", ".safetensors", ".txt", ".model"))
                h.update(json.dumps([[p.name, cached_sha256(p)] for p in files]).encode())
            else:
                h.update(json.dumps(ref).encode())
    return h.hexdigest()


def upstream_digest(name: str, results: Path) -> str:
    """Hash of what `name` reads from other notebooks (`contract.READS`), as published in `results`: each upstream's
    run id and the sha256 of each table it reads ("missing" where there is none)."""
    read = []
    for up, tables in contract.READS.get(name, {}).items():
        folder = Path(results) / up
        try:
            run = read_provenance(folder).get("run_id", "none")
        except (OSError, ValueError):
            run = "none"
        read.append([run, {table: sha256_of(folder / f"{table}.csv") if (folder / f"{table}.csv").is_file() else "missing"
                           for table in tables}])
    return _sha(json.dumps(read).encode())


def inputs(src: Path, params: dict, results: Path) -> dict[str, str]:
    """The hash of each input of a run of notebook `src` with `params`, publishing into `results` (see the module doc)."""
    shown = {k: v for k, v in params.items() if k != "output_dir"}
    if "profile" not in shown and _default_profile(Path(src)) is not None:
        shown["profile"] = _default_profile(Path(src))
    return {
        "notebook": _sha(Path(src).read_bytes()),
        "parameters": _sha(json.dumps(shown, sort_keys=True, default=str).encode()),
        "library": library_digest(src),
        "data": _sha(MANIFEST.read_bytes()) if MANIFEST.is_file() else "none",
        "files": _sha(json.dumps(input_file_digests(), sort_keys=True).encode()),
        "rules": rules_digest(Path(src).stem),
        "models": models_digest(src, params),
        "upstream": upstream_digest(Path(src).stem, results),
    }


def provenance(src: Path, parts: dict[str, str]) -> dict:
    """What the runner adds to a run's provenance.json: the cache key's `parts`, the external files by content
    (`input_file_digests`), and how many library modules the page's key covers (or that it covers the whole package)."""
    files, resolved = library_files(src)
    return {"inputs": parts, "input_files": input_file_digests(),
            "library_modules": len(files) if resolved else f"the whole package ({len(files)} modules)"}


def key(parts: dict[str, str]) -> str:
    return _sha(json.dumps(parts, sort_keys=True).encode())


def stale_reason(src: Path, params: dict, published: Path) -> str | None:
    """Why `published` (an executed notebook) must be re-executed for `src` with `params`; None when it can be reused."""
    published = Path(published)
    if not published.is_file():
        return "not executed yet"
    found = problems(published)
    if found:
        return "; ".join(found)
    stamped = stamp(published).get("inputs")
    if not isinstance(stamped, dict):
        return "executed before the cache existed"
    changed = [name for name, digest in inputs(src, params, published.parent).items() if stamped.get(name) != digest]
    return f"changed: {', '.join(changed)}" if changed else None
