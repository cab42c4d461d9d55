"""The `glauber-mlm run/book` commands and the Jupyter Book built from smoke-profile outputs (with -W)."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

from glauber_mlm import book
from glauber_mlm.cli import main as cli_main
from notebook_runner import execute, smoke_book

# A notebook that follows the project's template exactly (parameters cell, PROFILES, Run(...) in the
# first cell, a table, a figure, run.finish()) on an exact model, so that the commands are tested even
# before the result notebooks exist, and in seconds.
EXAMPLE = textwrap.dedent('''\
    # ---
    # jupyter:
    #   jupytext:
    #     text_representation:
    #       extension: .py
    #       format_name: percent
    #   kernelspec:
    #     display_name: Python 3
    #     language: python
    #     name: python3
    # ---

    # %% [markdown]
    # # Example: an Ising chain's magnetisation
    #
    # **Claim.** Glauber dynamics on an exact Ising chain keeps its spins balanced.

    # %% tags=["parameters"]
    profile = "cpu"
    models = None
    device = None
    seed = None
    chains = None
    steps = None
    output_dir = None

    # %%
    import matplotlib.pyplot as plt
    import pandas as pd
    import torch

    import glauber_mlm as gm
    from glauber_mlm import exact
    from glauber_mlm.pages.run import Run

    PROFILES = {
        "smoke": dict(models=["ising"], device=None, seed=0, chains=4, steps=40),
        "cpu":   dict(models=["ising"], device=None, seed=0, chains=8, steps=400),
        "paper": dict(models=["ising"], device=None, seed=0, chains=100, steps=10_000),
    }
    run = Run("99_example", profile, PROFILES, output_dir, models=models, device=device, seed=seed, chains=chains, steps=steps)
    ising = exact.potts_chain(6, q=2, coupling=0.3)
    run.show()

    # %% [markdown]
    # ## Magnetisation along the chains

    # %%
    init = torch.zeros(run["chains"], 6, dtype=torch.long)
    traj = gm.glauber(ising, init, steps=run["steps"], temperature=1.0, seed=run["seed"], progress=True)
    table = run.save_table(pd.DataFrame({"chain": range(run["chains"]), "magnetisation": traj.final.float().mean(-1).tolist()}), "magnetisation")
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(table["chain"], table["magnetisation"])
    ax.set_xlabel("chain"); ax.set_ylabel("fraction of spins up")
    run.save_figure(fig, "magnetisation")
    plt.show()

    # %% [markdown]
    # The bars are the fraction of up spins per chain at the last step.

    # %%
    run.finish()
    ''')


# The template as the result notebooks write it (issue 27, item 5): the parameters cell holds only the knobs every
# run takes, each other parameter is declared once, as a PROFILES key, and Run takes from the notebook's variables
# those that papermill injected (`-p KEY VALUE`).
DECLARED_ONCE = (EXAMPLE.replace("models = None\ndevice = None\nseed = None\nchains = None\nsteps = None\n",
                                 "scale = 1.0\ndtype = None\n")
                 .replace('Run("99_example", profile, PROFILES, output_dir, models=models, device=device, seed=seed, '
                          'chains=chains, steps=steps)',
                          'Run("98_declared_once", profile, PROFILES, output_dir, scale=scale, dtype=dtype, '
                          'overrides=globals())'))


@pytest.fixture(scope="session")
def example_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("example_notebooks")
    (d / "99_example.py").write_text(EXAMPLE)
    return d


def test_parameters_declared_once_are_set_with_p_and_checked_against_the_profiles(tmp_path, capsys, caplog):
    assert "overrides=globals()" in DECLARED_ONCE and "chains = None" not in DECLARED_ONCE
    nb_dir, root = tmp_path / "notebooks", tmp_path / "root"
    nb_dir.mkdir()
    (nb_dir / "98_declared_once.py").write_text(DECLARED_ONCE)
    assert book.parameters.declared_parameters(nb_dir / "98_declared_once.py") == ["profile", "scale", "dtype", "output_dir"]
    rc = cli_main(["run", "98_declared_once", "--notebooks", str(nb_dir), "--root", str(root), "-p", "stepz", "3"])
    err = capsys.readouterr().err
    assert rc == 1 and "no parameter 'stepz'" in err and "chains" in err and "steps" in err
    rc = cli_main(["run", "98_declared_once", "--notebooks", str(nb_dir), "--root", str(root), "--profile", "smoke",
                   "--model", "potts", "-p", "chains", "3", "-p", "seed", "7"])
    assert rc == 0, capsys.readouterr().err
    out = root / "book" / "notebooks" / "98_declared_once"
    assert len(pd.read_csv(out / "magnetisation.csv")) == 3
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["parameters"]["seed"] == 7 and prov["parameters"]["steps"] == 40 and prov["parameters"]["models"] == ["potts"]
    assert not [r for r in caplog.records if "Passed unknown parameter" in r.getMessage()]  # checked here instead


@pytest.fixture(scope="session")
def built(tmp_path_factory, example_dir):
    """The whole smoke book, executed and built once per session in a temporary root."""
    root = tmp_path_factory.mktemp("smoke_book")
    return smoke_book(root, extra=(("99_example", example_dir),))


# ---------------------------------------------------------------- command line, no kernel needed


def test_parse_value_reads_yaml_like_papermill():
    assert book.parse_value("3") == 3
    assert book.parse_value("2.5") == 2.5
    assert book.parse_value("[1.0, 2]") == [1.0, 2]
    assert book.parse_value("null") is None
    assert book.parse_value("roberta-base") == "roberta-base"
    assert book.parse_value("data/models/x") == "data/models/x"


def test_relative_model_folders_are_made_absolute_for_the_kernel(tmp_path, monkeypatch):
    (tmp_path / "my-mlm").mkdir()
    monkeypatch.chdir(tmp_path)
    assert book.execute._absolute_paths("my-mlm") == str(tmp_path / "my-mlm")
    assert book.execute._absolute_paths(["my-mlm", "roberta-base", None]) == [str(tmp_path / "my-mlm"), "roberta-base", None]


def test_unknown_notebook_is_refused_with_the_known_names(example_dir, tmp_path, capsys):
    rc = cli_main(["run", "no_such_notebook", "--notebooks", str(example_dir), "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "unknown notebook 'no_such_notebook'" in err and "99_example" in err


def test_unknown_parameter_is_refused_before_execution(example_dir, tmp_path, capsys):
    rc = cli_main(["run", "99_example", "--notebooks", str(example_dir), "--root", str(tmp_path), "-p", "temprature", "2"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "no parameter 'temprature'" in err and "steps" in err
    assert not (tmp_path / "book" / "notebooks" / "99_example.ipynb").exists()


def test_effective_toc_drops_missing_pages_and_adds_unlisted_notebooks(tmp_path):
    (tmp_path / "book" / "notebooks").mkdir(parents=True)
    for page in ("intro", "theory"):
        (tmp_path / "book" / f"{page}.md").write_text(f"# {page}\n")
    (tmp_path / "book" / "notebooks" / "01_a.ipynb").write_text("{}")
    (tmp_path / "book" / "notebooks" / "07_new.ipynb").write_text("{}")
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": "book/intro",
        "parts": [
            {"caption": "Background", "chapters": [{"file": "book/theory"}, {"file": "book/model_card"}]},
            {"caption": "Results", "chapters": [{"file": "book/notebooks/01_a"}, {"file": "book/notebooks/02_b"}]},
            {"caption": "Later", "chapters": [{"file": "book/performance"}]},
        ]}))
    toc, dropped, added = book.effective_toc(tmp_path)
    assert sorted(dropped) == ["book/model_card", "book/notebooks/02_b", "book/performance"]
    assert added == ["book/notebooks/07_new"]
    assert [p["caption"] for p in toc["parts"]] == ["Background", "Results"]
    assert toc["parts"][1]["chapters"] == [{"file": "book/notebooks/01_a"}, {"file": "book/notebooks/07_new"}]


def test_committed_toc_lists_every_prose_page_and_every_notebook():
    toc = yaml.safe_load((book.REPO / "_toc.yml").read_text())
    files = re.findall(r"file: (\S+)", (book.REPO / "_toc.yml").read_text())
    assert toc["root"] == "book/intro"
    for page in ("theory", "glossary", "model_card", "run_it_yourself", "execution", "performance", "references"):
        assert f"book/{page}" in files
    assert sorted(f.removeprefix("book/notebooks/") for f in files if f.startswith("book/notebooks/")) == \
        book.known_notebooks()
    for f in files:
        if not f.startswith("book/notebooks/"):  # every prose page is tracked, execution.md too (a stub)
            assert (book.REPO / f"{f}.md").exists(), f


# ---------------------------------------------------------------- executing notebooks


def test_example_notebook_saves_its_table_and_provenance(example_dir, tmp_path):
    out = execute("99_example", tmp_path, notebooks_dir=example_dir)
    assert out == tmp_path / "99_example"
    table = pd.read_csv(out / "magnetisation.csv")
    assert list(table.columns) == ["chain", "magnetisation"] and len(table) == 4
    assert table["magnetisation"].between(0, 1).all()
    assert (out / "magnetisation.png").stat().st_size > 1000
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["profile"] == "smoke" and prov["parameters"]["steps"] == 40 and prov["wall_time_s"] >= 0
    assert (tmp_path / "99_example.ipynb").exists()


def test_progress_bars_and_widget_warnings_stay_off_the_page(example_dir, tmp_path):
    execute("99_example", tmp_path, notebooks_dir=example_dir)
    nb = json.loads((tmp_path / "99_example.ipynb").read_text())
    streams = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []) if o["output_type"] == "stream"]
    text = "".join("".join(o["text"]) for o in streams)
    assert "glauber: " not in text and "%|" not in text and "IProgress" not in text
    assert "profile: smoke" in text  # what the cells print stays


def test_progress_bar_lines_are_dropped_and_other_stderr_kept():
    text = "glauber: 100%|██████████| 2000/2000 [00:00<00:00, 3411.52it/s]\n\rBatches: 50%|█| 1/2\rBatches: 100%|██| 2/2 [00:00]\nUserWarning: odd\n"
    assert book.execute._without_progress_bars(text) == "UserWarning: odd\n"
    assert book.execute._without_progress_bars("glauber: 100%|█| 3/3 [00:00]\n") == ""
    # a resume notice (the chain it resumes is the one a fresh run draws: tests/test_checkpoint.py) is not a result
    resumed = "resuming glauber from its checkpoint at step 4800 of 4800 (/home/me/_build/checkpoints/02/ab/g.pt)\n"
    assert book.execute._without_progress_bars(resumed + "UserWarning: odd\n") == "UserWarning: odd\n"


def test_collapse_carriage_returns_keeps_the_last_redraw():
    assert book.execute._collapse_carriage_returns("\rbar 0%\rbar 50%\rbar 100%\n") == "bar 100%\n"
    assert book.execute._collapse_carriage_returns("a\r\nb\rc\r") == "a\nc"


def test_explicit_parameters_override_the_profile(example_dir, tmp_path):
    root = tmp_path / "root"
    rc = cli_main(["run", "99_example", "--notebooks", str(example_dir), "--root", str(root),
                   "--profile", "smoke", "--model", "potts", "-p", "chains", "3", "-p", "seed", "7"])
    assert rc == 0
    out = root / "book" / "notebooks" / "99_example"
    assert len(pd.read_csv(out / "magnetisation.csv")) == 3
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["parameters"]["seed"] == 7 and prov["parameters"]["steps"] == 40
    # a notebook with a `models` list takes --model M as [M]
    assert prov["parameters"]["models"] == ["potts"]
    # output_dir is relative to the executed notebook, so the page shows no path of the build machine
    nb = json.loads((root / "book" / "notebooks" / "99_example.ipynb").read_text())
    assert nb["metadata"]["papermill"]["parameters"]["output_dir"] == "99_example"


def _real_notebooks() -> list[str]:
    return book.known_notebooks()


@pytest.mark.parametrize("name", _real_notebooks())
def test_every_notebook_resolves_its_profile_in_the_first_cell_after_the_parameters(name):
    import jupytext

    cells = [c for c in jupytext.read(book.NOTEBOOKS / f"{name}.py").cells if c.cell_type == "code"]
    k = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    source = cells[k + 1].source
    assert "PROFILES" in source and "Run(" in source and "profile" in cells[k].source, name
    # its parameters are declared once (PROFILES), and its planned work right after them, where the plan reads it
    assert "overrides=globals()" in source and book.parameters.declared_parameters(book.NOTEBOOKS / f"{name}.py") == \
        ["profile", "dtype", "scale", "output_dir"], name
    assert "plan" in cells[k + 2].metadata.get("tags", []) and "def planned_work(p: dict)" in cells[k + 2].source, name


@pytest.mark.parametrize("name", ["99_example"] + _real_notebooks())
def test_unknown_profile_is_refused_before_a_kernel_starts(name, example_dir, tmp_path):
    nb_dir = example_dir if name == "99_example" else book.NOTEBOOKS
    with pytest.raises(book.BookError) as info:
        book.run_notebook(name, tmp_path / f"{name}.ipynb", tmp_path / name, {"profile": "bogus"},
                          notebooks_dir=nb_dir, staging=tmp_path / "staging", progress=False)
    assert not isinstance(info.value, book.NotebookFailed)
    assert "unknown profile 'bogus'" in str(info.value) and "smoke" in str(info.value)
    assert not (tmp_path / "staging").exists() and not (tmp_path / name).exists()


# ---------------------------------------------------------------- the smoke book


@pytest.mark.slow
def test_every_notebook_executes_in_the_smoke_profile(built):
    assert not built.failures, "\n".join(built.failures.values())
    assert set(_real_notebooks()) | {"99_example"} <= set(built.executed)


@pytest.mark.slow
def test_book_has_a_page_per_prose_file_and_per_notebook(built):
    html = built.root / "_build" / "html"
    assert built.html.exists()
    for page in ("intro", "theory", "glossary", "model_card", "run_it_yourself", "execution", "references"):
        assert (html / "book" / f"{page}.html").exists(), page
    for name in built.executed:
        page = html / "book" / "notebooks" / f"{name}.html"
        assert page.exists(), name
        # the download button offers the executed notebook itself
        assert (html / "_sources" / "book" / "notebooks" / f"{name}.ipynb").exists(), name
        assert f"{name}.ipynb" in page.read_text()
    # the example page shows its figure
    assert re.search(r'<img[^>]+src="[^"]+\.png"', (html / "book" / "notebooks" / "99_example.html").read_text())


@pytest.mark.slow
def test_execution_page_lists_every_executed_notebook(built):
    text = (built.root / "book" / "_generated" / "execution.md").read_text()
    for name in built.executed:
        row = next(line for line in text.splitlines() if line.startswith(f"| [{name}]"))
        assert "| ok | executed | smoke |" in row, row
    assert "CPU" in text or "CUDA" in text


@pytest.mark.slow
def test_book_renders_math_without_the_network(built):
    html = built.root / "_build" / "html"
    theory = (html / "book" / "theory.html").read_text()
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert 'src="../_static/mathjax/tex-chtml.js"' in theory
    assert "cdn.jsdelivr" not in theory


def test_run_parameter_checks_name_the_parameter_and_the_rule(tmp_path):
    from glauber_mlm.pages.run import Run

    profiles = {"cpu": dict(steps=10, big=True, temps=[0.5, 2], tau=0.5, bad_temps=[1.0, -1.0], word="ten")}
    run = Run("99_checks", "cpu", profiles, tmp_path)
    assert run.integer("steps", 1) == 10 and run.temperatures("temps", 2) == [0.5, 2.0] and run.positive("tau") == 0.5
    for call, message in ((lambda: run.integer("steps", 11), "steps must be an integer ≥ 11"),
                          (lambda: run.integer("steps", 1, 5), "steps must be an integer ≥ 1 and ≤ 5"),
                          (lambda: run.integer("big", 0), "big must be an integer"),
                          (lambda: run.integer("word", 0), "word must be an integer"),
                          (lambda: run.temperatures("temps", 3), "temps must be a list of at least 3"),
                          (lambda: run.temperatures("bad_temps"), "bad_temps must be a list"),
                          (lambda: run.positive("word"), "word must be a finite number > 0")):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.slow
def test_pages_fold_the_machinery_and_offer_their_files(built):
    nb = json.loads((built.root / "book" / "notebooks" / "99_example.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tags = [c["metadata"].get("tags", []) for c in code]
    assert "remove-cell" in tags[0] and "google.colab" in "".join(code[0]["source"])  # the Colab install, off the page
    assert not code[0].get("outputs")                                 # added after the run: never executed here
    assert "hide-cell" in tags[1] and "parameters" in tags[1]        # the parameters cell, folded whole
    assert "hide-cell" in tags[next(k for k, c in enumerate(code) if "PROFILES" in "".join(c["source"]))]
    assert "remove-cell" in tags[-1] and "".join(code[-1]["source"]).strip() == "run.finish()"
    downloads = nb["cells"][-1]
    assert downloads["cell_type"] == "markdown" and "## Downloads" in "".join(downloads["source"])
    html = (built.root / "_build" / "html" / "book" / "notebooks" / "99_example.html").read_text()
    for name in ("magnetisation.csv", "provenance.json", "99_example.py"):
        link = re.search(rf'href="([^"]*{re.escape(name)})"', html)
        assert link, name
        assert (built.root / "_build" / "html" / "book" / "notebooks" / link.group(1)).resolve().is_file(), link.group(1)
    # the source is derived at build time from the executed notebook, not kept as a copy beside its outputs
    assert not (built.root / "book" / "notebooks" / "99_example" / "99_example.py").exists()
    import jupytext

    source = jupytext.read(built.root / "book" / "_generated" / "sources" / "99_example.py")
    ran = ["".join(c["source"]).rstrip("\n") for c in code[1:]]
    # the code that ran, parameters included (Jupytext's round trip keeps no cell's trailing newline)
    assert [c.source.rstrip("\n") for c in source.cells if c.cell_type == "code"] == ran


def test_run_takes_from_the_namespace_only_the_profile_keys_and_refuses_a_clash(tmp_path):
    import numpy as np

    from glauber_mlm.pages.run import Run

    profiles = {"smoke": dict(seed=0, steps=3, chains=2)}
    namespace = {"steps": 5, "chains": None, "np": np, "other": 1, "profile": "smoke"}  # a None keeps the profile's
    run = Run("toy", "smoke", profiles, tmp_path, overrides=namespace)
    assert run.params == {"seed": 0, "steps": 5, "chains": 2}
    assert Run("toy", "smoke", profiles, tmp_path, overrides=namespace, steps=9)["steps"] == 9  # a keyword wins
    with pytest.raises(ValueError, match="steps names both a parameter"):
        Run("toy", "smoke", profiles, tmp_path, overrides={"steps": np})


def test_the_plan_cell_is_folded_with_the_set_up():
    import nbformat

    cells = [nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("run = Run(...)"),
             nbformat.v4.new_code_cell("def planned_work(p): ...", metadata={"tags": ["plan"]}),
             nbformat.v4.new_code_cell("x = 1")]
    nb = nbformat.v4.new_notebook(cells=cells)
    book.page.fold_machinery(nb)
    assert [c.metadata.get("tags", []) for c in nb.cells] == [["parameters", "hide-cell"], ["hide-cell"],
                                                              ["plan", "hide-cell"], []]


def test_the_verdict_table_shows_each_page_verdict_deciding_check_paper_value_and_scale(tmp_path):
    """The intro's dashboard: one row per result.json with its verdict, the check it rests on (value, why it does not
    decide), the paper's value and the profile; a result.json from before `deciding` existed still gets a row."""
    from glauber_mlm.book.site import VERDICTS, write_verdicts
    from test_seal import sealed

    for name, extra in [("02_high_temperature_mixing", dict(
            paper="boundary near τ ≈ 1.5–2 (RoBERTa-base, 10⁴-step budget)",
            deciding=dict(check="T grows no faster than n log n at τ = 5", value="-0.256", outcome="inconclusive",
                          reason="size 0.80 > 0.1", core=True, power=0.9, size=0.8))),
                        ("04_political_basins", dict(deciding=dict(
                            check="the basin attracts", value="0.12", outcome="inconclusive", core=True, power=0.9,
                            size=0.05, false_pass_upper=0.131, false_fail_upper=0.2, to_decide="40 starts (about 9 min)"))),
                        ("03_metastability_traps", {}), ("06_has_my_chain_mixed", dict(question="book"))]:
        page = tmp_path / "book" / "notebooks" / name
        page.mkdir(parents=True)
        (page / "result.json").write_text(json.dumps(dict(
            verdict="inconclusive at this scale", build="`cpu` profile · model the embedded minilm-mlm · AMD EPYC",
            **extra)))
        sealed(page)  # the dashboard reads only complete runs whose seal holds
    write_verdicts(tmp_path)
    rows = (tmp_path / VERDICTS).read_text().splitlines()
    assert rows[0] == "| result page | verdict | the check it rests on: this build | the paper reports | scale |"
    assert len(rows) == 6
    assert ("| **inconclusive at this scale** | “T grows no faster than n log n at τ = 5”: **-0.256** (inconclusive; "
            "power 0.90, size 0.80) | boundary near τ ≈ 1.5–2 (RoBERTa-base, 10⁴-step budget) | "
            "`cpu` profile |") in rows[2]
    assert rows[3].endswith("| **inconclusive at this scale** | – | – | `cpu` profile |")
    assert ("“the basin attracts”: **0.12** (inconclusive; false pass ≤ 0.13, false fail ≤ 0.20 (one-sided 95 %); to "
            "decide: 40 starts (about 9 min))") in rows[4]
    assert rows[5].endswith("| – | (the book's own question) | `cpu` profile |")
