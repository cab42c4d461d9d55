"""A notebook's source, its declared parameters and profiles, and the checks made before any kernel starts.

A result notebook declares its parameters once, in a literal
`PROFILES = {"smoke": dict(...), "cpu": dict(...), "paper": dict(...)}`; its papermill `parameters` cell holds only
the knobs every run takes (profile, scale, dtype, output_dir), and `-p KEY VALUE` may set any key of PROFILES
(papermill injects it as a variable, which `Run(..., overrides=globals())` takes). Its budgets (what a dry run's
`scale` multiplies, with their least values) in a literal `BUDGETS = dict(steps=20, pairs=2, ...)`. All are
read from the source (never executed), so a typo'd profile, an unknown or ill-typed parameter and a model folder that does
not exist are refused before a kernel starts, and before anything already published is touched.

The type rule for an explicit parameter is read off the profile it overrides: an integer where the
profile holds an integer (bools refused), a finite number where it holds a float, a list of such where
it holds a list, text where it holds text; and the sign its values share across all profiles (every
profile > 0: must be > 0; every profile ≥ 0: must be ≥ 0). The notebook checks the finer rules (a range
that depends on the model, such as a length ≤ the model's maximum) in its first cell.
"""
from __future__ import annotations

import ast
import math
import numbers
import os
from pathlib import Path

import yaml

from ..contract import check_dtype_name
from .errors import BookError

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = REPO / "notebooks"
MODEL_KEYS = ("model", "models", "embedder")
UNCHECKED = {"profile", "output_dir", "device", "scale", "dtype", *MODEL_KEYS}


def known_notebooks(notebooks_dir: Path = NOTEBOOKS) -> list[str]:
    """Names (file stems) of the Jupytext notebooks in `notebooks_dir`, sorted."""
    return sorted(p.stem for p in Path(notebooks_dir).glob("*.py") if not p.name.startswith("_"))


def notebook_source(name: str, notebooks_dir: Path = NOTEBOOKS) -> Path:
    src = Path(notebooks_dir) / f"{name.removesuffix('.py')}.py"
    if not src.is_file():
        known = known_notebooks(notebooks_dir)
        listing = ", ".join(known) if known else "none yet"
        raise BookError(f"unknown notebook {name!r}: the notebooks in {notebooks_dir} are: {listing}.")
    return src


def parse_value(text: str):
    """A -p value read as YAML (as papermill's -y does): '3' -> 3, '[1, 2]' -> [1, 2], 'null' -> None."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def declared_parameters(src: Path) -> list[str]:
    """The names assigned in the notebook's cell tagged `parameters`, in order."""
    import jupytext

    for cell in jupytext.read(src).cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            tree = ast.parse(cell.source)
            return [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    raise BookError(f"{src.name} has no cell tagged 'parameters': papermill could not pass it any parameter.")


def accepted_parameters(src: Path) -> list[str]:
    """What `-p KEY VALUE` may set: the names of the parameters cell (the knobs every run takes: profile, scale,
    dtype, output_dir) and every key of the notebook's PROFILES, which `Run(..., overrides=globals())` takes from
    the variables papermill injects."""
    keys = [key for entries in (declared_profiles(src) or {}).values() for key in entries]
    return list(dict.fromkeys(declared_parameters(src) + keys))


def declared_constant(src: Path, name: str):
    """The literal top-level constant `name` (UPPER_CASE) of the notebook; None if it has none.

    Read without running the notebook: the top-level UPPER_CASE constants before it (e.g. a list of
    model names) and `name` itself are evaluated with nothing but literals, dict(...) and those constants.
    """
    namespace: dict = {"__builtins__": {}, "dict": dict}
    for node in ast.parse(Path(src).read_text()).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        target = node.targets[0].id
        if not target.isupper():
            continue
        try:
            namespace[target] = eval(compile(ast.Expression(node.value), str(src), "eval"), namespace)
        except Exception as err:  # a constant that is not a literal: only the one asked for must be one
            if target == name:
                raise BookError(f"{Path(src).name}: {name} must be built from literals, dict(...) and UPPER_CASE "
                                f"constants defined before it, so it can be checked before the notebook runs ({err}).") from None
        if target == name:
            return namespace[target]
    return None


def declared_profiles(src: Path) -> dict[str, dict] | None:
    """The literal `PROFILES = {...}` of the notebook; None if it has none."""
    return declared_constant(src, "PROFILES")


def declared_budgets(src: Path) -> dict[str, int]:
    """The literal `BUDGETS = dict(name=least value, ...)` of the notebook: the profile entries a dry run scales."""
    return declared_constant(src, "BUDGETS") or {}


def profile_at_scale(src: Path, profile: str, scale: float) -> dict:
    """The notebook's profile with its budgets scaled as `Run` scales them (`notebook.scaled_profile`)."""
    from ..pages.run import scaled_profile

    try:
        return scaled_profile(declared_profiles(src)[profile], declared_budgets(src), scale)
    except ValueError as err:
        raise BookError(f"{Path(src).stem}: {err}") from None


def _number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, numbers.Integral):
        return "int"
    if isinstance(v, numbers.Real):
        return "float"
    if isinstance(v, (list, tuple)):
        return "list"
    if isinstance(v, str):
        return "str"
    return "none" if v is None else type(v).__name__


def _sign_rule(values: list) -> tuple[str, float] | None:
    """('>', 0) when every numeric value is > 0, ('>=', 0) when every one is ≥ 0, else None."""
    flat = [x for v in values for x in (v if isinstance(v, (list, tuple)) else [v]) if _number(x)]
    if not flat:
        return None
    if all(x > 0 for x in flat):
        return (">", 0)
    if all(x >= 0 for x in flat):
        return (">=", 0)
    return None


def check_value(key: str, value, profile_value, all_values: list) -> None:
    """Refuse `value` for `key` when its type or sign disagrees with what the profiles hold (see the module doc)."""
    want = _kind(profile_value)
    items = value if isinstance(value, (list, tuple)) else [value]
    if want == "list":
        if not isinstance(value, (list, tuple)) or not value:
            raise BookError(f"parameter {key} must be a non-empty list like {profile_value!r}, got {value!r}.")
        want = _kind(profile_value[0]) if profile_value else "none"
    elif isinstance(value, (list, tuple)):
        raise BookError(f"parameter {key} must be one value like {profile_value!r}, not a list: got {value!r}.")
    for v in items:
        if want == "int" and _kind(v) != "int":
            raise BookError(f"parameter {key} must be a whole number (like {profile_value!r}), got {v!r}.")
        if want == "float" and not (_number(v) and math.isfinite(v)):
            raise BookError(f"parameter {key} must be a finite number (like {profile_value!r}), got {v!r}.")
        if want == "str" and not isinstance(v, str):
            raise BookError(f"parameter {key} must be text (like {profile_value!r}), got {v!r}.")
        if want == "bool" and not isinstance(v, bool):
            raise BookError(f"parameter {key} must be true or false, got {v!r}.")
    rule = _sign_rule(all_values) if want in ("int", "float") else None
    if rule:
        op, bound = rule
        bad = [v for v in items if not (v > bound if op == ">" else v >= bound)]
        if bad:
            raise BookError(f"parameter {key} must be {op} {bound} (as in every profile), got {value!r}.")


def check_model_reference(key: str, value) -> None:
    """A model given as a path must be an existing folder with a config.json; a hub name is checked when loaded."""
    for ref in value if isinstance(value, list) else [value]:
        if ref is None or not isinstance(ref, str):
            if ref is not None:
                raise BookError(f"parameter {key} must be a hub name or a local folder, got {ref!r}.")
            continue
        path = Path(ref).expanduser()
        looks_local = ref.startswith((".", "/", "~")) or os.sep in ref and path.exists()
        if path.exists() and not path.is_dir():
            raise BookError(f"parameter {key}: {ref} is a file; pass the model's folder (with config.json and *.safetensors).")
        if looks_local and not path.is_dir():
            raise BookError(f"parameter {key}: no model folder at {path}. Pass an existing folder or a hub name such as roberta-base.")
        if path.is_dir() and not (path / "config.json").is_file():
            raise BookError(f"parameter {key}: {path} has no config.json, so it is not a Hugging Face model folder.")


def resolve_parameters(src: Path, parameters: dict) -> dict:
    """Check `parameters` against the notebook `src` before it runs; return them as papermill should get them.

    `model` becomes `models=[model]` for a notebook that declares `models` instead. Raises BookError naming
    the parameter and the fix: an undeclared name, an unknown profile, a value of the wrong type or sign,
    a forward dtype other than float32 and bfloat16, a model folder that does not exist.
    """
    name = Path(src).stem
    declared = accepted_parameters(src)
    params = dict(parameters)
    if "model" in params and "model" not in declared and "models" in declared:
        model = params.pop("model")
        params["models"] = model if isinstance(model, list) else [model]
    unknown = sorted(set(params) - set(declared) - {"output_dir"})
    if unknown:
        raise BookError(f"{name} has no parameter {', '.join(map(repr, unknown))}: its parameters are {', '.join(declared)}.")
    profiles = declared_profiles(src)
    if profiles:
        profile = params.get("profile") or _default_profile(src)
        if profile not in profiles:
            raise BookError(f"{name}: unknown profile {profile!r}: choose one of {', '.join(sorted(profiles))} "
                            "(smoke for tests, cpu offline, paper on a GPU).")
        profile_at_scale(src, profile, params.get("scale", 1.0))  # refuses a bad scale, or BUDGETS it cannot apply
        for key, value in params.items():
            if key in UNCHECKED or value is None or key not in profiles[profile]:
                continue
            default = profiles[profile][key]
            if default is None:
                continue
            check_value(key, value, default, [p[key] for p in profiles.values() if p.get(key) is not None])
    try:
        check_dtype_name(params.get("dtype"))
    except ValueError as err:
        raise BookError(f"{name}: {err}") from None
    for key in MODEL_KEYS:
        if key in params:
            check_model_reference(key, params[key])
    return params


def _default_profile(src: Path):
    """The `profile = ...` default of the parameters cell."""
    import jupytext

    for cell in jupytext.read(src).cells:
        if "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "profile" for t in node.targets):
                    return ast.literal_eval(node.value)
    return None
