"""Is a published page the one committed in git? git is the authority, not the seal inside the page.

A page's seal (`contract.broken_seal`) catches an accidental edit, but anyone can recompute it: a result.json changed
by hand and sealed again passes. The committed pages are what the book publishes, so `book` and the dashboard also ask
git: `differs_from_git` names the files of each published page that differ from HEAD (modified, deleted, or new and
not committed). Where the root is not in a git work tree, or git is not installed, it says nothing.
"""
from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

PAGES = PurePosixPath("book") / "notebooks"


def _page_of(path: PurePosixPath, names: set[str]) -> str | None:
    """The page a path under book/notebooks belongs to (its notebook, its results folder); None for any other."""
    if path.parent != PAGES and PAGES not in path.parents:
        return None
    first = path.relative_to(PAGES).parts[0]
    name = first.removesuffix(".ipynb")
    return name if name in names else None


def differs_from_git(root: Path, names: list[str]) -> dict[str, list[str]]:
    """{page: its files (by path from `root`) that differ from git's HEAD} for the pages `names` published in
    `root`; {} where `root` is in no git work tree or git is missing. One `git status` for every page."""
    root = Path(root).resolve()
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             timeout=60)
        if top.returncode != 0:
            return {}
        status = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                                 PAGES.as_posix()], cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return {}
    if status.returncode != 0:
        return {}
    base = Path(top.stdout.strip()).resolve()
    entries = status.stdout.split("\0")
    found: dict[str, list[str]] = {}
    k = 0
    while k < len(entries):
        entry = entries[k]
        k += 1
        if len(entry) < 4:
            continue
        if entry[0] in "RC":  # a rename's source follows it
            k += 1
        path = (base / entry[3:]).resolve()
        if not path.is_relative_to(root):
            continue
        rel = PurePosixPath(path.relative_to(root).as_posix())
        page = _page_of(rel, set(names))
        if page is not None:
            found.setdefault(page, []).append(rel.as_posix())
    return {page: sorted(files) for page, files in sorted(found.items())}


def differs_line(name: str, files: list[str]) -> str:
    """What `book` says of a reused page `name` whose `files` differ from git's HEAD."""
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
    return (f"{name}: the published page differs from the version committed in git ({shown}); its seal cannot tell "
            f"an edit sealed again: see git diff -- book/notebooks/{name}*, restore it with git checkout -- "
            f"book/notebooks/{name}*, or re-execute it with --only {name} --force")
