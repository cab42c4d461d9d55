"""`glauber-mlm new NN_topic [--exact-only] [--title TITLE] [--root DIR]`: add a result page in one command.

It writes the page and enters it in every register that lists pages by hand:

- `notebooks/NN_topic.py`: the current minimal page (`page_template.PAGE`: claim, parameters, PROFILES, BUDGETS,
  `Run`, the plan cell, one check calibrated on a planted truth and a planted null, `run.conclude`, the rules history
  and `run.finish()`); `--exact-only` writes a page that runs an exact model only and has no model parameter, so
  `book --model M` skips it and the paper dry run loads no hub model for it;
- `tests/test_nb_topic.py`: its smoke test (`page_template.TEST`);
- `_toc.yml`: its entry under Results; `book/intro.md`: its row in the table of claims;
- `notebooks/rules.json`: its first dated entry, with its rules and paper-profile hashes (`record.first_entry`);
- `book/run_it_yourself.md`: its row in the paper profile's plan table, and every row's counts and first times as
  `glauber-mlm plan` prints them at the table's rates (`with_plan_rows`).

Everything else that lists pages reads `notebooks/` (the runner, the plan, the dashboard, the tests). A bad name,
a name, number or test file already taken, or a register it cannot find is refused before anything is written.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

from . import page_template, plan, record
from .errors import BookError
from .parameters import known_notebooks

NAME = re.compile(r"([0-9][0-9])_([a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*)", re.ASCII)  # ASCII digits only
PLAN_TABLE = "| notebook | forward rows (worst case)"  # the header of run_it_yourself.md's plan table
# the rates the plan table states (its "Commands:" paragraph): the GPU column, then the quiet 2-core CPU column
PLAN_TABLE_RATES = {"GPU": lambda: plan.rates_from_tflops([350, 23], 0.005),
                    "quiet": lambda: plan.rates_from_throughput([354], None, 32, 0.0144)}
_DURATION = re.compile(r"[\d.,]+ (?:s|min|h|days)\b")


def registers(root: Path) -> dict[str, Path]:
    """The files `new` writes or edits under the repository `root`, by role."""
    root = Path(root)
    return {"notebooks": root / "notebooks", "tests": root / "tests", "toc": root / "_toc.yml",
            "intro": root / "book" / "intro.md", "rules": root / "notebooks" / "rules.json",
            "plan table": root / "book" / "run_it_yourself.md"}


def check_name(name: str, root: Path) -> None:
    """Refuse (BookError, naming the fix) a name that is not NN_lowercase_words, or whose page, number or test file
    is taken under `root`."""
    where = registers(root)
    taken = known_notebooks(where["notebooks"])
    free = _next_number(taken)
    match = NAME.fullmatch(name)
    if match is None:
        topic = "_".join(re.findall(r"[a-z][a-z0-9]*", name.lower())) or "topic"
        raise BookError(f"{name!r} is not a page name: write NN_topic, two digits, an underscore and lowercase words "
                        f"joined by underscores, e.g. {free}_{topic}.")
    number, topic = match.groups()
    if name in taken:
        raise BookError(f"notebooks/{name}.py exists already: choose another topic, or the next number ({free}_{topic}).")
    other = next((t for t in taken if t[:2] == number), None)
    if other:
        raise BookError(f"page number {number} is taken by {other} (a number names a page's result box and figures, "
                        f"result-{number}): use {free}_{topic}.")
    test = where["tests"] / f"test_nb_{topic}.py"
    if test.exists():
        raise BookError(f"{test} exists already (another page's test): choose another topic.")


def _next_number(taken: list[str]) -> str:
    numbers = [int(t[:2]) for t in taken if re.fullmatch("[0-9][0-9]", t[:2])]
    return f"{max(numbers, default=-1) + 1:02d}"


def new_page(root: Path, name: str, exact_only: bool = False, title: str | None = None,
             date: str | None = None) -> list[Path]:
    """Write page `name` and enter it in every register under the repository `root` (see the module doc); return the
    files written. Nothing is written when a check fails; the page is removed again if a register cannot be edited."""
    root = Path(root)
    where = registers(root)
    missing = [str(p) for p in where.values() if not p.exists()]
    if missing:
        raise BookError(f"{root} is not the repository's layout (missing: {', '.join(missing)}): run `glauber-mlm new` "
                        "in the repository, or pass --root DIR of one.")
    check_name(name, root)
    kind = "exact" if exact_only else "model"
    title = title or name[3:].replace("_", " ").capitalize()
    page = where["notebooks"] / f"{name}.py"
    test = where["tests"] / f"test_nb_{name[3:]}.py"
    page.write_text(page_template.render(page_template.PAGE, name, kind, title))
    try:  # the rules entry and the plan read the page, so it exists while the edits are made, and no longer if one fails
        edits = {where["toc"]: with_toc_entry(where["toc"].read_text(), name),
                 where["intro"]: with_intro_row(where["intro"].read_text(), name, title, kind),
                 where["rules"]: with_rules_entry(where["rules"].read_text(), name, page, date),
                 where["plan table"]: with_plan_rows(where["plan table"].read_text(), where["notebooks"])}
    except (BookError, ValueError) as err:
        page.unlink()
        raise BookError(f"{name}: {err} (nothing was written)") from None
    except BaseException:
        page.unlink()
        raise
    test.write_text(page_template.render(page_template.TEST, name, kind, title))
    for path, text in edits.items():
        path.write_text(text)
    return [page, test, *edits]


def with_toc_entry(toc: str, name: str) -> str:
    """`_toc.yml`'s text with `book/notebooks/NAME` among the Results chapters, in name order."""
    entries = list(re.finditer(r"^([ \t]*)- file: book/notebooks/(\S+)[ \t]*$", toc, re.M))
    if not entries:
        raise BookError("_toc.yml lists no page under Results (no `- file: book/notebooks/...` line): add the "
                        f"Results part with `- file: book/notebooks/{name}`.")
    return _inserted(toc, entries, name, f"{entries[0].group(1)}- file: book/notebooks/{name}")


def with_intro_row(intro: str, name: str, title: str, kind: str) -> str:
    """`book/intro.md`'s text with the page's row in its table of claims (the rows linking `notebooks/NN_....html#
    result-NN`), in name order."""
    rows = list(re.finditer(r"^\|.*?notebooks/(\d\d_[a-z0-9_]+)\.html#result-.*\|[ \t]*$", intro, re.M))
    if not rows:
        raise BookError("book/intro.md has no table row linking a result box (notebooks/NN_topic.html#result-NN): "
                        "restore its table of claims.")
    chain = "the model's chain restricted to its top two candidates at a few sites" if kind == "model" else \
        "an Ising chain"
    row = (f"| (The book's own question: does Glauber dynamics sample the exact law of {chain}?) | The final states "
           "of independent chains against the chain's exact stationary law (TV null test), calibrated on draws from "
           f"that law and from the law at twice the temperature. | <a href=\"notebooks/{name}.html#result-{name[:2]}\">"
           f"{title.lower()}</a> |")
    return _inserted(intro, rows, name, row)


def _inserted(text: str, lines: list[re.Match], name: str, line: str) -> str:
    """`text` with `line` after the last of `lines` (matches of whole lines, group 2 or 1 the page they list) whose
    page sorts before `name`, else before the first of them."""
    before = [m for m in lines if m.group(m.lastindex) < name]
    if before:
        return text[:before[-1].end()] + "\n" + line + text[before[-1].end():]
    return text[:lines[0].start()] + line + "\n" + text[lines[0].start():]


def with_rules_entry(rules: str, name: str, page: Path, date: str | None = None) -> str:
    """notebooks/rules.json's text with the page's first dated entry (`record.first_entry`), dated `date` (today)."""
    record_ = json.loads(rules)
    if not isinstance(record_, dict):
        raise BookError(f"notebooks/rules.json holds a JSON {type(record_).__name__}, not the rules record (an object "
                        "mapping each notebook to its dated entries): restore it with git checkout -- notebooks/rules.json")
    record_[name] = [record.first_entry(page, date or datetime.date.today().isoformat(), (
        "first rules, written by glauber-mlm new: the final states of independent chains against the chain's exact "
        "stationary law (TV null test, p ≥ 0.01 passes), calibrated on i.i.d. draws from that law (truth) and from "
        "the law at twice the temperature (null)"))]
    return json.dumps(record_, indent=2, ensure_ascii=False) + "\n"


def _summary_rows(works: dict[str, list[plan.Work]], rates: plan.Rates) -> list[list[str]]:
    """`plan.summary_table`'s rows as cells, every part at its bound (the table is the worst case, `plan
    --worst-case`): notebook, MLM rows, lengths, sentences, exact rows, FLOPs, time."""
    table, _ = plan.summary_table(works, rates, worst_case=True)
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _column(header: str) -> str | None:
    """Which of the plan's numbers a column of the plan table holds (None: one the plan does not print)."""
    return next((key for key in ("notebook", "forward rows", "lengths", "sentences", "FLOPs", "GPU", "quiet")
                 if key in header), None)


def with_plan_rows(text: str, notebooks_dir: Path) -> str:
    """run_it_yourself.md's text with its plan table (`PLAN_TABLE`) as `glauber-mlm plan --profile paper --worst-case`
    prints it at `PLAN_TABLE_RATES`: a row added for each notebook it lacks ("–" in a column the plan does not print), and in
    every row, the total's included, the rows, sentences and FLOPs as printed and the first time of the GPU and quiet
    cells replaced where it differs from the plan's by more than 5 % (what the plan does not print is kept: a row's
    label and lengths, a range at other rates, the dated calibration's column)."""
    lines = text.splitlines(keepends=True)
    top = next((k for k, line in enumerate(lines) if line.startswith(PLAN_TABLE)), None)
    if top is None:
        raise BookError(f"book/run_it_yourself.md has no plan table (a line starting {PLAN_TABLE!r}): restore it.")
    end = next((k for k in range(top, len(lines)) if not lines[k].startswith("|")), len(lines))
    header = [_column(c) for c in lines[top].strip().strip("|").split("|")]
    works = plan.plan(known_notebooks(notebooks_dir), "paper", notebooks_dir=notebooks_dir)
    printed = {col: {row[0]: row for row in _summary_rows(works, rates())} for col, rates in PLAN_TABLE_RATES.items()}
    listed = {lines[k].strip("|\n ").split("|")[0].split()[0]: k for k in range(top + 2, end)}
    for name, k in listed.items():
        if name in printed["GPU"]:
            lines[k] = _updated_line(lines[k], header, printed, name)
    for name in sorted(set(printed["GPU"]) - set(listed), reverse=True):
        at = max([k for first, k in listed.items() if first < name and first != "**total**"], default=top + 1) + 1
        lines.insert(at, _row([_cell(col, printed, name) for col in header]))
    return "".join(lines)


def stale_plan_rows(root: Path) -> list[str]:
    """The notebooks (and "**total**") whose row of run_it_yourself.md's plan table differs from what
    `with_plan_rows` would write now (a page's work changed since its row was written), or that have no row."""
    path = registers(root)["plan table"]
    text = path.read_text()
    rows = lambda t: {line.strip("|\n ").split("|")[0].split()[0]: line  # noqa: E731
                      for line in t[t.index(PLAN_TABLE):].split("\n\n")[0].splitlines(keepends=True)[2:]}
    before, after = rows(text), rows(with_plan_rows(text, registers(root)["notebooks"]))
    return sorted(name for name in after if before.get(name) != after[name])


REFRESH = "glauber-mlm new --refresh-plan"  # the command that rewrites the plan table's stale rows


def _cell(column: str | None, printed: dict, name: str) -> str:
    """A cell of `name`'s row of the plan table from the plan's printed summary rows."""
    gpu, quiet = printed["GPU"][name], printed["quiet"][name]
    cells = {"notebook": name, "forward rows": gpu[1], "lengths": gpu[2] or "–",
             "sentences": "" if gpu[3] == "0" else gpu[3], "FLOPs": gpu[5], "GPU": gpu[6], "quiet": quiet[6]}
    return cells.get(column, "–")


def _updated_line(line: str, header: list, printed: dict, name: str) -> str:
    """A row of the plan table with its rows, sentences and FLOPs as the plan prints them and the first time of its
    GPU and quiet cells replaced."""
    cells = line.strip().strip("|").split("|")
    for k, column in enumerate(header):
        if column in ("forward rows", "sentences", "FLOPs"):
            cells[k] = _cell(column, printed, name)
        elif column in ("GPU", "quiet"):
            typed, now = _DURATION.search(cells[k]), _cell(column, printed, name)
            if typed is None or abs(_seconds(typed.group()) - _seconds(now)) > 0.05 * _seconds(now):
                cells[k] = _DURATION.sub(now, cells[k], count=1)
    return _row(cells)


def _seconds(duration: str) -> float:
    """'1.5 s', '52.7 min', '3.3 h', '1,380 days' (as `plan.duration` writes them, rounded or not) in seconds."""
    value, unit = duration.replace(",", "").split()
    return float(value) * {"s": 1, "min": 60, "h": 3600, "days": 86400}[unit]


def _row(cells: list[str]) -> str:
    """A Markdown table row of `cells`, each padded by one space (an empty one is a single space)."""
    return "|" + "|".join(f" {c.strip()} " if c.strip() else " " for c in cells) + "|\n"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="glauber-mlm new", description=(
        "Write a new result page, its smoke test, its toc entry, its intro row, its rules entry and its plan-table row."))
    p.add_argument("name", nargs="?", help="the page's name: NN_topic (two digits, lowercase words joined by underscores)")
    p.add_argument("--refresh-plan", action="store_true",
                   help="write no page: rewrite book/run_it_yourself.md's plan table where a page's work changed")
    p.add_argument("--exact-only", action="store_true",
                   help="a page that runs an exact model only: no model parameter (book --model skips it)")
    p.add_argument("--title", help="the page's title [its topic's words]")
    p.add_argument("--root", type=Path, help="the repository to write into [this one]")
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit status 0 when the page was written, 1 when it was refused (the message names the fix)."""
    from .command import default_root

    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv[1:] if argv[:1] == ["new"] else argv)
    root = (args.root or default_root()).resolve()
    if args.refresh_plan:
        return refresh_plan(root)
    if args.name is None:
        print("error: name the page (NN_topic), or give --refresh-plan to rewrite the plan table only.", file=sys.stderr)
        return 2
    try:
        written = new_page(root, args.name, args.exact_only, args.title)
    except BookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("wrote " + ", ".join(str(p.relative_to(root)) for p in written))
    print(f"next: glauber-mlm run {args.name} --profile smoke (a look, in seconds); then make its claim, check, "
          "PROFILES and plan your own, and its row in book/intro.md; when its checks or paper profile change, "
          "tests/test_rules_record.py names the hashes for its entry in notebooks/rules.json (CONTRIBUTING.md, "
          "'Add a notebook').")
    return 0


def refresh_plan(root: Path) -> int:
    """`new --refresh-plan`: rewrite run_it_yourself.md's plan table from the plan, and say which rows changed."""
    try:
        stale = stale_plan_rows(root)
        path = registers(root)["plan table"]
        if stale:
            path.write_text(with_plan_rows(path.read_text(), registers(root)["notebooks"]))
    except (BookError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"rewrote the plan table's rows of {', '.join(stale)} in {path.relative_to(root)}" if stale
          else "the plan table is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
