"""The book folder: prose pages copied in, the effective table of contents, the execution page, the build."""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .committed import differs_from_git
from .deciding_cost import with_cost
from .errors import BookError
from .page import write_sources
from ..contract import read_provenance, read_result, read_rules
from ..pages.verdict import scope
from .parameters import NOTEBOOKS, REPO
from .publish import check_published, problems

MODELS = Path("data") / "models"
MODEL_CARDS = ("minilm-mlm", "minilm6-mlm")  # the embedded models whose cards book/model_card.md includes
CARD_FILES = ("metrics.json", "train.log")  # beside each card, linked from book/model_card.md
# Written before every build into book/_generated/ (gitignored) and included by tracked stub pages, so that a
# build never rewrites a tracked file: the execution tables (book/execution.md) and the verdicts (book/intro.md).
GENERATED = Path("book") / "_generated"
EXECUTION = GENERATED / "execution.md"
VERDICTS = GENERATED / "verdicts.md"
COMMITTED_NOTE = "differs from the version committed in git"  # beside the verdict of such a page (`differs_from_git`)


PREPARED = Path("_build") / "prepared.json"  # in a root: the sha256 of each file `prepare_root` wrote there


def _book_files(root: Path) -> dict[str, bytes]:
    """What `prepare_root` writes into `root`, by path there: config, toc, static files, prose pages and their images,
    the model cards (a card or linked file missing from the repository: a one-line placeholder, only where `root` has
    none)."""
    files = {name: (REPO / name).read_bytes() for name in ("_config.yml", "_toc.yml")}
    files |= {p.relative_to(REPO).as_posix(): p.read_bytes() for p in sorted((REPO / "_static").rglob("*")) if p.is_file()}
    files |= {f"book/{p.name}": p.read_bytes() for p in sorted((REPO / "book").iterdir())
              if p.is_file() and not p.name.startswith(".")}
    for name in MODEL_CARDS:
        card = (MODELS / name / "README.md").as_posix()
        placeholder = (f"# {name}\n\nThis embedded model's card is not in this checkout yet (`{card}`).\n\n"
                       "Trained on: not yet. Metrics: none; training log: `train.log`.\n")
        for rel, missing in ((card, placeholder), *(((MODELS / name / f).as_posix(), f"{name}: {f} is not in this "
                                                     "checkout yet.\n") for f in CARD_FILES)):
            if (REPO / rel).exists():
                files[rel] = (REPO / rel).read_bytes()
            elif not (root / rel).exists():  # the model (and its card) is not in this checkout yet
                files[rel] = missing.encode()
    return files


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _prepared(root: Path) -> dict[str, str]:
    """{path: sha256} of the files `prepare_root` wrote into `root` (`PREPARED`); {} where it wrote none."""
    try:
        written = json.loads((root / PREPARED).read_text())
    except (OSError, ValueError):
        return {}
    return written if isinstance(written, dict) else {}


def users_files(root: Path, files: dict[str, bytes]) -> list[str]:
    """The files of `files` that `root` holds with other content than `prepare_root` wrote there (`PREPARED`): the
    user's own, or edited since, which a copy would overwrite."""
    written, found = _prepared(root), []
    for rel, data in files.items():
        path = root / rel
        if path.exists() or path.is_symlink():
            now = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            if now != data and (now is None or written.get(rel) != _sha256(now)):
                found.append(rel)
    return found


def prepare_root(root: Path) -> Path:
    """Copy the book's config, toc, static files (CSS), prose pages (with their images) and the model cards into `root`.

    They are refreshed on every call (a build folder holds no edits of its own), and `root/_build/prepared.json`
    records what was written. A file there that the book did not write, or that was edited since, is never
    overwritten: the call is refused (BookError naming each such file and the fix) before anything is written. A
    model card missing from the repository becomes a one-line placeholder in `root`. Nothing is copied when `root` is
    the repository itself.
    """
    root = Path(root).resolve()
    if root == REPO:
        return root
    files = _book_files(root)
    inside_build = root.is_relative_to(REPO / "_build")  # the project's own scratch roots: always the book's files
    found = [] if inside_build else users_files(root, files)
    if found:
        raise BookError(f"{root} holds files the book did not write, which preparing it would overwrite "
                        f"({', '.join(found)}): give --root a new or empty folder (or one the book prepared before), "
                        "or move those files away; nothing was written.")
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    written = {**_prepared(root), **{rel: _sha256(data) for rel, data in files.items()}}
    (root / PREPARED).parent.mkdir(exist_ok=True)
    (root / PREPARED).write_text(json.dumps(written, indent=1, sort_keys=True))
    return root


def _page_exists(root: Path, docname: str) -> bool:
    base = root / docname
    return any(base.with_name(base.name + ext).exists() for ext in ("", ".md", ".ipynb", ".rst"))


def effective_toc(root: Path) -> tuple[dict, list[str], list[str]]:
    """`_toc.yml` less entries whose page does not exist, plus executed notebooks it does not list.

    Returns (toc, dropped entries, added notebooks)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    dropped: list[str] = []
    listed: set[str] = set()

    def keep(entry) -> bool:
        if isinstance(entry, dict) and "file" in entry:
            listed.add(entry["file"])
            if not _page_exists(root, entry["file"]):
                dropped.append(entry["file"])
                return False
        if isinstance(entry, dict):
            for key in ("parts", "chapters", "sections"):
                if key in entry:
                    entry[key] = [e for e in entry[key] if keep(e)]
                    if not entry[key]:
                        del entry[key]
            if "caption" in entry and not any(k in entry for k in ("parts", "chapters", "sections", "file")):
                return False
        return True

    keep(toc)
    if not _page_exists(root, toc["root"]):
        raise BookError(f"the book's root page {toc['root']} is missing in {root}.")
    executed = sorted(p.with_suffix("").relative_to(root).as_posix() for p in (root / "book" / "notebooks").glob("*.ipynb"))
    added = [doc for doc in executed if doc not in listed]
    if added:
        parts = toc.setdefault("parts", [])
        home = next((p for p in parts if any(str(c.get("file", "")).startswith("book/notebooks/") for c in p.get("chapters", []))), None)
        if home is None:
            home = {"caption": "Results", "chapters": []}
            parts.insert(min(1, len(parts)), home)
        home.setdefault("chapters", []).extend({"file": doc} for doc in added)
    return toc, dropped, added


def _fmt_seconds(s) -> str:
    if s is None or s == "":
        return "–"
    s = float(s)
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def _code(value) -> str:
    return "–" if value in (None, "", "–") else f"`{value}`"


def _md_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _model_label(params: dict) -> str:
    embedded = "embedded minilm-mlm"
    if "model" in params:
        return str(params["model"] or embedded)
    if "models" in params and params["models"]:
        models = params["models"] if isinstance(params["models"], list) else [params["models"]]
        return ", ".join(str(m or embedded) for m in models)
    return "–"


def execution_rows(root: Path) -> list[dict]:
    """One row per executed notebook in `<root>/book/notebooks`: profile, model, device, machine, times, commit,
    and the verdict of its result box (result.json)."""
    import nbformat

    rows = []
    for nb_path in sorted((root / "book" / "notebooks").glob("*.ipynb")):
        name = nb_path.stem
        prov_path = nb_path.with_suffix("") / "provenance.json"
        try:
            prov = read_provenance(prov_path.parent)
        except (OSError, ValueError):  # missing or malformed: the row says "incomplete" (`problems`)
            prov = {}
        meta = {}
        try:
            meta = nbformat.read(nb_path, as_version=4).metadata.get("papermill", {})
        except Exception:
            pass
        params = prov.get("parameters", {})
        result_path = nb_path.with_suffix("") / "result.json"
        try:
            verdict = read_result(result_path.parent)["verdict"] if result_path.exists() else "–"
        except ValueError:
            verdict = "unreadable result.json"
        rows.append({
            "notebook": name,
            "status": "ok" if not problems(nb_path) else "incomplete",
            "profile": (prov.get("profile") or meta.get("parameters", {}).get("profile", "–"))
                       + (f" (dry run at scale {prov['scale']:g})" if prov.get("scale", 1) < 1 else ""),
            "model": _model_label(params or meta.get("parameters", {})),
            "device": prov.get("device", "–"),
            "forward_dtype": prov.get("forward_dtype", "–"),
            "machine": prov.get("machine", "–"),
            "wall_time_s": prov.get("wall_time_s"),
            "papermill_s": meta.get("duration"),
            "commit": prov.get("commit", "–"),
            "finished": (meta.get("end_time") or "")[:19].replace("T", " "),
            "versions": prov.get("versions", {}),
            "verdict": verdict,
            "has_provenance": prov_path.exists(),
        })
    return rows


def write_execution_page(root: Path, executed: set[str] | None = None) -> Path:
    """Write `<root>/book/_generated/execution.md` (not tracked; included by the stub page `book/execution.md`):
    what ran, where, with which profile and model, and how long it took.

    `executed`: the notebooks executed by this build; the others are shown as reused (their commit says from when).
    """
    rows = execution_rows(root)
    executed = set(executed or ())
    lines: list[str] = []
    if rows:
        lines += [
            "## What ran",
            "",
            "| notebook | verdict | status | this build | profile | model |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in rows:
            link = f"[{r['notebook']}](notebooks/{r['notebook']}.ipynb)"
            built = "executed" if r["notebook"] in executed else f"reused (commit {r['commit']})"
            cells = [link, r["verdict"], r["status"], built, r["profile"], _code(r["model"])]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        # three narrow tables rather than one wide one, so that each fits a desktop column
        lines += [
            "",
            "## How long, on what",
            "",
            "| notebook | device | chains' forward dtype | notebook time | papermill time |",
            "| --- | --- | --- | --- | --- |",
        ]
        for r in rows:
            cells = [r["notebook"], r["device"], r["forward_dtype"], _fmt_seconds(r["wall_time_s"]), _fmt_seconds(r["papermill_s"])]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        total = sum(float(r["papermill_s"] or 0) for r in rows)
        lines += ["", f"Total papermill time: {_fmt_seconds(total)} for {len(rows)} notebook(s)."]
        lines += [
            "",
            "## Where and when",
            "",
            "| notebook | machine | commit | finished (UTC) | provenance |",
            "| --- | --- | --- | --- | --- |",
        ]
        for r in rows:
            prov = (f"[provenance.json](notebooks/{r['notebook']}/provenance.json)" if r["has_provenance"] else "–")
            cells = [r["notebook"], r["machine"], _code(r["commit"]), r["finished"] or "–", prov]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        versions = next((r["versions"] for r in rows if r["versions"]), {})
        if versions:
            lines += ["", "Package versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "."]
    else:
        lines += ["No notebook has been executed for this build."]
    lines += [
        "",
        f"The book was built on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC with Python "
        f"{platform.python_version()} on {platform.system()} {platform.machine()} with {os.cpu_count()} CPU cores.",
        "",
    ]
    page = root / EXECUTION
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines))
    return page


def shown_results(root: Path, notebooks_dir: Path = NOTEBOOKS) -> tuple[dict[str, dict | str], list[str]]:
    """The result pages the dashboard reads: ({name: its result.json, or why it is not shown}, names left out).

    A page is shown when its executed notebook is a complete run whose seal holds (`publish.problems`) and its
    result.json can be read; otherwise its reason is given instead. A shown page that differs from the version committed
    in git (`committed.differs_from_git`) carries its differing files as `differs_from_git`. An open deciding check that names its deciding
    design gets that design's cost on the machine that built the page (`deciding_cost.with_cost`). A results folder
    whose notebook is not in `notebooks_dir` (a page of a removed or renamed notebook) is left out."""
    shown: dict[str, dict | str] = {}
    left_out = []
    for result_path in sorted((Path(root) / "book" / "notebooks").glob("*/result.json")):
        name = result_path.parent.name
        if not (Path(notebooks_dir) / f"{name}.py").is_file():
            left_out.append(name)
            continue
        found = problems(result_path.parent.with_suffix(".ipynb"))
        try:
            shown[name] = "; ".join(found) if found else with_cost(name, result_path.parent,
                                                                   read_result(result_path.parent), notebooks_dir)
        except ValueError as err:
            shown[name] = str(err)
    for name, files in differs_from_git(root, [n for n, r in shown.items() if isinstance(r, dict)]).items():
        shown[name] = {**shown[name], "differs_from_git": files}
    return shown, left_out


def scope_of(build: str) -> str:
    """What a page's verdict is about, from result.json's `build` ("`cpu` profile · model the embedded minilm-mlm,
    minilm6-mlm · …" → "on minilm-mlm and minilm6-mlm at `cpu` scale", `pages.verdict.scope`); '' where it does not
    say."""
    found = re.match(r"`([^`]+)` profile.* · models? ([^·]+?)(?: ·|$)", build)
    if not found:
        return ""
    return scope([m.removeprefix("the embedded ").strip() for m in found.group(2).split(", ")], found.group(1))


def write_verdicts(root: Path, notebooks_dir: Path = NOTEBOOKS) -> Path:
    """Write `<root>/book/_generated/verdicts.md` (not tracked; rewritten before every build, included by the intro):
    one row per result page (`shown_results`), read from its result.json: its verdict, the check the verdict rests on
    with this build's value and the one-sided 95 % bounds of its false-pass and false-fail rates
    (`verdict.Verdict.deciding`) and, when open, what would decide it; what the paper reports for the claim; the
    profile. A page that cannot be trusted gets "not shown: <why>" in place of its verdict; a page whose
    notebook is not in `notebooks_dir` is left out, and the build says so."""
    lines = ["| result page | verdict | the check it rests on: this build | the paper reports | scale |",
             "| --- | --- | --- | --- | --- |"]
    shown, left_out = shown_results(root, notebooks_dir)
    for name in left_out:
        print(f"dashboard: leaving out {name}: there is no {name}.py in {notebooks_dir} (a removed or renamed "
              f"notebook's page; delete book/notebooks/{name}* if it is not wanted)")
    for name, result in shown.items():
        link = f'<a href="notebooks/{name}.html#result-{name[:2]}">{name[:2]} · {_short_title(root, name)}</a>'
        if isinstance(result, str):
            lines.append("| " + " | ".join(_md_cell(c) for c in (link, f"not shown: {result}", "–", "–", "–")) + " |")
            continue
        scale = str(result.get("build", "–")).split(" · model")[0]  # the profile (and a dry run's scale), not the machine
        where = scope_of(str(result.get("build", ""))) if result.get("checks_verdict") == result["verdict"] else ""
        word = f"**{result['verdict'].removesuffix(' at this scale')}** {where}" if where else f"**{result['verdict']}**"
        word += f" ({COMMITTED_NOTE})" if result.get("differs_from_git") else ""
        cells = (link, word, _deciding_cell(result.get("deciding")),
                 result.get("paper") or ("(the book's own question)" if result.get("question") == "book" else "–"), scale)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    if len(lines) == 2:
        lines = ["No result page has been executed for this build."]
    page = root / VERDICTS
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines) + "\n")
    return page


def _short_title(root: Path, name: str) -> str:
    """A result page's title up to its colon or question mark ("High-temperature mixing"), from the executed notebook's first heading;
    the notebook's name where it has none."""
    try:
        cells = json.loads((root / "book" / "notebooks" / f"{name}.ipynb").read_text())["cells"]
        heading = next(line for c in cells if c["cell_type"] == "markdown"
                       for line in "".join(c["source"]).splitlines() if line.startswith("# "))
    except (OSError, ValueError, KeyError, StopIteration):
        return name[3:].replace("_", " ")
    short = heading[2:].split(":")[0]
    return (short.split("?")[0] + "?" if "?" in short else short).strip()


def _deciding_cell(check: dict | None) -> str:
    """“check”: value (outcome; the one-sided 95 % bound of the error its outcome risks), or, uncalibrated, why it
    cannot decide; an open check adds what would decide it."""
    if not check:
        return "–"
    if check.get("power") is None:
        state = f"{check['outcome']}: {check.get('reason', 'not calibrated')}"
    elif check.get("false_pass_upper") is None:  # a page built before the error-type rule
        state = f"{check['outcome']}; power {check['power']:.2f}, size {check['size']:.2f}"
    else:
        state = (f"{check['outcome']}; false pass ≤ {check['false_pass_upper']:.2f}, false fail ≤ "
                 f"{check['false_fail_upper']:.2f} (one-sided 95 %)")
    side = "" if check.get("core", True) else "; side check"
    decide = f"; to decide: {check['to_decide']}" if check["outcome"] == "inconclusive" and check.get("to_decide") else ""
    decide += f", {check['cost']}" if decide and check.get("cost") else ""
    return f"“{check['check']}”: **{check['value']}** ({state}{side}{decide})"


RULES_TABLE = Path("book") / "_generated" / "rules.md"


def write_rules_record(root: Path) -> Path:
    """Write `<root>/book/_generated/rules.md` (not tracked; included by the pre-registration page): every dated entry
    of the repository's notebooks/rules.json, newest first, with its rules hash and paper-profile hash, and whether a
    build under those rules was committed."""
    try:
        record = read_rules()
    except ValueError as err:
        raise BookError(str(err)) from None
    lines = ["| notebook, date | what changed | rules / paper hash | built |", "| --- | --- | --- | --- |"]
    entries = sorted(((e, name) for name, es in record.items() for e in es), key=lambda t: (t[0]["date"], t[1]), reverse=True)
    for e, name in entries:
        cells = (f"{name}, {e['date']}", e["change"], f"{_code(e.get('hash') or '–')} / {_code(e.get('paper') or '–')}",
                 "yes" if e.get("builds_committed") else "no")
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    page = root / RULES_TABLE
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines) + "\n")
    return page


def _jupyter_book() -> list[str]:
    exe = Path(sys.executable).with_name("jupyter-book")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("jupyter-book")
    if not found:
        raise BookError("jupyter-book is not installed in this environment (pip install 'jupyter-book>=1.0.4,<2').")
    return [found]


def _drop_global_plotly(root: Path) -> None:
    """Remove a `<root>/_static/plotly.min.js` that an older build shipped there: Jupyter Book loads every script in
    `_static/` on every page, while the extension `plotly_pages` loads plotly.js only on the pages that draw a figure."""
    (Path(root) / "_static" / "plotly.min.js").unlink(missing_ok=True)


def build_book(root: Path, quiet: bool = False) -> Path:
    """`jupyter-book build root -W --keep-going` with the effective toc; returns the HTML entry page.

    Refuses (BookError, before building) when an executed notebook is not a complete run (`publish.problems`).
    """
    root = Path(root).resolve()
    check_published(sorted((root / "book" / "notebooks").glob("*.ipynb")))
    toc, dropped, added = effective_toc(root)
    for doc in dropped:
        print(f"toc: skipping {doc} (no such page here{' - notebook not executed' if 'notebooks/' in doc else ''})")
    for doc in added:
        print(f"toc: adding {doc} (executed, not listed in _toc.yml)")
    _drop_global_plotly(root)
    write_sources(root)
    write_verdicts(root)
    write_rules_record(root)
    if not (root / EXECUTION).exists():  # built without `glauber-mlm book` (which writes it with what it executed)
        write_execution_page(root)
    build = root / "_build"
    build.mkdir(exist_ok=True)
    toc_path = build / "toc.yml"
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False))
    cmd = _jupyter_book() + ["build", str(root), "--toc", str(toc_path), "-W", "--keep-going", "--all"]
    if quiet:
        cmd.append("-q")
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=root)
    if proc.returncode != 0:
        raise BookError(f"jupyter-book build failed (exit {proc.returncode}); its warnings are printed above.")
    return build / "html" / "index.html"


