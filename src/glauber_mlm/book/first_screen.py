"""The intro's first screen: does the paper hold? One line per claim, read from each page's result.json.

Above the claims, one paragraph says what the verdicts are about (`about`): the model(s) the pages ran, with their
size and held-out top-1 accuracy read from the embedded model's metrics.json, the scale the pages ran at against the
`paper` profile's (steps, chains, tokens, from each page's provenance.json and its notebook's profiles), and the
paper's models that were not run. Each line gives the claim (its first clause, from result.json's `claim`), the
verdict as a coloured mark and its word (✓ reproduced / passes, ✗ not reproduced / fails, ? inconclusive) with its
scope ("on minilm-mlm at `cpu` scale"), the number the verdict rests on as "value — what it is — threshold" (the
deciding check's statistic and threshold from the page's checks.csv) and whether its error bounds let it decide,
whether the page's rules were stated before the run or revised after outcomes (with the outcome before, from
notebooks/rules.json: `history.Provenance`), and, for an open check, what would decide it (`deciding.to_decide`).
A page whose claim another page tests on the model's own chain links that reading (`ELSEWHERE`). The paper's claims
come first; the book's own questions (`question: "book"`) follow apart; the rule in force (`verdict.RULE`) closes
it. Every number is one of the pages' files, except the limits at which an error bound lets a check decide
(`checks.FALSE_PASS_MAX`, `checks.FALSE_FAIL_MAX`), which the rule states. Its glossary terms are linked when the
book is built (`page_links`, as on the result pages).

The module is a Sphinx extension (listed in _config.yml's `sphinx: extra_extensions`): when a build starts it writes
the table (`write_first_screen`) to book/_generated/first_screen.md (not tracked), which book/intro.md includes, so
that every build of the book, however it is started, shows the result pages it holds at that moment.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..pages.checks import FALSE_FAIL_MAX, FALSE_PASS_MAX
from ..pages.history import Provenance, page_provenance
from ..pages.verdict import RULE, WORDS
from .parameters import NOTEBOOKS, REPO, declared_profiles
from .site import COMMITTED_NOTE, GENERATED, _short_title, scope_of, shown_results

FIRST_SCREEN = GENERATED / "first_screen.md"

MARKS = {"positive": "✓", "negative": "✗", "open": "?", "other": "·"}
POSITIVE = {words[0] for words in WORDS.values()}   # reproduced, passes
NEGATIVE = {words[1] for words in WORDS.values()}   # not reproduced, fails
LABEL_WORDS = 3  # a check's text before its colon of at most this many words is a label ("random scan"), not a statement
HEADLINE = 110  # characters of a claim's first clause shown on the first screen
HEADER = "| {verdict} | {what} | the number it rests on |\n| --- | --- | --- |"
EMBEDDED = REPO / "data" / "models"  # the embedded models' folders, each with its metrics.json
# the parameters that set a page's scale, by what they count (a page's profiles name some of them)
SCALE = {"steps per chain or coupling budget": ("steps", "budget", "scaling_budget"),
         "chains or coupled pairs per cell": ("chains", "pairs", "scaling_pairs", "starts"),
         "tokens per sequence": ("length", "lengths", "scaling_lengths")}
# a page whose claim another page reads on the model's own chain: {page: (the other page, a word of its check)}
ELSEWHERE = {"07_how_long_must_i_run": ("08_exact_answers", "L-lag")}


def tone(word: str) -> str:
    """'positive', 'negative', 'open' or 'other' (a smoke or dry run, a page not shown): the colour of a verdict."""
    if word in POSITIVE:
        return "positive"
    if word in NEGATIVE:
        return "negative"
    return "open" if word.startswith("inconclusive") else "other"


def mark(word: str, where: str = "") -> str:
    """The verdict as a coloured mark and its word, joined so that the mark never ends a line, then its scope `where`
    (in place of "at this scale"): `<span class="verdict-mark positive">✓&nbsp;reproduced</span> on minilm-mlm at
    `cpu` scale` (coloured by _static/book.css)."""
    kind = tone(word)
    shown = word.removesuffix(" at this scale") if where else word
    return f'<span class="verdict-mark {kind}">{MARKS[kind]}&nbsp;{shown}</span>' + (f" {where}" if where else "")


def headline(claim: str) -> str:
    """A claim's first clause: up to its first colon or semicolon, without a leading parenthetical ("(The book's
    own question.)"), a parenthetical list ("(Glauber sampler, coupling times, …)") or a citation of the paper's
    figures ("(paper Fig 5)"); past `HEADLINE` characters it ends at a word with "…" (the claim is on its page)."""
    text = re.sub(r"^\([^)]*\)\s*", "", claim.strip())
    text = re.split(r":\s|;\s", text, maxsplit=1)[0]
    text = re.sub(r"\s*\((paper Figs? |[^)]*, )[^)]*\)", "", text).rstrip(". ")
    return text if len(text) <= HEADLINE else text[:HEADLINE].rsplit(" ", 1)[0].rstrip(",;") + " …"


def _percent(bound: float) -> str:
    """An upper bound as a whole percentage, rounded up (0.1014 → '11 %', never '10 %': a bound above a limit must
    read above it)."""
    return f"{math.ceil(round(100 * bound, 6)):.0f} %"


def judgement(deciding: Mapping) -> str:
    """Whether the deciding check decides, in plain words: 'passes (false-pass risk ≤ 7 %)', 'the rule says fail, but
    its false-fail risk may reach 67 % (limit 20 %)' (the one-sided 95 % bounds), or why it is undecided."""
    outcome, reason = deciding["outcome"], str(deciding.get("reason", ""))
    false_pass, false_fail = deciding.get("false_pass_upper"), deciding.get("false_fail_upper")
    if outcome == "pass":
        text = "passes" + (f" (false-pass risk ≤ {_percent(false_pass)})" if false_pass is not None else "")
    elif outcome == "fail":
        text = "fails" + (f" (false-fail risk ≤ {_percent(false_fail)})" if false_fail is not None else "")
    elif reason.startswith("rule says pass") and false_pass is not None:
        text = (f"the rule says pass, but its false-pass risk may reach {_percent(false_pass)} "
                f"(limit {_percent(FALSE_PASS_MAX)})")
    elif reason.startswith("rule says fail") and false_fail is not None:
        text = (f"the rule says fail, but its false-fail risk may reach {_percent(false_fail)} "
                f"(limit {_percent(FALSE_FAIL_MAX)})")
    else:
        text = f"undecided: {reason or 'no reason recorded'}"
    return text if deciding.get("core", True) else f"{text}; a side check, beside the verdict"


def statement(check: str) -> str:
    """What a check tests, without the rule that follows its statement's colon ("R̂ and coupling agree at 1.01: R̂ ≥
    1.01 at every slow τ …" → "R̂ and coupling agree at 1.01"); a short label before the colon ("random scan: the
    sampler's TV …", at most `LABEL_WORDS` words) stays with the statement it names."""
    parts = check.split(": ")
    keep = 2 if len(parts) > 1 and len(parts[0].split()) <= LABEL_WORDS else 1
    return ": ".join(parts[:keep])


def what(statistic: str) -> str:
    """A statistic's name without its parentheticals and what follows its first colon ("one-sided 97.5% bootstrap
    upper bound (pairs resampled) of the local exponent: the slope …" → "one-sided 97.5% bootstrap upper bound of
    the local exponent")."""
    text = re.sub(r"\s*\([^()]*\)", "", statistic.split(": ")[0])
    return text.strip()


def number(deciding: Mapping | None, rule: Mapping | None = None) -> str:
    """The deciding check as 'what it tests<br>**value** — what the value is — its threshold: whether that decides'
    (`statement`, `what`, `judgement`); `rule` is the check's row of checks.csv (its statistic and threshold), None
    where the page has none."""
    if not deciding:
        return "–"
    if rule is None:
        return f"{statement(str(deciding['check']))}: **{deciding['value']}** — {judgement(deciding)}"
    return (f"{statement(str(deciding['check']))}<br>**{deciding['value']}** — {what(str(rule['statistic']))} — "
            f"{rule['threshold']}: {judgement(deciding)}")


def revised(provenance: Provenance | None) -> str:
    """'<br>*Rules revised after 3 outcomes (last 2026-12-03); before: inconclusive.*' (the recorded outcome's first
    clause), '<br>*Rules stated before the run.*', or '' where the rules record has no entry for the page."""
    if provenance is None:
        return ""
    if provenance.stated_before_run:
        return "<br>*Rules stated before the run.*"
    before = ("not recorded" if provenance.previous_outcome is None else
              re.split(r":\s|;\s", provenance.previous_outcome, maxsplit=1)[0])
    return f"<br>*Rules {provenance.label}; the outcome before: {before}.*"


def elsewhere(name: str, rows: Mapping[str, pd.DataFrame]) -> str:
    """For a page in `ELSEWHERE`: '<br>*On the model's own chain:* 08 reads <its check>: **value** — the rule says
    fail (inconclusive; a side check)', from the other page's checks.csv (`rows`); '' where it is not there."""
    if name not in ELSEWHERE or ELSEWHERE[name][0] not in rows:
        return ""
    other, word = ELSEWHERE[name]
    table = rows[other]
    found = table[table["check"].str.contains(word, regex=False)]
    if found.empty:
        return ""
    row = found.iloc[0]
    side = "" if bool(row["core"]) else "; a side check"
    link = f'<a href="notebooks/{other}.html#result-{other[:2]}">{other[:2]}</a>'
    return (f"<br>*On the model's own chain:* {link} reads {statement(str(row['check']))}: **{row['value']}** — the "
            f"rule says {row['rule_says']} ({row['outcome']}{side})")


def to_decide(deciding: Mapping | None) -> str:
    """What would decide an open deciding check ('<br>*To decide:* …'): its `to_decide` up to the first colon or
    semicolon, without a parenthetical that holds the calibration's numbers, and `checks.smallest_decisive`'s
    "decisive at 192 pairs per length" as "192 pairs per length", "not decisive up to 8 chains" as "more than 8
    chains"; the rest is on the page; then its cost, where the page names its design (`deciding_cost`). '' when the
    check decides."""
    if not deciding or deciding["outcome"] != "inconclusive":
        return ""
    design = re.sub(r"\s*\((?:[^()]*\([^()]*\))+[^()]*\)", "", str(deciding.get("to_decide") or ""))
    design = re.sub(r"\s*\([^()]*$", "", re.split(r":\s|;\s", design, maxsplit=1)[0])  # a parenthesis cut open
    design = re.sub(r"^not decisive up to ", "more than ", re.sub(r"^decisive at ", "", design))
    cost = f" ({deciding['cost']})" if design and deciding.get("cost") else ""
    return f"<br>*To decide:* {design or 'not recorded; see the page’s checks.csv'}{cost}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def row(name: str, title: str, result: Mapping | str, provenance: Provenance | None = None,
        rule: Mapping | None = None, also: str = "") -> str:
    """One line of the first screen: its mark with its scope, the page (linked) and its claim, its number (`number`,
    with the deciding check's row of checks.csv `rule`), how its rules came to be (`revised`), a reading elsewhere
    (`also`) and what would decide it; a page that is not shown (`result` is why) says so in place of its verdict."""
    link = f'<a href="notebooks/{name}.html#result-{name[:2]}">{name[:2]} · {title}</a>'
    if isinstance(result, str):
        cells = (mark("not shown"), link, result)
    else:
        claim = headline(str(result.get("claim", "")))
        deciding = result.get("deciding")
        link += f"<br>({COMMITTED_NOTE})" if result.get("differs_from_git") else ""
        where = scope_of(str(result.get("build", ""))) if tone(result["verdict"]) != "other" else ""
        cells = (mark(result["verdict"], where), f"{link}<br>{claim}" if claim else link,
                 number(deciding, rule) + revised(provenance) + also + to_decide(deciding))
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def scales(shown: Mapping[str, Mapping | str]) -> str:
    """The profiles the shown pages ran at ("`cpu` profile"), from result.json's `build`; '' when none says."""
    found = dict.fromkeys(str(r["build"]).split(" · model")[0] for r in shown.values()
                          if not isinstance(r, str) and r.get("build"))
    return ", ".join(found)


def _model_facts(name: str) -> str:
    """'minilm-mlm (3 layers, 17.4 M parameters, trained 50 minutes on a CPU, 29 % top-1 on held-out masked words)'
    from the embedded model's metrics.json; the bare name for a model that has none."""
    metrics = EMBEDDED / name / "metrics.json"
    if not metrics.is_file():
        return name
    m = json.loads(metrics.read_text())
    where = " on a CPU" if str(m.get("torch", "")).endswith("+cpu") else ""
    return (f"{name} ({m['layers']} layers, {m['parameters'] / 1e6:.1f} M parameters, trained "
            f"{m['train_minutes']:.0f} minutes{where}, {100 * m['top1']:.0f} % top-1 on held-out masked words)")


def _span(values: list) -> str:
    """'200–3,000' (smallest to largest of the numbers in `values`, lists flattened)."""
    flat = [v for value in values for v in (value if isinstance(value, list) else [value])
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    low, high = min(flat), max(flat)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _scale(ran: Mapping[str, Mapping], paper: Mapping[str, Mapping]) -> str:
    """'ran 200–3,000 steps per chain or coupling budget and 2–48 chains …, where the `paper` profile runs 10,000–40,000
    and 16–100': per kind of `SCALE`, the span of what the pages ran (`ran`: their parameters) beside the span of
    their `paper` profiles; '' where no kind is in both."""
    here, there = [], []
    for kind, keys in SCALE.items():
        ours = [p[k] for p in ran.values() for k in keys if k in p]
        theirs = [paper[n][k] for n, p in ran.items() for k in keys if k in p and k in paper.get(n, {})]
        if ours and theirs:
            here.append(f"{_span(ours)} {kind}")
            there.append(_span(theirs))
    return f"ran {_and(here)}, where the `paper` profile runs {_and(there)}" if here else ""


def about(shown: Mapping[str, Mapping | str], root: Path, notebooks_dir: Path, book: set[str]) -> str:
    """The paragraph above the claims: the models the shown pages ran (`_model_facts`; a model only some pages ran
    names them), the profile, the paper's claims' scale against the `paper` profile's (`_scale`, from each page's
    provenance.json), and the `paper` profiles' models that no shown page ran. '' when no page is shown."""
    pages = {n: r for n, r in shown.items() if not isinstance(r, str) and r.get("build")}
    ran: dict[str, list[str]] = {}
    for name, result in pages.items():
        found = re.search(r" · models? ([^·]+?)(?: ·|$)", str(result["build"]))
        for model in (found.group(1).split(", ") if found else []):
            ran.setdefault(model.removeprefix("the embedded ").strip(), []).append(name[:2])
    if not ran:
        return ""
    everywhere = [_model_facts(m) for m, on in ran.items() if len(on) == len(pages)]
    some = [f"{_model_facts(m)} beside it on {_and(on)}" for m, on in ran.items() if len(on) < len(pages)]
    run_at = scales(shown)
    text = f"**What these verdicts are about:** {'; '.join(everywhere + some)}" + (f", at the {run_at}." if run_at
                                                                                    else ".")
    profiles = {n: declared_profiles(Path(notebooks_dir) / f"{n}.py") or {} for n in pages}
    parameters = {}
    for name in pages:
        provenance = Path(root) / "book" / "notebooks" / name / "provenance.json"
        if provenance.is_file() and name not in book:
            parameters[name] = json.loads(provenance.read_text()).get("parameters", {})
    scale = _scale(parameters, {n: p.get("paper", {}) for n, p in profiles.items()}) if "`paper`" not in run_at else ""
    if scale:
        text += f" The paper's claims {scale}."
    paper_models = dict.fromkeys(m for p in profiles.values() for key in ("model", "models")
                                 for m in _listed(p.get("paper", {}).get(key)) if m)
    missing = [m for m in paper_models if m not in ran]
    if missing:
        text += f" Not run: the `paper` profile's {'model' if len(missing) == 1 else 'models'}, {_and(missing)}."
    return text


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def markdown(shown: Mapping[str, Mapping | str], titles: Mapping[str, str], book: set[str],
             details: Mapping[str, Mapping] | None = None, intro: str = "") -> str:
    """The first screen: what the verdicts are about (`intro`, `about`), the paper's claims (their verdict column
    names the profile), then the book's own checks (`book`: the pages whose question is the book's) under their own
    header, and the rule in force. `details` gives a page's `row` its provenance, rule and reading elsewhere."""
    if not shown:
        return "No result page has been executed for this build.\n"
    details = details or {}
    paper = [row(n, titles[n], r, **details.get(n, {})) for n, r in shown.items() if n not in book]
    own = [row(n, titles[n], r, **details.get(n, {})) for n, r in shown.items() if n in book]
    verdict = f"verdict, {scales(shown)}".rstrip(", ")
    parts = [intro, ""] if intro else []
    if paper:
        parts += [HEADER.format(verdict=verdict, what="the paper's claim"), *paper, ""]
    if own:
        parts += ["The book's own checks, which test its tools and questions rather than the paper:", "",
                  HEADER.format(verdict=verdict, what="the book's own check"), *own, ""]
    parts += [f"*The rule in force:* {RULE}.", ""]
    return "\n".join(parts)


def _checks_rows(root: Path, names) -> dict[str, pd.DataFrame]:
    """Each page's checks.csv, where it has one."""
    tables = {}
    for name in names:
        path = Path(root) / "book" / "notebooks" / name / "checks.csv"
        if path.is_file():
            tables[name] = pd.read_csv(path)
    return tables


def _rule_of(deciding: Mapping | None, table: pd.DataFrame | None) -> Mapping | None:
    """The deciding check's row of its page's checks.csv (its statistic and threshold), None where it is not there."""
    if not deciding or table is None:
        return None
    found = table[table["check"] == deciding.get("check")]
    return None if found.empty else found.iloc[0].to_dict()


def write_first_screen(root: Path, notebooks_dir: Path | None = None) -> Path:
    """Write `<root>/book/_generated/first_screen.md` (`markdown`) from the result pages `site.shown_results` shows for
    the notebooks in `notebooks_dir` (None: `NOTEBOOKS`), their checks.csv and provenance.json, and the rules record
    beside the notebooks (`notebooks_dir`/rules.json); a page that is not shown stands with the others of its kind
    (the question its notebook's source asks)."""
    notebooks_dir = Path(notebooks_dir or NOTEBOOKS)
    shown, _ = shown_results(root, notebooks_dir)
    book = {name for name, result in shown.items()
            if (result.get("question") if isinstance(result, dict) else _asks(notebooks_dir, name)) == "book"}
    titles = {name: _short_title(root, name) for name in shown}
    tables = _checks_rows(root, shown)
    details = {name: dict(provenance=page_provenance(name, notebooks_dir / "rules.json"),
                          rule=_rule_of(result.get("deciding"), tables.get(name)), also=elsewhere(name, tables))
               for name, result in shown.items() if not isinstance(result, str)}
    page = Path(root) / FIRST_SCREEN
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(markdown(shown, titles, book, details, about(shown, root, notebooks_dir, book)))
    return page


def _asks(notebooks_dir: Path, name: str) -> str:
    """The question a notebook's source asks: "book" when it passes `question="book"` to `conclude`, else "paper"."""
    source = (Path(notebooks_dir) / f"{name}.py").read_text()
    return "book" if re.search(r"""question\s*=\s*["']book["']""", source) else "paper"


def _write_on_start(app, config) -> None:
    """`config-inited`: write the first screen into the book about to be built (its source folder)."""
    write_first_screen(Path(app.srcdir))


def setup(app) -> dict:
    app.connect("config-inited", _write_on_start)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
