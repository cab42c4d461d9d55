"""The execution cache: changing one input re-executes exactly the notebooks it concerns, and nothing else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from glauber_mlm import book
from glauber_mlm.book import cache
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
    monkeypatch.setattr(cache, "UPSTREAM", {"92_b": ("91_a",)})
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
    assert cache.stale_reason(src, params, page) is None
    prov = results / "91_a" / "provenance.json"
    prov.write_text(prov.read_text().replace(json.loads(prov.read_text())["run_id"], "a-newer-run"))
    assert cache.stale_reason(src, params, page) == "changed: upstream"


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


def test_book_reuses_unchanged_pages_and_force_re_executes_them(tmp_path, capsys):
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


def test_another_forward_dtype_re_executes_every_notebook(world, monkeypatch):
    """A page built in fp32 is stale where the chains would run in bf16, and the reverse (`book --dtype`)."""
    from glauber_mlm.hf import FORWARD_DTYPE_ENV, default_dtype

    native = str(default_dtype(torch.device("cpu"))).removeprefix("torch.")
    other = "bfloat16" if native == "float32" else "float32"
    monkeypatch.setenv(FORWARD_DTYPE_ENV, other)
    assert set(stale(world, monkeypatch, world["params"]).values()) == {"changed: forward_dtype"}
    monkeypatch.setenv(FORWARD_DTYPE_ENV, "float16")
    with pytest.raises(ValueError, match="float32, bfloat16"):
        default_dtype(torch.device("cpu"))
