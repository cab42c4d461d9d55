"""A dry run of the paper profile: `glauber-mlm book --profile paper --scale S`, end to end and offline.

The paper profile names hub models (bert-base-uncased, roberta-base, …) and MS MARCO passages. Here each hub name
is a tiny random model of the same family, with a tokenizer of the family's own kind (`test_families.save_family`),
saved in a fake Hugging Face hub cache (`HF_HUB_CACHE/models--ORG--NAME/snapshots/REV/`, `refs/main`) with
`HF_HUB_OFFLINE=1`, so `load_mlm("roberta-base")` resolves the name through the hub's cache as it would online.
MS MARCO is a small file in the dataset's own record format, built here from data/passages.jsonl and read through
`GLAUBER_MLM_MS_MARCO` by the same parser. Everything else is the paper profile, its budgets × SCALE: the code
path of the real run (frames, lengths up to 128 tokens, temperature grids, the ms_marco loader, the embedder).

Three costs that no budget sets are cut by an explicit parameter: 03's UMAP map (`umap=False`: compiling UMAP
takes a minute on its first use; the cpu book draws it), 04's political score, trained on all 5,450 labelled texts
and applied to every passage in the paper profile (`score_texts=200`, `base_passages=100`: embedding them all takes
four minutes on one CPU thread), and 08's largest exact chain (n = 12: 4,096 states, whose dense t_mix products took
24 of the dry run's 30 minutes in CI; `sizes` stops at the cpu profile's n = 10, the same code).
"""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from glauber_mlm import book
from glauber_mlm.book import cache
from glauber_mlm.book.parameters import declared_budgets, declared_profiles, profile_at_scale
from glauber_mlm.book.publish import problems
from glauber_mlm.cli import main as cli_main
from glauber_mlm.pages.run import scaled_profile
from glauber_mlm.contract import MS_MARCO
from glauber_mlm.models.passages import load_passages
from test_families import save_family

SCALE = 0.01  # 1 % of every budget: most budgets sit at their least value
# explicit parameters for the costs no budget sets (see the module doc); each notebook is otherwise the book's run
NOT_BUDGETS = {"03_metastability_traps": dict(umap="false"),
               "04_political_basins": dict(score_texts="200", base_passages="100"),
               "08_exact_answers": dict(sizes="[2, 3, 4, 6, 8, 10]")}
POSITIONS = 136  # the paper profile's longest MLM sequence: 128 tokens (02's scaling study), plus the frame
FAMILY = {"bert-base-uncased": "bert", "roberta-base": "roberta", "distilbert-base-uncased": "distilbert",
          "answerdotai/ModernBERT-base": "modernbert"}  # hub name → the family of its tiny stand-in
REVISION = "0" * 40
NOTEBOOKS = book.known_notebooks()


def paper_models() -> set[str]:
    """Every model name the notebooks' paper profiles hold (None, the embedded model, is not a hub name)."""
    names = set()
    for name in NOTEBOOKS:
        paper = declared_profiles(book.notebook_source(name))["paper"]
        for key in ("model", "models"):
            value = paper.get(key)
            names |= {m for m in (value if isinstance(value, list) else [value]) if m is not None}
    return names


def fake_hub(cache_dir, names) -> None:
    """Each hub name as a tiny model of its family in the hub cache's layout, as a download would leave it."""
    unknown = sorted(set(names) - set(FAMILY))
    assert not unknown, (f"the paper profiles name {unknown}, which FAMILY gives no tiny stand-in: add each hub name's "
                         "family to FAMILY (a page that runs exact models only names none: `glauber-mlm new "
                         "NN_topic --exact-only` writes one without a model parameter)")
    for name in names:
        repo = cache_dir / f"models--{name.replace('/', '--')}"
        save_family(repo / "snapshots" / REVISION, FAMILY[name], positions=POSITIONS)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(REVISION)


def ms_marco_records(queries: int = 40, per_query: int = 5) -> list[dict]:
    """Records in MS MARCO v2.1's own format (one query, its candidate passages); each passage text is two
    consecutive embedded passages, about as long as an MS MARCO passage and long enough for 128 tokens."""
    texts = [r["text"] for r in load_passages("embedded")]
    records = []
    for q in range(queries):
        chunk = texts[2 * per_query * q: 2 * per_query * (q + 1)]
        passages = [" ".join(chunk[k: k + 2]) for k in range(0, len(chunk), 2)]
        records.append({
            "answers": [passages[0].split(".")[0]], "query": f"what does passage {q} say", "query_id": 1_000_000 + q,
            "query_type": "DESCRIPTION", "wellFormedAnswers": [],
            "passages": {"is_selected": [int(k == 0) for k in range(len(passages))], "passage_text": passages,
                         "url": [f"https://example.org/{q}/{k}" for k in range(len(passages))]},
        })
    return records


def write_jsonl(path, records: list[dict]):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ---------------------------------------------------------------- the scale and the MS MARCO file, no kernel


def test_scaled_profile_multiplies_only_the_budgets():
    profile = dict(steps=10_000, pairs=20, chains=None, temperatures=[0.5, 1.0], length=32, model="roberta-base")
    budgets = dict(steps=20, pairs=2, chains=2)
    scaled = scaled_profile(profile, budgets, 0.01)
    assert scaled == dict(profile, steps=100, pairs=2)  # 0.2 rounds up to 1, then the least value 2; None is "all"
    assert scaled_profile(profile, budgets, 0.0333)["steps"] == math.ceil(10_000 * 0.0333)
    assert scaled_profile(profile, budgets, 1.0) == profile
    assert scaled_profile(dict(profile, pairs=1), budgets, 0.01)["pairs"] == 1  # never raised above the profile
    for bad in (0, -0.5, 1.5, float("nan"), True, "0.1"):
        with pytest.raises(ValueError, match="scale must be a number in"):
            scaled_profile(profile, budgets, bad)
    with pytest.raises(ValueError, match="does not hold"):
        scaled_profile(profile, dict(sweeps=2), 0.5)
    with pytest.raises(ValueError, match="whole number"):
        scaled_profile(profile, dict(length=2, model=1), 0.5)
    with pytest.raises(ValueError, match="declares no BUDGETS"):
        scaled_profile(profile, {}, 0.5)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_declares_budgets_that_scale(name):
    src = book.notebook_source(name)
    budgets = declared_budgets(src)
    assert budgets, f"{name} declares no BUDGETS: a dry run could not scale it"
    assert "scale" in book.parameters.declared_parameters(src)
    for profile in declared_profiles(src):
        profile_at_scale(src, profile, SCALE)  # every budget is an integer entry of every profile


def test_scale_is_checked_before_any_kernel_and_is_part_of_the_cache_key(tmp_path, capsys):
    for bad in ("0", "1.5"):
        rc = cli_main(["book", "--profile", "paper", "--scale", bad, "--only", "02_high_temperature_mixing",
                       "--root", str(tmp_path)])
        assert rc == 1 and "scale must be a number in (0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "book" / "notebooks" / "02_high_temperature_mixing.ipynb").exists()
    src = book.notebook_source("02_high_temperature_mixing")
    full = cache.inputs(src, {"profile": "paper"}, tmp_path)
    dry = cache.inputs(src, {"profile": "paper", "scale": SCALE}, tmp_path)
    assert full["parameters"] != dry["parameters"]


def test_plan_counts_the_scaled_budgets(capsys):
    from glauber_mlm.book.plan import main as plan_main, resolved_parameters

    name = "02_high_temperature_mixing"
    full = resolved_parameters(name, "paper", None, {})
    dry = resolved_parameters(name, "paper", None, {}, scale=SCALE)
    assert (dry["budget"], dry["pairs"], dry["seeds"], dry["scaling_budget"]) == (100, 2, 1, 400)
    budgets = declared_budgets(book.notebook_source(name))
    assert {k: v for k, v in dry.items() if k not in budgets} == {k: v for k, v in full.items() if k not in budgets}
    assert plan_main(["plan", "--profile", "paper", "--scale", str(SCALE), "--only", "02_high_temperature_mixing"]) == 0
    assert "dry run at scale 0.01" in capsys.readouterr().out


def test_ms_marco_file_is_parsed_as_the_dataset_is(tmp_path, monkeypatch):
    records = ms_marco_records(queries=3, per_query=4)
    monkeypatch.setenv(MS_MARCO, str(write_jsonl(tmp_path / "ms_marco.jsonl", records)))
    rows = load_passages("ms_marco", limit=10)
    texts = [t for r in records for t in r["passages"]["passage_text"]]
    assert [r["text"] for r in rows] == texts[:10]
    assert [r["id"] for r in rows[:5]] == ["ms_marco/0/0", "ms_marco/0/1", "ms_marco/0/2", "ms_marco/0/3", "ms_marco/1/4"]
    assert all(r["topic"] is None for r in rows)
    assert len(load_passages("ms_marco")) == len(texts)


def test_ms_marco_parquet_file_is_read_like_the_hub_split(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")  # comes with `datasets` (the `online` extra); the hub holds the split as parquet
    records = ms_marco_records(queries=3, per_query=4)
    path = tmp_path / "validation-00000-of-00001.parquet"
    pd.DataFrame(records).to_parquet(path)
    monkeypatch.setenv(MS_MARCO, str(path))
    assert [r["text"] for r in load_passages("ms_marco")] == [t for r in records for t in r["passages"]["passage_text"]]


def test_a_missing_ms_marco_file_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(MS_MARCO, str(tmp_path / "nowhere.jsonl"))
    with pytest.raises(FileNotFoundError, match=MS_MARCO):
        load_passages("ms_marco")


# ---------------------------------------------------------------- the dry run itself


@pytest.fixture(scope="module")
def dry_book(tmp_path_factory):
    """`glauber-mlm book --profile paper --scale SCALE` into a temporary root, with the fake hub and MS MARCO file."""
    hub = tmp_path_factory.mktemp("hub")
    fake_hub(hub, paper_models())
    marco = write_jsonl(tmp_path_factory.mktemp("ms_marco") / "validation.jsonl", ms_marco_records())
    root = tmp_path_factory.mktemp("paper_dry_run")
    with pytest.MonkeyPatch.context() as env:  # the kernels inherit these
        env.setenv("HF_HUB_CACHE", str(hub))
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv(MS_MARCO, str(marco))
        dry = ["--profile", "paper", "--scale", str(SCALE), "--root", str(root)]
        runs = [cli_main(["run", name, *dry, *(a for kv in params.items() for a in ("-p", *kv))])
                for name, params in NOT_BUDGETS.items()]
        rest = [name for name in NOTEBOOKS if name not in NOT_BUDGETS]
        rc = cli_main(["book", *dry, "--only", *rest])  # builds the book with every page, the two above included
    return max(runs + [rc]), root


@pytest.mark.slow
def test_the_dry_run_builds_the_book(dry_book):
    rc, root = dry_book
    assert rc == 0, f"see the failed attempts in {root / '_build' / 'staging'}"
    assert (root / "_build" / "html" / "index.html").is_file()
    assert f"dry run at scale {SCALE:g}" in (root / "book" / "_generated" / "execution.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_ran_the_paper_profile_at_scale(dry_book, name):
    _, root = dry_book
    executed, results = root / "book" / "notebooks" / f"{name}.ipynb", root / "book" / "notebooks" / name
    assert executed.is_file() and not problems(executed), f"{name} did not complete"
    prov = json.loads((results / "provenance.json").read_text())
    src = book.notebook_source(name)
    paper = declared_profiles(src)["paper"]
    assert prov["profile"] == "paper" and prov["scale"] == SCALE
    explicit = {k: book.parse_value(v) for k, v in NOT_BUDGETS.get(name, {}).items()}
    assert prov["parameters"] == {**profile_at_scale(src, "paper", SCALE), **explicit}
    for key in set(paper) - set(declared_budgets(src)) - set(explicit):
        assert prov["parameters"][key] == paper[key], f"{name}: {key} is not the paper profile's"
    result = json.loads((results / "result.json").read_text())
    assert result["verdict"] == f"dry run at scale {SCALE:g}" and "dry run at scale" in result["build"]
    assert f"Verdict: dry run at scale {SCALE:g}, not a result" in executed.read_text()  # the page's result box
    tables = {t.name: pd.read_csv(t) for t in sorted(results.glob("*.csv"))}
    assert tables and all(len(t.columns) for t in tables.values()), f"{name} saved no table, or one without columns"
    # a table may be empty at this scale (03's traps: none lasts min_dwell = 100 steps in a 100-step run), not all
    assert sum(len(t) > 0 for t in tables.values()) >= len(tables) - 1, {k: len(t) for k, t in tables.items()}
