"""The library modules a notebook runs: the static import closure of its `glauber_mlm` imports.

A page's results depend on the library code it executes, not on the whole package. `closure` parses the notebook's
Jupytext source (plain Python) with `ast`, takes every `import glauber_mlm...` and `from glauber_mlm... import ...`
(at any depth: inside functions too), and follows each module's own imports, absolute and relative, through the
package. Importing `glauber_mlm.a.b` runs `glauber_mlm/__init__.py` and `glauber_mlm/a/__init__.py` before
`a/b.py`, so every package `__init__` on the way is in the closure, with what it imports; `from glauber_mlm.a
import x` adds `a/x.py` when `x` is a submodule.

The runner (`RUNNER`: `book/`, `cli.py`) is left out, as it decides what runs, not what it computes (the
notebooks' plan cell imports `glauber_mlm.book.plan`, which only counts work); its imports are not followed.
Where an import cannot be resolved statically — a `glauber_mlm` module with no file, `importlib.import_module` or
`__import__` of a name that is not a literal, a module that does not parse — `closure` returns None and the caller
keys on the whole package.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "glauber_mlm"
RUNNER = ("book", "cli")  # top-level names under the package that are the runner, not the library
DYNAMIC = ("import_module", "__import__")


class Unresolved(Exception):
    """An import the closure cannot follow statically; the key then covers the whole package."""


def is_runner(library: Path, path: Path) -> bool:
    """Whether `path` (a file under `library`) belongs to the runner (`RUNNER`)."""
    first = path.relative_to(library).parts[0]
    return first.removesuffix(".py") in RUNNER


def module_file(library: Path, parts: tuple[str, ...]) -> Path | None:
    """The file of module `glauber_mlm.<parts>` under `library` (`a/b.py` or `a/b/__init__.py`); None if none."""
    base = library.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py") if parts else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _chain(library: Path, parts: tuple[str, ...]) -> list[Path]:
    """The files importing `glauber_mlm.<parts>` executes: each package `__init__` on the way, then the module.
    Raises Unresolved when one of them has no file."""
    files = []
    for k in range(len(parts) + 1):
        found = module_file(library, parts[:k])
        if found is None:
            raise Unresolved(".".join((PACKAGE, *parts[:k])))
        files.append(found)
    return files


def _package_of(library: Path, path: Path) -> tuple[str, ...]:
    """The package a module file belongs to, as parts under `glauber_mlm` (its own for an `__init__.py`)."""
    return path.parent.relative_to(library).parts


def _literal_import(node: ast.Call) -> str | None:
    """The module an `import_module("x")` / `__import__("x")` call names; raises Unresolved for a non-literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in DYNAMIC:
        return None
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    raise Unresolved(f"{name}(...) with a name that is not a literal")


def imported(tree: ast.AST, package: tuple[str, ...] | None) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The `glauber_mlm` modules `tree` imports, as (module parts under the package, names it imports from it).

    `package`: the package of the file the tree is from (for relative imports); None for a notebook, whose
    relative imports are not the package's. Raises Unresolved for a dynamic import of a non-literal name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(tuple(a.name.split(".")[1:]), ()) for a in node.names if a.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names)
            if node.level and package is not None:
                base = package[:len(package) - node.level + 1]
                found.append(((*base, *(node.module.split(".") if node.module else ())), names))
            elif not node.level and node.module and node.module.split(".")[0] == PACKAGE:
                found.append((tuple(node.module.split(".")[1:]), names))
        elif isinstance(node, ast.Call):
            literal = _literal_import(node)
            if literal and literal.split(".")[0] == PACKAGE:
                found.append((tuple(literal.split(".")[1:]), ()))
    return found


def _files_of(library: Path, parts: tuple[str, ...], names: tuple[str, ...]) -> list[Path]:
    """The files an import of `names` from `glauber_mlm.<parts>` executes (submodules among `names` included)."""
    files = _chain(library, parts)
    for name in names:
        sub = module_file(library, (*parts, name)) if name != "*" else None
        if sub is not None:
            files.append(sub)
    return files


def closure(source: Path, library: Path) -> list[Path] | None:
    """The library files (under `library`, the `glauber_mlm` folder) that running `source` imports, sorted, the
    runner's left out; None when an import cannot be resolved statically (see the module doc)."""
    library = Path(library)
    seen: set[Path] = set()
    try:
        todo = [f for parts, names in imported(ast.parse(Path(source).read_text()), None)
                for f in _files_of(library, parts, names)]
        while todo:
            path = todo.pop()
            if path in seen or is_runner(library, path):
                continue
            seen.add(path)
            tree = ast.parse(path.read_text(), filename=str(path))
            todo += [f for parts, names in imported(tree, _package_of(library, path))
                     for f in _files_of(library, parts, names)]
    except (Unresolved, SyntaxError, UnicodeDecodeError):  # a module Python cannot parse fails in the kernel, named
        return None
    return sorted(seen)
