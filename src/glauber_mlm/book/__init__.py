"""`glauber-mlm run`, `book`, `verify` and `plan`: execute notebooks with papermill into the Jupyter Book, build it,
check that it reproduces, and say beforehand what a run will cost.

    glauber-mlm run NAME [--profile P] [--model M] [--scale S] [-p KEY VALUE ...] [--root DIR | --publish] [--wait]
    glauber-mlm book [--profile cpu] [--model M] [--scale S] [--only NAME ...] [--no-execute] [--force] [--workers N] [--root DIR | --publish] [--wait]
    glauber-mlm verify [--only NAME ...]
    glauber-mlm plan [--profile P] [--model M] [--scale S] [--only NAME ...] [--calibrate | --throughput R | --tflops T]

`run` converts `notebooks/NAME.py` (Jupytext percent format) to a notebook and executes it with
papermill into `<root>/book/notebooks/NAME.ipynb`; the notebook's tables, figures and
provenance.json go to `<root>/book/notebooks/NAME/` (its `output_dir` parameter). `-p` values are
plain data (JSON, or YAML 1.2 without tags: `parameters.parse_value`), so `-p temperatures "[1.0, 2.0]"` passes
a list; a tag (`!!binary`) or a numeral YAML 1.1 reads otherwise (`010`, `1:30`, `0x1F`, `yes`) is refused.

`book` runs every notebook (sorted, or those named by `--only`), writes the execution-statistics
tables `book/_generated/execution.md` (not tracked; included by the page `book/execution.md`) from each
notebook's provenance.json, and builds the book with
`jupyter-book build <root> -W --keep-going` (a warning fails the build). The table of contents
that is built is `_toc.yml` less the pages that do not exist (notebooks not executed yet), plus
any executed notebook `_toc.yml` does not list; it is written to `_build/toc.yml`, and what it
leaves out or adds is printed.
Before any kernel starts, every notebook's parameters are checked against its source (profile, names,
types and signs, model folders). Each notebook executes in `<root>/_build/staging/NAME/` and replaces
its published notebook and results only when it finished; a notebook that fails (or a Ctrl-C, or a
kill) leaves its previous page and results byte-identical, and the build refuses an executed notebook
that is not a complete run. A failed notebook (one that cannot be published too: a full disk, a read-only
folder) does not stop the others; the command then exits 1. One process at a time executes a notebook, and
one builds the book: a second says which process holds `_build/locks/NAME.lock` (or `book.lock`) and exits 1,
or waits with `--wait`. Ctrl-C and SIGTERM end a run in one sentence, with exit status 130 and 143; the
checkpoints stay, so the same command resumes.

Each notebook's kernel runs in its staging folder and gets `output_dir` relative to it; a `--model`
that names a local folder is made absolute first.

The package: `parameters` (sources, profiles, checks before a kernel), `execute` (one notebook through
papermill, with its checkpoint folder), `publish` (staging, the atomic swap, the completeness check), `cache`
(which notebooks must re-execute), `lock` (one run per notebook), `fanout` (notebooks as Dask tasks), `page`
(what the reader sees: folding, downloads, the Colab cell), `prose` (numbers in prose come from cells), `site`
(toc, execution page, build), `verify` (re-execute and compare tables), `plan` (forward rows, FLOPs and time
before a run), `record` (the rules record's hashes), `new` (`glauber-mlm new`: a new page, its test and its entry in
every register that lists pages, from `page_template`), `command` (the CLI).

`--scale S` (0 < S ≤ 1) makes a dry run: each notebook multiplies the budgets it declares (`BUDGETS`: steps,
pairs, chains, contexts …) by S, rounded up and never below a stated least value, and keeps every other parameter
of the profile, so `book --profile paper --scale 0.01` takes the paper run's code path (hub models, MS MARCO,
its grids) in minutes. Its pages, provenance and result boxes say "dry run at scale S"; S is a parameter, so
it is part of the cache key.

A run whose inputs differ from the published pages' (a profile other than the book's own, `cpu`; `--model`;
`--scale` below 1; `--dtype`; a `-p` parameter) is a try, not a publication: without `--root` or `--publish` it
executes and builds in the scratch root `_build/runs/PROFILE-MODEL/` (a slug of both; see `command`) and says so.
A `--profile` that is not a plain name, or that no notebook declares, is refused before it becomes part of a path.

`--root DIR` executes and builds somewhere else than the repository (the tests use a temporary
folder): `_config.yml`, `_toc.yml`, the prose pages `book/*.md` and the model card are copied
there first, after every check of the command passed, and never over a file the book did not write there (or that
was edited since): such a root is refused, naming the files (`site.prepare_root`). The notebooks are always read from
the repository's `notebooks/` (or `--notebooks DIR`).
`book` and `verify` finish or undo a publish that was interrupted between its renames before they read any page, and
say so (`publish.recover_pages`); `book` and the dashboard say when a published page differs from the version
committed in git (`committed`).
"""
from __future__ import annotations

from .command import main
from .errors import BookError, NotebookFailed
from .execute import run_notebook
from .parameters import NOTEBOOKS, REPO, known_notebooks, notebook_source, parse_value, resolve_parameters
from .site import build_book, effective_toc, prepare_root, write_execution_page

__all__ = ["BookError", "NOTEBOOKS", "NotebookFailed", "REPO", "build_book", "effective_toc", "known_notebooks", "main",
           "notebook_source", "parse_value", "prepare_root", "resolve_parameters", "run_notebook", "write_execution_page"]
