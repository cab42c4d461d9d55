"""`glauber-mlm run` and `glauber-mlm book`: the command line over `execute` and `site`.

Every notebook's parameters are checked before any kernel starts; `book` re-executes only the notebooks
whose inputs changed (see `cache`; `--force` re-executes all, `--dtype` those built without that dtype) and says
where and in which dtype each reused page was built (see `reuse`); each executes in `<root>/_build/staging/NAME/`
and is published only when it finished (see `publish`). `book --workers N` or `--scheduler ADDRESS` executes
them as Dask tasks (see `fanout`) instead of one after the other; the rest of `book` is the same.

Trying is not publishing: a `run` or `book` whose inputs differ from the published pages' (`trial`: a profile other
than the book's own, `BOOK_PROFILE`; `--model`; `--scale` below 1; `--dtype`; `-p`) writes to a scratch root,
`<root>/_build/runs/PROFILE-MODEL/` (`scratch_root`), and says where; the published pages in `<root>/book/notebooks/`
are untouched unless `--publish` is given. `--root DIR` writes to DIR. Every check (the notebook's name, the profile's,
the parameters) comes before the first folder is written.
"""
from __future__ import annotations

import argparse
import functools
import gc
import logging
import re
import signal
import sys
import time
import traceback
from pathlib import Path

from ..contract import FORWARD_DTYPES
from .committed import differs_from_git, differs_line
from .errors import BookError
from . import cache, fanout, lock, publish, reuse
from .execute import check_syntax, prepare_parameters, run_notebook
from .parameters import (NOTEBOOKS, REPO, declared_profiles, known_notebooks, notebook_source, parse_value,
                         takes_model)
from .site import build_book, prepare_root, write_execution_page
from .verify import verify


def staging_dir(root: Path) -> Path:
    """Where attempts execute before they are published (a failed attempt stays here, with its traceback)."""
    return Path(root) / "_build" / "staging"


BOOK_PROFILE = "cpu"  # the profile of the published book (`book`'s default): a run of another is a try


def default_root() -> Path:
    cwd = Path.cwd()
    return cwd if (cwd / "_config.yml").exists() and (cwd / "notebooks").is_dir() else REPO


def _slug(text: str, empty: str) -> str:
    """`text` as a folder name: runs of characters other than letters, digits, '.', '_' and '-' become '_', and no
    leading or trailing dot, so that it never names a parent folder or a hidden one."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or empty


def model_label(model: str | None) -> str:
    """A model as a folder name: the last part of its hub name or path ('roberta-base', 'my-model'); 'default' for
    the profile's own."""
    if model is None:
        return "default"
    return _slug(re.split(r"[/\\]", str(model).rstrip("/\\"))[-1], "model")


def scratch_root(root: Path, profile: str, model: str | None) -> Path:
    """Where a try (`is_try`) writes its book: `<root>/_build/runs/PROFILE-MODEL/`, a slug of both."""
    return Path(root) / "_build" / "runs" / f"{_slug(profile, 'profile')}-{model_label(model)}"


PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # a PROFILES key the command line may name


def check_profile_name(profile: str | None, names: list[str], nb_dir: Path) -> None:
    """Refuse, before it becomes part of a path, a `--profile` that is not a plain name, or that none of the notebooks
    `names` declares (each notebook's own check names its profiles)."""
    if profile is None:
        return
    if not PROFILE_NAME.fullmatch(profile):
        raise BookError(f"--profile {profile!r} is not a profile's name (letters, digits, '_' and '-', such as smoke, "
                        "cpu or paper): nothing was written.")
    sources = [notebook_source(name, nb_dir) for name in names]
    for src in sources:
        check_syntax(src)
    declared = {key for src in sources for key in (declared_profiles(src) or {})}
    if names and declared and profile not in declared:
        raise BookError(f"unknown profile {profile!r}: the notebooks declare {', '.join(sorted(declared))}; "
                        "nothing was written.")


def trial(args) -> list[str]:
    """How `run`/`book` differs from the published pages' inputs: a profile other than `BOOK_PROFILE`, `--model`,
    `--scale` below 1, `--dtype`, a `-p` parameter ([]: it runs what is published)."""
    differs = []
    if args.profile is not None and args.profile != BOOK_PROFILE:
        differs.append(f"profile {args.profile}")
    if args.model is not None:
        differs.append(f"model {args.model}")
    if getattr(args, "scale", None) is not None and args.scale != 1:
        differs.append(f"scale {args.scale:g}")
    if getattr(args, "dtype", None) is not None:
        differs.append(f"dtype {args.dtype}")
    differs += [f"-p {key} {value}" for key, value in getattr(args, "parameter", None) or []]
    return differs


def is_try(args) -> bool:
    """Whether `run`/`book` is trying rather than publishing: its inputs differ from the published pages' (`trial`)."""
    return bool(trial(args))


def target_root(args) -> Path:
    """The root `run`/`book` writes to: `--root`; else, for a try without `--publish`, its `scratch_root`; else the
    book's own root (`default_root`)."""
    if args.root is not None:
        return Path(args.root)
    if is_try(args) and not args.publish:
        return scratch_root(default_root(), args.profile or BOOK_PROFILE, args.model)
    return default_root()


def writable_root(args) -> Path:
    """`target_root`, prepared (`site.prepare_root`) unless it is the book's own root (`default_root`: the repository,
    or the book the command runs in), whose config and prose pages are its own."""
    root = target_root(args)
    return default_root().resolve() if root == default_root() else prepare_root(root)


def finish_publishes(root: Path) -> None:
    """Finish or undo, before any page is read, each publish into `root` that was interrupted (`publish.recover_pages`),
    and say so."""
    for line in publish.recover_pages(root / "book" / "notebooks", lock.lock_dir(staging_dir(root))):
        print(line, flush=True)


def say_where(args, root: Path) -> None:
    """Tell a try where it writes, and how to publish instead (nothing for a run that publishes)."""
    if args.root is None and is_try(args) and not args.publish:
        print(f"trying, not publishing ({', '.join(trial(args))}): writing to {root}; the published pages in "
              f"{default_root() / 'book' / 'notebooks'} are untouched (--publish replaces them)", flush=True)


def _parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"glauber-mlm {command}")
    if command == "run":
        p.description = "Execute one notebook with papermill into <root>/book/notebooks/NAME.ipynb."
        p.add_argument("name", help="notebook name, e.g. 02_high_temperature_mixing")
        p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                       help="a notebook parameter; VALUE is plain data, as JSON or YAML 1.2 without tags "
                            "(12, 0.5, [8, 16], null, true, my-folder); 010, 1:30, 0x1F and yes are refused")
        p.add_argument("--log-output", action="store_true", help="also stream the notebook's printed output")
    else:
        p.description = "Execute the notebooks for a profile and build the Jupyter Book (warnings are errors)."
        p.add_argument("--only", nargs="+", metavar="NAME", help="execute only these notebooks (others already executed stay in the book)")
        p.add_argument("--no-execute", action="store_true", help="build from the notebooks already executed")
        p.add_argument("--force", action="store_true", help="re-execute every notebook, even those whose inputs are unchanged")
        p.add_argument("--workers", type=int, metavar="N",
                       help="execute the notebooks as Dask tasks on a local cluster of N worker processes [1: one after the other]")
        p.add_argument("--scheduler", metavar="ADDRESS",
                       help="execute the notebooks as Dask tasks on an existing cluster, e.g. tcp://host:8786 (workers with --nthreads 1)")
        p.add_argument("--gpus-per-task", type=int, metavar="K",
                       help="GPUs each Dask task asks for (Dask resource GPU) [1 on a local cluster when CUDA is available, else 0]")
    p.add_argument("--profile", default=BOOK_PROFILE if command == "book" else None,
                   help="smoke (tests) | cpu (embedded model, offline) | paper (GPU, hub models)" + (" [cpu]" if command == "book" else " [the notebook's default]"))
    p.add_argument("--model", help="a hub name or local folder for every notebook (default: the profile's model)")
    p.add_argument("--scale", type=float, metavar="S",
                   help="a dry run: every notebook's budgets (steps, pairs, chains, contexts …, its BUDGETS) times S, "
                        "0 < S ≤ 1, rounded up; all else as in the profile; its pages say 'dry run at scale S' [1]")
    p.add_argument("--dtype", choices=FORWARD_DTYPES,
                   help="the chains' forward dtype in every notebook, a parameter like --scale (pages built without it "
                        "re-execute) [bf16 where the device runs it natively, else fp32]; float32 on a machine with "
                        "native bf16 rebuilds an fp32 book (a try, in the scratch root, unless --publish)")
    p.add_argument("--root", type=Path, help="where book/notebooks and _build go, a new folder or one the book prepared "
                   f"[the repository; for a try (a profile other than {BOOK_PROFILE}, --model, --scale, --dtype, -p): "
                   "the scratch root _build/runs/PROFILE-MODEL/]")
    p.add_argument("--publish", action="store_true",
                   help=f"with a profile other than {BOOK_PROFILE}, a --model, --scale, --dtype or -p, replace the "
                        "published pages in book/notebooks/ instead of writing to the scratch root")
    p.add_argument("--notebooks", type=Path, default=None, help=f"where the notebooks' .py files are [{NOTEBOOKS}]")
    p.add_argument("--wait", action="store_true",
                   help="when another process is executing the same notebook (or building the book), wait for it "
                        "instead of exiting with an error")
    return p


def _verify_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glauber-mlm verify", description=(
        "Re-execute the published notebooks in a scratch folder with their recorded parameters and compare every table."))
    p.add_argument("--only", nargs="+", metavar="NAME", help="verify only these notebooks")
    p.add_argument("--rtol", type=float, default=0.0, help="relative tolerance for numbers [0: exact, same kind of machine]")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance for numbers [0]")
    p.add_argument("--scratch", type=Path, help="where the re-execution goes [a new temporary folder]")
    p.add_argument("--root", type=Path, help="where the published book/notebooks are [the repository]")
    p.add_argument("--notebooks", type=Path, default=None, help=f"where the notebooks' .py files are [{NOTEBOOKS}]")
    return p


def _common_parameters(args) -> dict:
    params = {}
    if args.profile is not None:
        params["profile"] = args.profile
    if args.model is not None:
        params["model"] = args.model
    if args.scale is not None:  # a papermill parameter like the others, so the cache key includes it
        params["scale"] = args.scale
    if args.dtype is not None:  # likewise
        params["dtype"] = args.dtype
    return params


def _run(args) -> int:
    nb_dir = args.notebooks or NOTEBOOKS
    name = notebook_source(args.name, nb_dir).stem
    check_profile_name(args.profile, [name], nb_dir)
    params = _common_parameters(args)
    for key, value in args.parameter:
        params[key] = parse_value(value, key)
    prepare_parameters(notebook_source(name, nb_dir), params)  # every check before a folder is written
    root = writable_root(args)
    say_where(args, root)
    out_nb = root / "book" / "notebooks" / f"{name}.ipynb"
    started = time.time()
    run_notebook(name, out_nb, out_nb.with_suffix(""), params, notebooks_dir=nb_dir, staging=staging_dir(root),
                 log_output=args.log_output, wait=args.wait)
    print(f"{name}: executed in {time.time() - started:.0f} s -> {out_nb}\n  tables and figures: {out_nb.with_suffix('')}")
    print(see_it(root, name))
    return 0


def see_it(root: Path, name: str) -> str:
    """'  to see it: glauber-mlm book --no-execute --root ROOT, then open ROOT/_build/html/book/notebooks/NAME.html':
    the one command that builds a run's page as HTML (with the other pages its root holds) and where it lands."""
    root = Path(root).resolve()
    build = "glauber-mlm book --no-execute" + ("" if root == default_root().resolve() else f" --root {root}")
    return f"  to see it: {build}, then open {root / '_build' / 'html' / 'book' / 'notebooks' / f'{name}.html'}"


def _published(root: Path, name: str) -> Path:
    """Where `name`'s executed notebook is published (its results folder is beside it, without the suffix)."""
    return root / "book" / "notebooks" / f"{name}.ipynb"


def _why_execute(args, root: Path, nb_dir: Path, name: str, params: dict) -> str | None:
    """Why `name` executes in this build ('--force', or what changed); None when its published page is reused."""
    if args.force:
        return "--force"
    return cache.stale_reason(notebook_source(name, nb_dir), params, _published(root, name))


def _announce(args, root: Path, label: str, name: str, why: str | None) -> None:
    """'[k/n] NAME: reused ..., built in DTYPE on MACHINE' or '[k/n] NAME (profile ...; executing: WHY)'."""
    if why is None:
        print(f"{label} {name}: {reuse.reused_line(_published(root, name), args.dtype or reuse.machine_dtype())}",
              flush=True)
    else:
        scale = f", dry run at scale {args.scale:g}" if args.scale is not None and args.scale < 1 else ""
        print(f"{label} {name} (profile {args.profile}{scale}{', model ' + args.model if args.model else ''}; "
              f"executing: {why})", flush=True)


def _serial(args, root: Path, nb_dir: Path, names: list[str], params: dict) -> tuple[set[str], list[str]]:
    """Execute the stale notebooks one after the other in this process; (executed, failed) names."""
    common = _common_parameters(args)
    failures: list[str] = []
    executed: set[str] = set()
    for k, name in enumerate(names, 1):
        out_nb = _published(root, name)
        why = _why_execute(args, root, nb_dir, name, params[name])
        _announce(args, root, f"[{k}/{len(names)}]", name, why)
        if why is None:
            continue
        t0 = time.time()
        try:
            run_notebook(name, out_nb, out_nb.with_suffix(""), common, notebooks_dir=nb_dir, staging=staging_dir(root),
                         wait=args.wait)
            executed.add(name)
            print(f"[{k}/{len(names)}] {name}: {time.time() - t0:.0f} s", flush=True)
        except BookError as err:
            print(f"error: {err}", file=sys.stderr, flush=True)
            failures.append(name)
    return executed, failures


def _fans_out(args) -> bool:
    """Whether the notebooks run as Dask tasks (--workers N > 1 or --scheduler); the options checked first."""
    if args.workers is not None and args.workers < 1:
        raise BookError(f"--workers must be >= 1, got {args.workers}.")
    if args.workers is not None and args.scheduler:
        raise BookError("--workers starts a local cluster and --scheduler uses an existing one: give only one of them.")
    fans_out = bool(args.scheduler) or (args.workers or 1) > 1
    if args.gpus_per_task is not None and not fans_out:
        raise BookError("--gpus-per-task is for Dask tasks: add --workers N (N > 1) or --scheduler ADDRESS.")
    return fans_out


def _fan_out(args, root: Path, nb_dir: Path, names: list[str], params: dict) -> tuple[set[str], list[str]]:
    """Execute the stale notebooks as Dask tasks (see `fanout`); (executed, failed) names."""
    todo = []
    for k, name in enumerate(names, 1):
        why = _why_execute(args, root, nb_dir, name, params[name])
        _announce(args, root, f"[{k}/{len(names)}]", name, why)
        if why is not None:
            todo.append(name)
    executed: set[str] = set()
    failures: list[str] = []
    if not todo:
        return executed, failures
    gpus = fanout.gpus_per_task(args.gpus_per_task, local=not args.scheduler)
    task = functools.partial(fanout.execute_notebook, root=root, notebooks_dir=Path(nb_dir).resolve(),
                             parameters=params, staging=staging_dir(root), wait=args.wait)
    where = args.scheduler or f"a local cluster of {args.workers} worker processes"
    print(f"executing {len(todo)} notebook(s) on {where}" + (f", {gpus} GPU(s) per task" if gpus else ""), flush=True)
    with fanout.dask_client(args.workers, args.scheduler, gpus) as client:
        results = fanout.completed(client, todo, task, resources={"GPU": gpus} if gpus else None)
        for done, (name, seconds, error) in enumerate(results, 1):
            if error is None:
                executed.add(name)
                print(f"[{done}/{len(todo)} done] {name}: {seconds:.0f} s", flush=True)
            else:
                print(f"error: {error}", file=sys.stderr, flush=True)
                failures.append(name)
    return executed, sorted(failures, key=names.index)


def _book(args) -> int:
    fans_out = _fans_out(args)
    nb_dir = args.notebooks or NOTEBOOKS
    names = [notebook_source(n, nb_dir).stem for n in args.only] if args.only else known_notebooks(nb_dir)
    check_profile_name(args.profile, names, nb_dir)
    names = model_pages(names, nb_dir, args.model)
    # every notebook's parameters are checked before a folder is written and the first kernel (or Dask task) starts
    common = _common_parameters(args)
    params = {} if args.no_execute else {name: prepare_parameters(notebook_source(name, nb_dir), common) for name in names}
    root = writable_root(args)
    say_where(args, root)
    # one build at a time: a second would rewrite the execution page and _build/html under the first
    with lock.held(lock.lock_dir(staging_dir(root)) / "book.lock", f"the book in {root}", args.wait):
        finish_publishes(root)
        return _build(args, root, fans_out, names, params)


def model_pages(names: list[str], nb_dir: Path, model: str | None) -> list[str]:
    """The notebooks of `names` that a `--model` applies to (all of them without one); each page it does not apply
    to (an exact-model page: no `model` parameter) is named, and left out of this build."""
    if model is None:
        return names
    kept = [name for name in names if takes_model(notebook_source(name, nb_dir))]
    for name in sorted(set(names) - set(kept)):
        print(f"{name}: --model does not apply (the page runs exact models only, it has no model parameter): "
              "not executed in this build", flush=True)
    return kept


def _flag_stale_plan(root: Path) -> None:
    """Say when run_it_yourself.md's plan table no longer matches the pages' work (a page edited since `new` wrote
    its row), and the command that rewrites it; a book without that page has nothing to flag."""
    from .new import REFRESH, registers, stale_plan_rows

    if not registers(root)["plan table"].is_file():
        return
    try:
        stale = stale_plan_rows(root)
    except (BookError, OSError, ValueError) as err:
        print(f"note: the plan table in book/run_it_yourself.md could not be checked ({err})", flush=True)
        return
    if stale:
        print(f"note: book/run_it_yourself.md's plan table is stale for {', '.join(stale)} (their work changed since "
              f"the rows were written): {REFRESH} rewrites them", flush=True)


def _build(args, root: Path, fans_out: bool, names: list[str], params: dict) -> int:
    """`book` once it holds the book's lock: execute what is stale, write the execution page, build."""
    nb_dir = args.notebooks or NOTEBOOKS
    failures: list[str] = []
    executed: set[str] = set()
    started = time.time()
    if not args.no_execute:
        if not names:
            print(f"no notebooks in {nb_dir}: building the prose pages only")
        executed, failures = (_fan_out if fans_out else _serial)(args, root, nb_dir, names, params)
        reused = [name for name in names if name not in executed and name not in failures]
        if reused:
            print(reuse.advice(reused, root, args.dtype or reuse.machine_dtype(), args.profile, args.model,
                               args.scale or 1.0, nb_dir), flush=True)
        for name, files in differs_from_git(root, reused).items():
            print(differs_line(name, files), flush=True)
    page = write_execution_page(root, executed)
    print(f"wrote {page}")
    _flag_stale_plan(root)
    try:
        html = build_book(root)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"\nbook built in {time.time() - started:.0f} s: {html}")
    if failures:
        print(f"error: {len(failures)} notebook(s) failed: {', '.join(failures)} (their previous pages are kept; the failed attempts are in {staging_dir(root)})", file=sys.stderr)
        return 1
    return 0


def _verify(args) -> int:
    root = (args.root or default_root()).resolve()
    finish_publishes(root)
    differences = verify(root, args.notebooks or NOTEBOOKS, args.only, args.scratch, args.rtol, args.atol)
    if differences:
        print(f"error: {len(differences)} file(s) differ from the published ones or are missing or extra:\n  "
              + "\n  ".join(differences), file=sys.stderr)
        return 1
    print("every published file was reproduced (tables, result.json, checks.csv; figures by presence)")
    return 0


COMMANDS = {"run": _run, "book": _book, "verify": _verify}


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a scheduler's stop), raised where the main thread is, as Ctrl-C raises KeyboardInterrupt:
    papermill then shuts the kernel down on its way out, as it does on Ctrl-C."""


def _terminate(signum, frame) -> None:
    logging.disable(logging.CRITICAL)  # see `_interrupt`
    raise Terminated


def _interrupt(signum, frame) -> None:
    """Ctrl-C: the command stops its kernel itself, so what the kernel's client logs of that death (nbclient's "Kernel
    died", asyncio's "Task exception was never retrieved" with its traceback) is not news: logging is off until the
    command has said its one sentence and collected the abandoned tasks (`_quiet_exit`)."""
    logging.disable(logging.CRITICAL)
    raise KeyboardInterrupt


def _quiet_exit(stop: BaseException) -> None:
    """Free what the stopped run left (the finished frames of `stop`'s traceback hold its client's failed tasks, which
    log their error when freed) while logging is off, then log again."""
    traceback.clear_frames(stop.__traceback__)
    gc.collect()
    logging.disable(logging.NOTSET)


def _stopped(command: str, args, terminated: bool) -> str:
    """The one sentence a run stopped by Ctrl-C or SIGTERM ends with: what is saved and how to resume."""
    how = "SIGTERM" if terminated else "Ctrl-C"
    if command == "verify":
        return f"verify stopped by {how}; nothing was published: rerun the same command to verify again."
    checkpoints = staging_dir(target_root(args).resolve()).parent / "checkpoints"
    if checkpoints.is_dir() and any(p.is_file() for p in checkpoints.rglob("*")):
        return (f"{command} stopped by {how}: every page published before is kept and the chains computed so far are "
                f"saved in {checkpoints}, so rerunning the same command resumes from them.")
    return (f"{command} stopped by {how}: every page published before is kept and no chain had saved a checkpoint "
            f"yet (in {checkpoints}), so rerunning the same command starts this run afresh.")


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 done, 1 an error (reported in one message), 2 usage, 130 Ctrl-C, 143 SIGTERM."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: glauber-mlm run NAME [options] | glauber-mlm book [options] | glauber-mlm verify [options]", file=sys.stderr)
        return 2
    command = argv[0]
    args = (_verify_parser() if command == "verify" else _parser(command)).parse_args(argv[1:])
    on_sigterm = signal.signal(signal.SIGTERM, _terminate)
    on_sigint = signal.getsignal(signal.SIGINT)
    if on_sigint is signal.default_int_handler:  # a SIGINT ignored by whoever started the command stays ignored
        signal.signal(signal.SIGINT, _interrupt)
    try:
        return COMMANDS[command](args)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as stop:  # 128 + the signal's number, as a shell reports a process it stopped
        print(_stopped(command, args, isinstance(stop, Terminated)), file=sys.stderr)
        _quiet_exit(stop)
        return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, on_sigterm)
        if on_sigint is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)


if __name__ == "__main__":
    sys.exit(main())
