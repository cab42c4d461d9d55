"""The execution cache: changing one input re-executes exactly the notebooks it concerns, and nothing else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from glauber_mlm import book, contract
from glauber_mlm.models import hf
from glauber_mlm.book import cache, command, plan, publish, reuse
from glauber_mlm.book.execute import prepare_parameters
from glauber_mlm.cli import main as cli_main
from test_book import EXAMPLE


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two example notebooks executed once, with the library, the manifest and a model folder as private copies."""
    base = tmp_path_factory.mktemp("cache")
    nbs, root = base / "notebooks", base / "root"
    nbs.mkdir()
    for name in ("91_a", "92_b"):
        (nbs / f"{name}.py").write_text(EXAMPLE.replace('Run("99_example"', f'Run("{name}"'))
    library = base / "library"
    (library / "book").mkdir(parents=True)
    (library / "sampling.py").write_text("STEP = 1\n")
    (library / "book" / "command.py").write_text("X = 1\n")
    manifest = base / "MANIFEST.json"
    manifest.write_text('{"models": []}\n')
    model = base / "my-mlm"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    params = {"91_a": {"profile": "smoke", "models": [str(model)]}, "92_b": {"profile": "smoke"}}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cache, "LIBRARY", library)
        mp.setattr(cache, "MANIFEST", manifest)
        for name, p in params.items():
            out = root / "book" / "notebooks" / f"{name}.ipynb"
            book.run_notebook(name, out, out.with_suffix(""), p, notebooks_dir=nbs, progress=False)
    return dict(nbs=nbs, root=root, library=library, manifest=manifest, model=model, params=params)


def stale(world, monkeypatch, params=None) -> dict[str, str | None]:
    monkeypatch.setattr(cache, "LIBRARY", world["library"])
    monkeypatch.setattr(cache, "MANIFEST", world["manifest"])
    out = {}
    for name, p in (params or world["params"]).items():
        src = world["nbs"] / f"{name}.py"
        out[name] = cache.stale_reason(src, prepare_parameters(src, p), world["root"] / "book" / "notebooks" / f"{name}.ipynb")
    return out


def edited(path: Path, text: str):
    """Append `text` to `path`, and give the old content back on exit."""
    class Edit:
        def __enter__(self):
            self.old = path.read_bytes()
            path.write_bytes(self.old + text.encode())

        def __exit__(self, *exc):
            path.write_bytes(self.old)
    return Edit()


def test_unchanged_inputs_reuse_every_page(world, monkeypatch):
    assert stale(world, monkeypatch) == {"91_a": None, "92_b": None}


def test_a_published_page_is_sealed_with_its_inputs(world):
    """Every file the run wrote is in the seal; the inputs, the external files and the key's modules in provenance."""
    results = world["root"] / "book" / "notebooks" / "91_a"
    prov = contract.read_provenance(results)
    assert set(prov["seal"]["files"]) == {"91_a.ipynb", *(f"91_a/{p.name}" for p in results.iterdir()
                                                           if p.name != "provenance.json")}
    assert "91_a/magnetisation.csv" in prov["seal"]["files"] and "91_a/result.json" not in prov["seal"]["files"]
    stamped = json.loads(results.with_suffix(".ipynb").read_text())["metadata"]["glauber_mlm"]["inputs"]
    assert prov["inputs"] == stamped and prov["input_files"] == {contract.MS_MARCO: "unset"}
    assert prov["library_modules"] == "the whole package (1 modules)"  # the world's library has no __init__.py
    assert publish.problems(results.with_suffix(".ipynb")) == []


@pytest.mark.parametrize("what, expected", [
    ("notebook", {"91_a": "changed: notebook", "92_b": None}),
    ("library", {"91_a": "changed: library", "92_b": "changed: library"}),
    ("book commands", {"91_a": None, "92_b": None}),
    ("data", {"91_a": "changed: data", "92_b": "changed: data"}),
    ("model weights", {"91_a": "changed: models", "92_b": None}),
])
def test_each_input_re_executes_exactly_the_notebooks_it_concerns(world, monkeypatch, what, expected):
    path = {"notebook": world["nbs"] / "91_a.py", "library": world["library"] / "sampling.py",
            "book commands": world["library"] / "book" / "command.py", "data": world["manifest"],
            "model weights": world["model"] / "model.safetensors"}[what]
    with edited(path, "\n# edited\n"):
        assert stale(world, monkeypatch) == expected


def test_a_new_run_of_the_notebook_it_reads_from_re_executes_the_reader(world, monkeypatch, tmp_path):
    monkeypatch.setattr(contract, "READS", {"92_b": {"91_a": ("magnetisation",)}})
    root = tmp_path / "root"
    shutil.copytree(world["root"], root)
    results = root / "book" / "notebooks"
    src = world["nbs"] / "92_b.py"
    params = prepare_parameters(src, {"profile": "smoke"})
    monkeypatch.setattr(cache, "LIBRARY", world["library"])
    monkeypatch.setattr(cache, "MANIFEST", world["manifest"])
    page = results / "92_b.ipynb"
    stamp = json.loads(page.read_text())
    stamp["metadata"]["glauber_mlm"]["inputs"] = cache.inputs(src, params, results)  # as if 92_b had read 91_a's run
    page.write_text(json.dumps(stamp))
    publish.seal(page, results / "92_b")  # re-stamped as the run would have been: sealed again
    assert cache.stale_reason(src, params, page) is None
    prov = results / "91_a" / "provenance.json"
    prov.write_text(prov.read_text().replace(json.loads(prov.read_text())["run_id"], "a-newer-run"))
    assert cache.stale_reason(src, params, page) == "changed: upstream"


def test_a_run_without_a_profile_is_keyed_as_its_default_profile(world, monkeypatch):
    """`glauber-mlm run NAME` passes no profile; `book` passes the notebook's default: the same run, so the page one
    publishes is reused by the other (a page published by `run` was re-executed by every later `book`)."""
    src = world["nbs"] / "92_b.py"
    default = {"profile": cache._default_profile(src)}
    assert cache.inputs(src, prepare_parameters(src, {}), world["root"]) == cache.inputs(src, prepare_parameters(src, default), world["root"])
    other = "cpu" if default["profile"] != "cpu" else "smoke"
    assert cache.inputs(src, prepare_parameters(src, {}), world["root"])["parameters"] != cache.inputs(
        src, prepare_parameters(src, {"profile": other}), world["root"])["parameters"]


def test_other_parameters_re_execute_that_notebook(world, monkeypatch):
    params = {**world["params"], "92_b": {"profile": "smoke", "steps": 41}}
    assert stale(world, monkeypatch, params) == {"91_a": None, "92_b": "changed: parameters"}


def test_a_torn_page_is_never_reused(world, monkeypatch, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(world["root"], root)
    (root / "book" / "notebooks" / "92_b" / "provenance.json").unlink()
    src = world["nbs"] / "92_b.py"
    monkeypatch.setattr(cache, "LIBRARY", world["library"])
    monkeypatch.setattr(cache, "MANIFEST", world["manifest"])
    reason = cache.stale_reason(src, prepare_parameters(src, {"profile": "smoke"}), root / "book" / "notebooks" / "92_b.ipynb")
    assert "provenance.json is missing" in reason


def test_book_reuses_unchanged_pages_and_force_re_executes_them(tmp_path, monkeypatch, capsys):
    # the jupyter-book build is tested by the smoke book (test_book.py); here it would take three builds' time
    monkeypatch.setattr(command, "build_book", lambda root: root / "_build" / "html")
    nbs, root = tmp_path / "notebooks", tmp_path / "root"
    nbs.mkdir()
    (nbs / "93_c.py").write_text(EXAMPLE.replace('Run("99_example"', 'Run("93_c"'))
    args = ["book", "--profile", "smoke", "--notebooks", str(nbs), "--root", str(root)]
    assert cli_main(args) == 0
    assert "executing: not executed yet" in capsys.readouterr().out
    page = root / "book" / "notebooks" / "93_c.ipynb"
    before = page.read_bytes()
    assert cli_main(args) == 0
    assert "93_c: reused" in capsys.readouterr().out
    assert page.read_bytes() == before
    assert "| ok | reused (commit" in (root / "book" / "_generated" / "execution.md").read_text()
    assert cli_main(args + ["--force"]) == 0
    assert "executing: --force" in capsys.readouterr().out and page.read_bytes() != before
    assert "| ok | executed |" in (root / "book" / "_generated" / "execution.md").read_text()


def test_verify_reproduces_a_seeded_run_and_names_a_tampered_table(tmp_path, capsys):
    nbs, root = tmp_path / "notebooks", tmp_path / "root"
    nbs.mkdir()
    (nbs / "94_d.py").write_text(EXAMPLE.replace('Run("99_example"', 'Run("94_d"'))
    assert cli_main(["run", "94_d", "--profile", "smoke", "-p", "steps", "30", "--notebooks", str(nbs), "--root", str(root)]) == 0
    published = root / "book" / "notebooks"
    before = {p: p.read_bytes() for p in published.rglob("*") if p.is_file()}
    verify = ["verify", "--notebooks", str(nbs), "--root", str(root), "--scratch", str(tmp_path / "scratch")]
    assert cli_main(verify) == 0
    assert "magnetisation.csv: reproduced" in capsys.readouterr().out
    table = published / "94_d" / "magnetisation.csv"
    df = pd.read_csv(table)
    df.loc[0, "magnetisation"] += 0.25
    df.to_csv(table, index=False)
    tampered = table.read_text()
    assert cli_main(verify + ["--scratch", str(tmp_path / "scratch2")]) == 1
    err = capsys.readouterr().err
    assert "94_d/magnetisation.csv: magnetisation (1 rows; row 0" in err
    assert table.read_text() == tampered and all(p.read_bytes() == b for p, b in before.items() if p != table)


# ---- a newcomer's `make book`: the machine is not an input (issue 27, item 8) -------------------------------------

DTYPED = (EXAMPLE.replace('Run("99_example"', 'Run("95_e"').replace("device = None\n", "device = None\ndtype = None\n")
          .replace("output_dir, models=models", "output_dir, dtype=dtype, models=models"))
XEON = "Intel(R) Xeon(R) Processor (native bf16), 2 CPU threads"


def fake_page(src: Path, params: dict, root: Path, **provenance) -> Path:
    """A published page of `src` as a build with `params` leaves it (its cache stamp and a complete provenance),
    without executing anything; `provenance` overrides the recorded entries."""
    published = root / "book" / "notebooks"
    (published / src.stem).mkdir(parents=True)
    page = published / f"{src.stem}.ipynb"
    stamp = {"inputs": cache.inputs(src, prepare_parameters(src, params), published), "run_id": "r1"}
    page.write_text(json.dumps({"cells": [], "metadata": {"glauber_mlm": stamp}}))
    recorded = {**{key: "-" for key in contract.REQUIRED}, "profile": params["profile"], "scale": 1.0, "parameters": {},
                "versions": {}, "wall_time_s": 1.0, "run_id": "r1"}
    contract.write_provenance(published / src.stem, {**recorded, **provenance})
    publish.seal(page, published / src.stem)
    return page


@pytest.fixture
def avx2(monkeypatch):
    """This machine as one without native bf16 (the slower machine kind): its default forward dtype is float32."""
    monkeypatch.setattr(hf, "fast_bf16", lambda device: False)
    assert reuse.machine_dtype() == "float32"


def test_the_machine_is_not_a_cache_input(monkeypatch):
    src = book.NOTEBOOKS / "06_has_my_chain_mixed.py"
    params = prepare_parameters(src, {"profile": "cpu"})
    keys = {}
    for native in (True, False):
        monkeypatch.setattr(hf, "fast_bf16", lambda device, native=native: native)
        keys[native] = cache.inputs(src, params, book.REPO / "book" / "notebooks")
    assert keys[True] == keys[False]
    assert set(keys[True]) == {"notebook", "parameters", "library", "data", "files", "rules", "models", "upstream"}


def test_a_page_built_in_bf16_elsewhere_is_reused_on_an_fp32_machine_and_says_where(tmp_path, avx2, monkeypatch, capsys):
    nbs, root = tmp_path / "notebooks", tmp_path / "root"
    nbs.mkdir()
    (nbs / "95_e.py").write_text(DTYPED)
    fake_page(nbs / "95_e.py", {"profile": "smoke"}, root, forward_dtype="bfloat16", machine=XEON, commit="563ab84")
    executed = []
    monkeypatch.setattr(command, "run_notebook", lambda name, *a, **k: executed.append(name))
    monkeypatch.setattr(command, "build_book", lambda root: root / "_build" / "html")
    args = ["book", "--profile", "smoke", "--notebooks", str(nbs), "--root", str(root)]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert executed == []
    assert (f"95_e: reused (its inputs are unchanged), built in bfloat16 on {XEON} at commit 563ab84; this machine "
            "runs float32, which gives other numbers") in out
    assert ("1 page(s) reused as published (their code, parameters, data and models are unchanged); 1 of them were "
            "built in another dtype than this machine's float32; their notebooks took 1 s where they were built:") in out
    assert "make verify" in out and "make book FORCE=1" in out and "no time estimate: the plan counts none" in out
    # asked for by dtype, a page built without one re-executes; FORCE=1 re-executes it too
    assert cli_main(args + ["--dtype", "float32"]) == 0
    assert "95_e (profile smoke; executing: changed: parameters)" in capsys.readouterr().out and executed == ["95_e"]
    assert cli_main(args + ["--force"]) == 0 and executed == ["95_e", "95_e"]


def test_a_page_built_with_a_dtype_is_reused_with_that_dtype_only(tmp_path):
    src, root = tmp_path / "95_e.py", tmp_path / "root"
    src.write_text(DTYPED)
    page = fake_page(src, {"profile": "smoke", "dtype": "float32"}, root, forward_dtype="float32")
    assert cache.stale_reason(src, prepare_parameters(src, {"profile": "smoke", "dtype": "float32"}), page) is None
    for other in ({"profile": "smoke", "dtype": "bfloat16"}, {"profile": "smoke"}):
        assert cache.stale_reason(src, prepare_parameters(src, other), page) == "changed: parameters"
    with pytest.raises(book.BookError, match="dtype must be one of 'float32', 'bfloat16'"):
        prepare_parameters(src, {"profile": "smoke", "dtype": "float16"})


def test_the_advice_gives_the_plans_time_for_the_reused_pages_on_this_machine(monkeypatch, avx2):
    rates = plan.Rates(default=2e9, float32=2e9, latency=1e-3, source="fixed")
    monkeypatch.setattr(plan, "calibrate", lambda reference, n: rates)
    names = ["06_has_my_chain_mixed", "99_not_counted"]
    works = plan.plan(names[:1], "cpu", notebooks_dir=book.NOTEBOOKS)
    expected = plan.duration(sum(plan.seconds(w, rates) or 0.0 for w in works["06_has_my_chain_mixed"]))
    assert reuse.estimate(names, "cpu", None, 1.0, book.NOTEBOOKS) == (
        f"the plan's time: about {expected} on this machine for 1 page(s) (forwards and exact-model steps, coupled "
        "pairs at their expected length where the notebook gives one, else their whole budget; glauber-mlm plan "
        "--calibrate); not counted: 99_not_counted")
