"""A notebook's source, its declared parameters and profiles, and the checks made before any kernel starts.

A result notebook declares its parameters once, in a literal
`PROFILES = {"smoke": dict(...), "cpu": dict(...), "paper": dict(...)}`; its papermill `parameters` cell holds only
the knobs every run takes (profile, scale, dtype, output_dir), and `-p KEY VALUE` may set any key of PROFILES
(papermill injects it as a variable, which `Run(..., overrides=globals())` takes). Its budgets (what a dry run's
`scale` multiplies, with their least values) in a literal `BUDGETS = dict(steps=20, pairs=2, ...)`. All are
read from the source (never executed), so a typo'd profile, an unknown or ill-typed parameter and a model folder that does
not exist are refused before a kernel starts, and before anything already published is touched.

Parameters are data, never code (issue 34). A `-p` value is read by `parse_value` as JSON-compatible data (YAML
1.2's core schema at most, no tags); every parameter has a declared type (`declared_type`: `DECLARED` for the
knobs, the model keys and `device`, read off all the profiles for the others), checked by `check_value` before
a kernel starts: an integer where the profiles hold integers (bools refused), a finite number where they hold
floats, a non-empty list of such where they hold lists, text where they hold text; None wherever a profile
holds None, and for every profile key (a None keeps the profile's value); the sign the profiles' values share
(every profile > 0: must be > 0; every profile ≥ 0: must be ≥ 0). A key whose profiles all hold None takes
None, text, a finite number or a list of those. `safe_parameters` re-checks what papermill gets, at the call,
and that papermill's rendering of each value reads back as that value. The notebook checks the finer rules (a
range that depends on the model, such as a length ≤ the model's maximum) in its first cell.
"""
from __future__ import annotations

import ast
import functools
import keyword
import math
import numbers
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..contract import check_dtype_name
from .errors import BookError

REPO = Path(__file__).resolve().parents[3]
NOTEBOOKS = REPO / "notebooks"
MODEL_KEYS = ("model", "models", "embedder")


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


def parse_value(text: str, key: str = "VALUE"):
    """A `-p KEY VALUE` value as plain data: str, int, float, bool, None, or lists and dicts (text keys) of them.

    Read as YAML's 1.2 core schema, which JSON is a subset of: '3' -> 3, '2.5' -> 2.5, '1e3' -> 1000.0,
    '[1, 2]' -> [1, 2], 'null', '~' or '' -> None, 'true' -> True, 'roberta-base' -> 'roberta-base', and any
    quoted text stays text ('"010"' -> '010'). Refused with a BookError naming the key, the value and the fix:
    - any tag (`!!binary`, `!!set`, `!!python/...`, `!!str`, `!custom`), anchor, alias or directive;
    - a numeral YAML 1.1 and 1.2 read differently, or that is not plain decimal: `010` (octal 8 in 1.1, 10 in
      1.2: write 10), `0o10`, `0x1F`, `0b11`, `1:30` (90 in 1.1), `1_000`;
    - a word YAML 1.1 reads as a bool, a date or null but 1.2 as text: `yes`, `on`, `off`, `2001-12-14`
      (quote it to mean the text, write true or false to mean a flag);
    - a non-finite number (`.inf`, `.nan`, `1e999`), text that is not valid Unicode, a mapping with a
      non-text or repeated key, and anything YAML cannot parse (quote the text).
    """
    try:
        _refuse_tags(text, key)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise BookError(f"-p {key} {text!r}: not a value ({problem}); write a number, true/false, null, a list such "
                        f"as [1, 2], or quote text: -p {key} '\"{text}\"'.") from None
    return None if node is None else _plain(node, key)


def _refuse_tags(text: str, key: str) -> None:
    """Refuse a YAML tag, anchor, alias or directive anywhere in `text`: a parameter is data, and tags make objects."""
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise BookError(f"-p {key} {text!r}: YAML tags ({tag}) are refused, a parameter is plain data: drop the "
                            f"tag (write 3, not !!int 3), or quote text: -p {key} '\"{text}\"'.")
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise BookError(f"-p {key} {text!r}: YAML anchors and aliases (&, *) are refused: write the value out.")
        if isinstance(event, yaml.DocumentStartEvent) and (event.version or event.tags):
            raise BookError(f"-p {key} {text!r}: YAML directives (%YAML, %TAG) are refused: give the value alone.")


def _plain(node: yaml.Node, key: str):
    """The composed YAML `node` as plain data (see `parse_value` for what is refused)."""
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, key) for item in node.value]
    if isinstance(node, yaml.MappingNode):
        data: dict = {}
        for k, v in node.value:
            name = _plain(k, key)
            if not isinstance(name, str):
                raise BookError(f"-p {key}: a mapping's keys must be text, got {name!r}: quote it.")
            if name in data:
                raise BookError(f"-p {key}: the mapping gives {name!r} twice: give each key once.")
            data[name] = _plain(v, key)
        return data
    if node.style is not None:  # quoted or block text is text
        return _text(node.value, key)
    return _plain_scalar(node, key)


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), decimal numerals only
_CORE_NULL = re.compile(r"(?:~|null|Null|NULL|)")
_CORE_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)")
_CORE_INT = re.compile(r"[-+]?[0-9]+")
_CORE_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_CORE_NON_FINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_NOT_DECIMAL = re.compile(r"[-+]?(?:0[0-9]+|0[oO][0-7]+|0[xX][0-9a-fA-F]+|0[bB][01]+)")
_SAME_IN_YAML_11 = {"tag:yaml.org,2002:str", "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool",
                    "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


def _plain_scalar(node: yaml.ScalarNode, key: str):
    """An unquoted scalar read as YAML 1.2's core schema, refused where YAML 1.1 (`node.tag`) reads it otherwise."""
    text = node.value
    if _NOT_DECIMAL.fullmatch(text):
        leading_zero = text.lstrip("+-")[1].isdigit()
        fix = f"write {int(text)} without the leading zero" if leading_zero else f"write {int(text, 0)} in decimal"
        raise BookError(f"-p {key} {text!r}: a numeral that is not plain decimal is ambiguous (YAML 1.1 reads 010 as 8, "
                        f"YAML 1.2 as 10): {fix}, or quote it to mean text.")
    if _CORE_NON_FINITE.fullmatch(text):
        raise BookError(f"-p {key} {text!r}: parameters are finite numbers; give one (e.g. 1e6), or quote it to mean text.")
    value = _core_value(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise BookError(f"-p {key} {text!r} is too large to be a finite number: give a smaller one.")
    if node.tag != "tag:yaml.org,2002:str" and (node.tag not in _SAME_IN_YAML_11 or not _same(_yaml_11(node), value)):
        old = repr(_yaml_11(node)) if node.tag in _SAME_IN_YAML_11 else f"a {node.tag.rsplit(':', 1)[-1]}"
        raise BookError(f"-p {key} {text!r} is ambiguous: YAML 1.1 reads it as {old}, YAML 1.2 as {value!r}. Write a "
                        f"plain decimal number (90, not 1:30; 1000, not 1_000), true or false for a flag, or quote "
                        f"text: -p {key} '\"{text}\"'.")
    return _text(value, key) if isinstance(value, str) else value


def _core_value(text: str):
    """`text` as YAML 1.2's core schema reads an unquoted scalar: None, a bool, an int, a float or the text."""
    if _CORE_NULL.fullmatch(text):
        return None
    if _CORE_BOOL.fullmatch(text):
        return text.lower() == "true"
    if _CORE_INT.fullmatch(text):
        return int(text)
    if _CORE_FLOAT.fullmatch(text):
        return float(text)
    return text


def _yaml_11(node: yaml.ScalarNode):
    """What YAML 1.1 (PyYAML's safe loader) makes of the null, bool, int or float scalar `node`."""
    return yaml.constructor.SafeConstructor().construct_object(node)


def _same(a, b) -> bool:
    """True when `a` and `b` are equal and of the same type (1, 1.0 and True are three different values)."""
    return type(a) is type(b) and a == b


def _text(value: str, key: str) -> str:
    """`value`, refused when it is not valid Unicode (a lone surrogate cannot be written into a notebook)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BookError(f"-p {key}: the text {value!r} is not valid Unicode: give it without lone surrogates.") from None
    return value


def _parameters_cell(src: Path) -> str | None:
    """The source of the notebook's code cell tagged `parameters`; None if it has none."""
    stat = Path(src).stat()
    return _read_parameters_cell(Path(src).resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _read_parameters_cell(src: Path, mtime_ns: int, size: int) -> str | None:
    """`_parameters_cell`, read once per version of the file (jupytext takes a fifth of a second a read)."""
    import jupytext

    for cell in jupytext.read(src).cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            return cell.source
    return None


def _module_body(src: Path) -> list[ast.stmt]:
    """The top-level statements of the notebook's source (parsed once per version of the file; callers read them only)."""
    stat = Path(src).stat()
    return _parse_module(Path(src).resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _parse_module(src: Path, mtime_ns: int, size: int) -> list[ast.stmt]:
    """`_module_body`, parsed once per version of the file."""
    return ast.parse(src.read_text(), filename=str(src)).body


def declared_parameters(src: Path) -> list[str]:
    """The names assigned in the notebook's cell tagged `parameters`, in order."""
    source = _parameters_cell(src)
    if source is None:
        raise BookError(f"{src.name} has no cell tagged 'parameters': papermill could not pass it any parameter.")
    tree = ast.parse(source)
    return [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]


def accepted_parameters(src: Path) -> list[str]:
    """What `-p KEY VALUE` may set: the names of the parameters cell (the knobs every run takes: profile, scale,
    dtype, output_dir) and every key of the notebook's PROFILES, which `Run(..., overrides=globals())` takes from
    the variables papermill injects."""
    keys = [key for entries in (declared_profiles(src) or {}).values() for key in entries]
    return list(dict.fromkeys(declared_parameters(src) + keys))


def takes_model(src: Path) -> bool:
    """Whether `--model` applies to the notebook: it accepts `model` or `models` (an exact-model page has neither)."""
    return any(key in ("model", "models") for key in accepted_parameters(src))


def declared_constant(src: Path, name: str):
    """The literal top-level constant `name` (UPPER_CASE) of the notebook; None if it has none.

    Read without running the notebook: the top-level UPPER_CASE constants before it (e.g. a list of
    model names) and `name` itself are evaluated with nothing but literals, dict(...) and those constants.
    """
    namespace: dict = {"__builtins__": {}, "dict": dict}
    for node in _module_body(src):
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


@dataclass(frozen=True)
class ParamType:
    """What a parameter may hold: `kind` ('int'; 'float', which takes an int too; 'str'; 'bool'; or 'scalar': text, a
    finite number or None) as one value or, with `is_list`, as a non-empty list of them ('scalar' takes either);
    None where `nullable` (the whole value) or `items_nullable` (an item); `sign` ('>', 0) or ('>=', 0) for numbers.
    `example` is shown in messages."""

    kind: str
    is_list: bool = False
    nullable: bool = True
    items_nullable: bool = False
    sign: tuple[str, float] | None = None
    example: object = None


# The knobs of the parameters cell, which no profile holds, and the keys profiles hold as None (`device`, the
# embedded model): declared here, not read off the profiles.
DECLARED = {
    "profile": ParamType("str", nullable=False, example="cpu"),
    "output_dir": ParamType("str", nullable=False, example="01_rectangle_test"),
    "scale": ParamType("float", nullable=False, example=0.1),  # its range, (0, 1], is `profile_at_scale`'s to check
    "dtype": ParamType("str", example="bfloat16"),
    "device": ParamType("str", example="cuda:0"),
    "model": ParamType("str", example="roberta-base"),
    "embedder": ParamType("str", example="sentence-transformers/all-MiniLM-L6-v2"),
    "models": ParamType("str", is_list=True, items_nullable=True, example=["roberta-base"]),
}


def declared_type(src: Path, key: str) -> ParamType:
    """The type of parameter `key` of notebook `src`: `DECLARED`'s, else read off every profile's value of `key`
    (`inferred_type`)."""
    if key in DECLARED:
        return DECLARED[key]
    return inferred_type(Path(src).stem, key, [p[key] for p in (declared_profiles(src) or {}).values() if key in p])


def inferred_type(name: str, key: str, values: list) -> ParamType:
    """The type the profiles' `values` of `key` share: lists or single values, of ints (with floats: floats), floats,
    text or bools; None accepted (a None keeps the profile's value), as an item where a profile's list holds one; the
    sign every number shares. Values all None: 'scalar'. Raises BookError when the profiles disagree on the kind."""
    present = [v for v in values if v is not None]
    shapes = {isinstance(v, (list, tuple)) for v in present}
    if len(shapes) > 1:
        raise BookError(f"{name}: PROFILES hold {key} as a list in one profile and as one value in another: make "
                        f"them agree, so that -p {key} can be checked.")
    is_list = shapes == {True}
    items = [x for v in present for x in (v if is_list else [v])]
    kinds = {_kind(x) for x in items if x is not None}
    kind = _shared_kind(kinds)
    if kind is None:
        raise BookError(f"{name}: PROFILES hold {key} as {' and '.join(sorted(kinds))}: give it one kind in every "
                        f"profile, so that -p {key} can be checked.")
    return ParamType(kind, is_list=is_list, items_nullable=None in items,
                     sign=_sign_rule(present) if kind in ("int", "float") else None,
                     example=present[0] if present else None)


def _shared_kind(kinds: set[str]) -> str | None:
    """The one kind `kinds` make: 'float' for ints and floats, 'scalar' for none; None for a mix (or lists of lists)."""
    if not kinds:
        return "scalar"
    if kinds == {"int", "float"}:
        return "float"
    kind = next(iter(kinds))
    return kind if len(kinds) == 1 and kind in _KIND_WORDS else None


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


_KIND_WORDS = {"int": "a whole number", "float": "a finite number", "str": "text", "bool": "true or false",
               "scalar": "text, a finite number or null"}


def check_value(key: str, value, ptype: ParamType, example=None) -> None:
    """Refuse `value` for `key` unless it is what `ptype` declares (see the module doc): a BookError naming the
    parameter, what it must be (like `example`, else `ptype.example`) and what it got."""
    shown = example if example is not None else ptype.example
    as_in = f" like {shown!r}" if shown is not None else ""
    like = f" ({as_in.strip()})" if as_in else ""
    if value is None:
        if not ptype.nullable:
            raise BookError(f"parameter {key} must be {_KIND_WORDS[ptype.kind]}{like}, not null.")
        return
    if ptype.is_list and (not isinstance(value, list) or not value):
        raise BookError(f"parameter {key} must be a non-empty list{like}, got {value!r}.")
    if not ptype.is_list and ptype.kind != "scalar" and isinstance(value, list):
        raise BookError(f"parameter {key} must be one value{as_in}, not a list: got {value!r}.")
    items = value if isinstance(value, list) else [value]
    for v in items:
        if not (_is_kind(v, ptype.kind) or v is None and (ptype.items_nullable or ptype.kind == "scalar")):
            raise BookError(f"parameter {key} must be {_KIND_WORDS[ptype.kind]}{like}, got {v!r}.")
    if ptype.sign:
        op, bound = ptype.sign
        if any(v is not None and not (v > bound if op == ">" else v >= bound) for v in items):
            raise BookError(f"parameter {key} must be {op} {bound} (as in every profile), got {value!r}.")


def _is_kind(v, kind: str) -> bool:
    """True when `v` is of `kind` (see `ParamType`); numbers must be finite."""
    if kind == "int":
        return _kind(v) == "int"
    if kind == "float":
        return _number(v) and math.isfinite(v)
    if kind == "scalar":
        return isinstance(v, str) or _number(v) and math.isfinite(v)
    return _kind(v) == kind


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
    the parameter and the fix: an undeclared name, a value of the wrong type or sign (`declared_type`,
    `check_value`: every parameter, the knobs, `device` and the model keys included), an unknown profile, a
    forward dtype other than float32 and bfloat16, a model folder that does not exist, a value papermill could not
    write as itself (`safe_parameters`).
    """
    name = Path(src).stem
    declared = accepted_parameters(src)
    params = dict(parameters)
    if "model" in params and "model" not in declared and "models" in declared:
        model = params.pop("model")
        params["models"] = model if isinstance(model, list) else [model]
    unknown = sorted(set(params) - set(declared) - {"output_dir"})
    if "model" in unknown and not takes_model(src):
        raise BookError(f"{name} runs exact models only (it has no parameter 'model'): --model does not apply to it; "
                        "run it without --model.")
    if unknown:
        raise BookError(f"{name} has no parameter {', '.join(map(repr, unknown))}: its parameters are {', '.join(declared)}.")
    profiles = declared_profiles(src) or {}
    profile = params.get("profile") or _default_profile(src)
    chosen = profiles.get(profile, {}) if isinstance(profile, str) else {}
    for key, value in params.items():
        check_value(key, value, declared_type(src, key), chosen.get(key))
    if profiles:
        if profile not in profiles:
            raise BookError(f"{name}: unknown profile {profile!r}: choose one of {', '.join(sorted(profiles))} "
                            "(smoke for tests, cpu offline, paper on a GPU).")
        profile_at_scale(src, profile, params.get("scale", 1.0))  # refuses a bad scale, or BUDGETS it cannot apply
    try:
        check_dtype_name(params.get("dtype"))
    except ValueError as err:
        raise BookError(f"{name}: {err}") from None
    for key in MODEL_KEYS:
        if key in params:
            check_model_reference(key, params[key])
    return safe_parameters(params)


def _default_profile(src: Path):
    """The `profile = ...` default of the parameters cell."""
    for node in ast.parse(_parameters_cell(src) or "").body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "profile" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def safe_parameters(params: dict) -> dict:
    """`params` unchanged, once papermill can only write them into the kernel as plain data.

    Every key must be a Python identifier (not a keyword); every value str (valid Unicode), int, finite float,
    bool, None, or a list or dict (text keys) of those; and the parameters cell papermill writes for them
    (`papermill.translators.translate_parameters`) must parse into one `KEY = literal` per key whose literal reads
    back (`ast.literal_eval`) as the very value. Anything else (bytes, a set, a date, an object, nan or inf,
    which papermill writes as `float('nan')`) raises a BookError naming the parameter, before a kernel starts.
    """
    for key, value in params.items():
        if not (isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)):
            raise BookError(f"parameter name {key!r} is not a Python name: use the notebook's own parameter names.")
        _check_plain(key, value)
    from papermill.translators import translate_parameters

    cell = ast.parse(translate_parameters("python3", "python", params))
    written = {node.targets[0].id: node.value for node in cell.body
               if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
    for key, value in params.items():
        if len(cell.body) != len(params) or key not in written or not _reads_back(written[key], value):
            raise BookError(f"parameter {key}: papermill would not write {value!r} into the notebook as itself; "
                            "give plain text, numbers, true/false, null or lists of them.")
    return params


def _check_plain(key: str, value) -> None:
    """Refuse `value` unless it is plain data (see `safe_parameters`), naming the parameter and what it holds."""
    if isinstance(value, list):
        for item in value:
            _check_plain(key, item)
    elif isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise BookError(f"parameter {key}: a mapping's keys must be text, got {name!r}.")
            _text(name, key)
            _check_plain(key, item)
    elif isinstance(value, float) and not math.isfinite(value):
        raise BookError(f"parameter {key}: {value!r} is not a finite number; give one.")
    elif isinstance(value, str):
        _text(value, key)
    elif not (value is None or isinstance(value, (bool, int, float))):
        raise BookError(f"parameter {key}: {value!r:.80} (of type {type(value).__name__}) is not a parameter value: "
                        "give plain text, numbers, true/false, null or lists of them.")


def _reads_back(node: ast.expr, value) -> bool:
    """True when the expression `node` is a literal equal to `value`, type for type (`repr` tells 1, 1.0 and True apart)."""
    try:
        return repr(ast.literal_eval(node)) == repr(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
