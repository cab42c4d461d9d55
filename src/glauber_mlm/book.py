"""`glauber-mlm run` and `glauber-mlm book`: execute notebooks with papermill into the Jupyter Book, then build it.

    glauber-mlm run NAME [--profile P] [--model M] [-p KEY VALUE ...] [--root DIR]
    glauber-mlm book [--profile cpu] [--model M] [--only NAME ...] [--no-execute] [--root DIR]

`run` converts `notebooks/NAME.py` (Jupytext percent format) to a notebook and executes it with
papermill into `<root>/book/notebooks/NAME.ipynb`; the notebook's tables, figures and
provenance.json go to `<root>/book/notebooks/NAME/` (its `output_dir` parameter). `-p` values are
read as YAML, like papermill's `-y`, so `-p temperatures "[1.0, 2.0]"` passes a list.

`book` runs every notebook (sorted, or those named by `--only`), writes the execution-statistics
page `book/execution.md` from each notebook's provenance.json, and builds the book with
`jupyter-book build <root> -W --keep-going` (a warning fails the build). The table of contents
that is built is `_toc.yml` less the pages that do not exist (notebooks not executed yet), plus
any executed notebook `_toc.yml` does not list; it is written to `_build/toc.yml`, and what it
leaves out or adds is printed.
A notebook that fails does not stop the others, nor delete their outputs; the command then exits 1.

Each notebook's kernel runs in the folder of its executed copy, as Jupyter would run it there, and
gets `output_dir` relative to it; a `--model` that names a local folder is made absolute first.

`--root DIR` executes and builds somewhere else than the repository (the tests use a temporary
folder): `_config.yml`, `_toc.yml`, the prose pages `book/*.md` and the model card are copied
there first. The notebooks are always read from the repository's `notebooks/` (or `--notebooks DIR`).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
MODEL_CARD = Path("data") / "models" / "minilm-mlm" / "README.md"
KERNEL = "python3"
GENERATED_PAGES = {"execution.md"}


class BookError(RuntimeError):
    """A failure the command reports in one clear message (no traceback)."""


class NotebookFailed(BookError):
    """A notebook raised while papermill executed it; the message names the cell and the error."""

    def __init__(self, message: str, notebook: Path | None = None):
        super().__init__(message)
        self.notebook = notebook


# --------------------------------------------------------------------------------------------
# executing one notebook


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


def ensure_kernel(name: str = KERNEL) -> None:
    """Make sure a Jupyter kernel `name` exists; install this interpreter's ipykernel under sys.prefix if not."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        from ipykernel.kernelspec import install

        install(prefix=sys.prefix, kernel_name=name)


@contextlib.contextmanager
def _kernel_environment():
    """Environment of the kernels started inside, so that the pages show the notebooks' own output.

    - tqdm's 'IProgress not found' warning is silenced: without ipywidgets, `tqdm.auto` in a kernel
      falls back to the text bar, which is what the book should show anyway (widget outputs would
      need JavaScript from the network to render);
    - Hugging Face's own bars ('Loading weights', downloads) are off unless HF_HUB_DISABLE_PROGRESS_BARS
      is set: they say nothing about the result.
    """
    saved = {k: os.environ.get(k) for k in ("PYTHONWARNINGS", "HF_HUB_DISABLE_PROGRESS_BARS")}
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [saved["PYTHONWARNINGS"], "ignore:IProgress not found"]))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _to_ipynb(src: Path, dest: Path):
    import jupytext
    import nbformat

    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nbformat.write(nb, dest)
    return nb


def _describe_failure(name: str, nb_path: Path, err: Exception) -> str:
    """'NAME failed in its first cell after the parameters (cell 4): ValueError: ...' from the executed notebook."""
    ename = getattr(err, "ename", type(err).__name__)
    evalue = getattr(err, "evalue", str(err))
    where = ""
    try:
        import nbformat

        nb = nbformat.read(nb_path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = [c for c in code if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
        if failed:
            cell = failed[0]
            tags = lambda c: c.get("metadata", {}).get("tags", [])  # noqa: E731
            after = [c for c in code if "parameters" not in tags(c) and "injected-parameters" not in tags(c)]
            k = after.index(cell) + 1 if cell in after else None
            position = "first cell after the parameters" if k == 1 else (f"code cell {k} after the parameters" if k else "parameters cell")
            where = f" in its {position} (notebook cell {nb.cells.index(cell) + 1})"
    except Exception:  # the message is still useful without the cell
        pass
    return f"{name} failed{where}: {ename}: {evalue}\n  executed notebook with the traceback: {nb_path}"


def run_notebook(
    name: str,
    out_notebook: Path,
    output_dir: Path,
    parameters: dict | None = None,
    *,
    notebooks_dir: Path = NOTEBOOKS,
    progress: bool = True,
    log_output: bool = False,
    cwd: Path | None = None,
) -> Path:
    """Jupytext `notebooks_dir/NAME.py` → papermill → `out_notebook`, with `output_dir` passed as a parameter.

    The kernel runs in `cwd` (default: the folder of `out_notebook`), and `output_dir` is passed relative to it.

    Parameters not declared in the notebook's parameters cell are refused before anything runs
    (except `model`, which becomes `models=[model]` for a notebook that declares `models` instead).
    This notebook's previous outputs in `output_dir` are replaced; nothing else is touched.
    Raises `NotebookFailed` (cell and error in the message) when a cell raises.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    src = notebook_source(name, notebooks_dir)
    name = src.stem
    out_notebook, output_dir = Path(out_notebook).resolve(), Path(output_dir).resolve()
    # the kernel runs beside the executed notebook, as Jupyter would run it, and output_dir is given
    # relative to it: the page then shows `output_dir = "NAME"`, not a path of the build machine
    cwd = Path(cwd).resolve() if cwd else out_notebook.parent
    params = {k: v for k, v in (parameters or {}).items()}
    params["output_dir"] = os.path.relpath(output_dir, cwd)
    ensure_kernel()
    with tempfile.TemporaryDirectory() as tmp:
        ipynb = Path(tmp) / f"{name}.ipynb"
        _to_ipynb(src, ipynb)
        declared = pm.inspect_notebook(str(ipynb))
        for key in ("model", "models", "embedder"):
            if key in params:
                params[key] = _absolute_paths(params[key])
        if "model" in params and "model" not in declared and "models" in declared:
            # a notebook that compares several models takes `--model M` as the list [M]
            model = params.pop("model")
            params["models"] = model if isinstance(model, list) else [model]
        unknown = sorted(set(params) - set(declared))
        if unknown:
            raise BookError(f"{name} has no parameter {', '.join(map(repr, unknown))}: its parameters are {', '.join(declared)}.")
        if output_dir.exists():
            shutil.rmtree(output_dir)
        output_dir.mkdir(parents=True)
        out_notebook.parent.mkdir(parents=True, exist_ok=True)
        cwd.mkdir(parents=True, exist_ok=True)
        try:
            with _kernel_environment():
                pm.execute_notebook(
                    str(ipynb), str(out_notebook), parameters=params, kernel_name=KERNEL,
                    progress_bar=progress, log_output=log_output, cwd=str(cwd),
                )
        except PapermillExecutionError as err:
            tidy_streams(out_notebook)
            raise NotebookFailed(_describe_failure(name, out_notebook, err), out_notebook) from None
        except Exception as err:  # kernel died, timeout, ...
            raise NotebookFailed(f"{name} could not be executed: {type(err).__name__}: {err}", out_notebook) from None
    tidy_streams(out_notebook)
    return out_notebook


def _absolute_paths(value):
    """A model given as a folder relative to where the command runs still names it in the kernel (which runs elsewhere)."""
    if isinstance(value, list):
        return [_absolute_paths(v) for v in value]
    if isinstance(value, str) and value and Path(value).expanduser().exists():
        return str(Path(value).expanduser().resolve())
    return value


def _collapse_carriage_returns(text: str) -> str:
    """What a terminal shows: on each line, only the text after its last carriage return (tqdm redraws)."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(next((seg for seg in reversed(line.split("\r")) if seg), "") for line in lines)


def tidy_streams(path: Path) -> None:
    """Merge consecutive stdout/stderr outputs of each cell and keep only the last redraw of progress bars."""
    import nbformat

    path = Path(path)
    if not path.exists():
        return
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            prev = outputs[-1] if outputs else None
            if out.get("output_type") == "stream" and prev is not None and prev.get("output_type") == "stream" and prev.get("name") == out.get("name"):
                prev["text"] += out["text"]
                changed = True
            else:
                outputs.append(out)
        for out in outputs:
            if out.get("output_type") == "stream" and "\r" in out["text"]:
                out["text"] = _collapse_carriage_returns(out["text"])
                changed = True
        cell.outputs = outputs
    if changed:
        nbformat.write(nb, path)


# --------------------------------------------------------------------------------------------
# the book folder: prose, toc, execution page, build


def prepare_root(root: Path) -> Path:
    """Copy the book's config, toc, prose pages (with their images) and the model card into `root`.

    They are refreshed on every call (a build folder holds no edits of its own); a model card missing
    from the repository becomes a one-line placeholder in `root`. Nothing is copied when `root` is
    the repository itself.
    """
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if root == REPO:
        return root
    for fname in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO / fname, root / fname)
    (root / "book").mkdir(exist_ok=True)
    for page in sorted((REPO / "book").iterdir()):  # prose pages and the figures they show
        if page.is_file() and page.name not in GENERATED_PAGES and not page.name.startswith("."):
            shutil.copy2(page, root / "book" / page.name)
    card = root / MODEL_CARD
    card.parent.mkdir(parents=True, exist_ok=True)
    if (REPO / MODEL_CARD).exists():
        shutil.copy2(REPO / MODEL_CARD, card)
    elif not card.exists():  # the model (and its card) is not in this checkout yet
        card.write_text("# minilm-mlm\n\nThe embedded model's card is not in this checkout yet "
                        f"(`{MODEL_CARD.as_posix()}`).\n")
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
    """One row per executed notebook in `<root>/book/notebooks`: profile, model, device, machine, times, commit."""
    import nbformat

    rows = []
    for nb_path in sorted((root / "book" / "notebooks").glob("*.ipynb")):
        name = nb_path.stem
        prov_path = nb_path.with_suffix("") / "provenance.json"
        prov = json.loads(prov_path.read_text()) if prov_path.exists() else {}
        meta = {}
        try:
            meta = nbformat.read(nb_path, as_version=4).metadata.get("papermill", {})
        except Exception:
            pass
        params = prov.get("parameters", {})
        failed = bool(meta.get("exception")) or not prov
        rows.append({
            "notebook": name,
            "status": "failed" if failed else "ok",
            "profile": prov.get("profile") or meta.get("parameters", {}).get("profile", "–"),
            "model": _model_label(params or meta.get("parameters", {})),
            "device": prov.get("device", "–"),
            "machine": prov.get("machine", "–"),
            "wall_time_s": prov.get("wall_time_s"),
            "papermill_s": meta.get("duration"),
            "commit": prov.get("commit", "–"),
            "finished": (meta.get("end_time") or "")[:19].replace("T", " "),
            "versions": prov.get("versions", {}),
        })
    return rows


def write_execution_page(root: Path) -> Path:
    """Write `<root>/book/execution.md`: what ran, where, with which profile and model, and how long it took."""
    rows = execution_rows(root)
    lines = [
        "# Execution statistics",
        "",
        "This page is written by `glauber-mlm book` after it executes the notebooks: one row per executed",
        "notebook, read from the `provenance.json` each notebook saves beside its tables. *Notebook time* is",
        "measured inside the notebook (from its first cell to `run.finish()`); *papermill time* adds the",
        "kernel start and the imports.",
        "",
    ]
    if rows:
        lines += [
            "## What ran",
            "",
            "| notebook | status | profile | model | device | notebook time | papermill time |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in rows:
            link = f"[{r['notebook']}](notebooks/{r['notebook']}.ipynb)"
            cells = [link, r["status"], r["profile"], _code(r["model"]), r["device"],
                     _fmt_seconds(r["wall_time_s"]), _fmt_seconds(r["papermill_s"])]
            lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
        total = sum(float(r["papermill_s"] or 0) for r in rows)
        lines += ["", f"Total papermill time: {_fmt_seconds(total)} for {len(rows)} notebook(s)."]
        lines += [
            "",
            "## Where and when",
            "",
            "| notebook | machine | commit | finished (UTC) |",
            "| --- | --- | --- | --- |",
        ]
        for r in rows:
            cells = [r["notebook"], r["machine"], _code(r["commit"]), r["finished"] or "–"]
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
    page = root / "book" / "execution.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines))
    return page


def _jupyter_book() -> list[str]:
    exe = Path(sys.executable).with_name("jupyter-book")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("jupyter-book")
    if not found:
        raise BookError("jupyter-book is not installed in this environment (pip install 'jupyter-book>=1.0.4,<2').")
    return [found]


def build_book(root: Path, quiet: bool = False) -> Path:
    """`jupyter-book build root -W --keep-going` with the effective toc; returns the HTML entry page."""
    root = Path(root).resolve()
    toc, dropped, added = effective_toc(root)
    for doc in dropped:
        print(f"toc: skipping {doc} (no such page here{' - notebook not executed' if 'notebooks/' in doc else ''})")
    for doc in added:
        print(f"toc: adding {doc} (executed, not listed in _toc.yml)")
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


# --------------------------------------------------------------------------------------------
# command line


def default_root() -> Path:
    cwd = Path.cwd()
    return cwd if (cwd / "_config.yml").exists() and (cwd / "notebooks").is_dir() else REPO


def _parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"glauber-mlm {command}")
    if command == "run":
        p.description = "Execute one notebook with papermill into <root>/book/notebooks/NAME.ipynb."
        p.add_argument("name", help="notebook name, e.g. 02_high_temperature_mixing")
        p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                       help="a notebook parameter; VALUE is read as YAML (numbers, lists, null)")
        p.add_argument("--log-output", action="store_true", help="also stream the notebook's printed output")
    else:
        p.description = "Execute the notebooks for a profile and build the Jupyter Book (warnings are errors)."
        p.add_argument("--only", nargs="+", metavar="NAME", help="execute only these notebooks (others already executed stay in the book)")
        p.add_argument("--no-execute", action="store_true", help="build from the notebooks already executed")
    p.add_argument("--profile", default="cpu" if command == "book" else None,
                   help="smoke (tests) | cpu (embedded model, offline) | paper (GPU, hub models)" + (" [cpu]" if command == "book" else " [the notebook's default]"))
    p.add_argument("--model", help="a hub name or local folder for every notebook (default: the profile's model)")
    p.add_argument("--root", type=Path, help="where book/notebooks and _build go [the repository]")
    p.add_argument("--notebooks", type=Path, default=None, help=f"where the notebooks' .py files are [{NOTEBOOKS}]")
    return p


def _common_parameters(args) -> dict:
    params = {}
    if args.profile is not None:
        params["profile"] = args.profile
    if args.model is not None:
        params["model"] = args.model
    return params


def _run(args) -> int:
    root = prepare_root(args.root or default_root())
    nb_dir = args.notebooks or NOTEBOOKS
    name = notebook_source(args.name, nb_dir).stem
    params = _common_parameters(args)
    for key, value in args.parameter:
        params[key] = parse_value(value)
    out_nb = root / "book" / "notebooks" / f"{name}.ipynb"
    started = time.time()
    run_notebook(name, out_nb, out_nb.with_suffix(""), params, notebooks_dir=nb_dir, log_output=args.log_output)
    print(f"{name}: executed in {time.time() - started:.0f} s -> {out_nb}\n  tables and figures: {out_nb.with_suffix('')}")
    return 0


def _book(args) -> int:
    root = prepare_root(args.root or default_root())
    nb_dir = args.notebooks or NOTEBOOKS
    names = [notebook_source(n, nb_dir).stem for n in args.only] if args.only else known_notebooks(nb_dir)
    failures: list[str] = []
    started = time.time()
    if not args.no_execute:
        if not names:
            print(f"no notebooks in {nb_dir}: building the prose pages only")
        params = _common_parameters(args)
        for k, name in enumerate(names, 1):
            print(f"[{k}/{len(names)}] {name} (profile {args.profile}{', model ' + args.model if args.model else ''})", flush=True)
            out_nb = root / "book" / "notebooks" / f"{name}.ipynb"
            t0 = time.time()
            try:
                run_notebook(name, out_nb, out_nb.with_suffix(""), params, notebooks_dir=nb_dir)
                print(f"[{k}/{len(names)}] {name}: {time.time() - t0:.0f} s", flush=True)
            except BookError as err:
                print(f"error: {err}", file=sys.stderr, flush=True)
                failures.append(name)
    page = write_execution_page(root)
    print(f"wrote {page}")
    try:
        html = build_book(root)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"\nbook built in {time.time() - started:.0f} s: {html}")
    if failures:
        print(f"error: {len(failures)} notebook(s) failed: {', '.join(failures)} (their pages show the traceback)", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("run", "book"):
        print("usage: glauber-mlm run NAME [options] | glauber-mlm book [options]", file=sys.stderr)
        return 2
    command = argv[0]
    args = _parser(command).parse_args(argv[1:])
    try:
        return _run(args) if command == "run" else _book(args)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
