"""A change re-executes only the pages it touches (issue 35, item 3): each page's library key is the hash of the
static import closure of its notebook, with the whole package as the fallback where an import cannot be resolved."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from glauber_mlm import contract
from glauber_mlm.book import cache, closure
from glauber_mlm.book.execute import prepare_parameters
from test_book import EXAMPLE

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "src" / "glauber_mlm"

# a package shaped like glauber_mlm: __init__ imports the engine, not the pages; the pages import measures and
# statistics inside functions, relatively; the runner (book/) is imported by the notebooks' plan cell
PACKAGE = {
    "__init__.py": "from . import exact\nfrom .samplers.sampling import glauber\n",
    "exact/__init__.py": "from .models import potts_chain\n",
    "exact/models.py": "def potts_chain(*a, **k):\n    pass\n",
    "samplers/__init__.py": "",
    "samplers/sampling.py": "import torch\n\ndef glauber():\n    pass\n",
    "stats.py": "def ci():\n    pass\n",
    "measures/__init__.py": "",
    "measures/political.py": "def trend():\n    from ..stats import ci\n    return ci()\n",
    "measures/margins.py": "from glauber_mlm.stats import ci\n",
    "pages/__init__.py": "",
    "pages/run.py": "class Run:\n    pass\n",
    "pages/planted.py": "def calibration():\n    from .. import stats\n    return stats.ci()\n",
    "book/__init__.py": "from .command import main\n",
    "book/command.py": "from ..measures import political\n",
    "book/plan.py": "from ..measures import margins\n",
    "cli.py": "import importlib\nimportlib.import_module(NAME)\n",
}
# the notebooks: what each imports beyond the example's glauber_mlm, exact and pages.run
PAGES = {
    "81_exact": "",
    "82_stats": "from glauber_mlm.pages import planted\n",
    "83_margins": "from glauber_mlm.book.plan import Work\n\ndef later():\n    from glauber_mlm.measures import margins\n",
    "84_political": "from glauber_mlm.measures import political\n",
}


def make_package(base: Path, files: dict[str, str] = PACKAGE) -> Path:
    library = base / "glauber_mlm"
    for rel, text in files.items():
        (library / rel).parent.mkdir(parents=True, exist_ok=True)
        (library / rel).write_text(text)
    return library


def make_notebooks(base: Path) -> Path:
    nbs = base / "notebooks"
    nbs.mkdir()
    for name, extra in PAGES.items():
        text = EXAMPLE.replace('Run("99_example"', f'Run("{name}"')
        (nbs / f"{name}.py").write_text(text.replace("from glauber_mlm.pages.run import Run\n",
                                                     "from glauber_mlm.pages.run import Run\n" + extra))
    return nbs


def names(library: Path, files: list[Path] | None) -> set[str] | None:
    return None if files is None else {f.relative_to(library).as_posix() for f in files}


def test_the_closure_follows_absolute_relative_and_function_level_imports_and_leaves_out_the_runner(tmp_path):
    library, nbs = make_package(tmp_path), make_notebooks(tmp_path)
    engine = {"__init__.py", "exact/__init__.py", "exact/models.py", "samplers/__init__.py", "samplers/sampling.py",
              "pages/__init__.py", "pages/run.py"}
    assert names(library, closure.closure(nbs / "81_exact.py", library)) == engine
    assert names(library, closure.closure(nbs / "82_stats.py", library)) == engine | {"pages/planted.py", "stats.py"}
    assert names(library, closure.closure(nbs / "83_margins.py", library)) == engine | {
        "measures/__init__.py", "measures/margins.py", "stats.py"}
    assert names(library, closure.closure(nbs / "84_political.py", library)) == engine | {
        "measures/__init__.py", "measures/political.py", "stats.py"}


@pytest.mark.parametrize("source", [
    "import importlib\nname = 'glauber_mlm.stats'\nimportlib.import_module(name)\n",
    "from glauber_mlm import x\n__import__(x)\n",
    "from glauber_mlm.no_such_module import thing\n",
    "from glauber_mlm.measures import broken\n",
])
def test_an_import_that_cannot_be_resolved_keys_on_the_whole_package(tmp_path, source):
    library = make_package(tmp_path, {**PACKAGE, "measures/broken.py": "def f(:\n"})
    src = tmp_path / "nb.py"
    src.write_text(source)
    assert closure.closure(src, library) is None
    files, resolved = cache.library_files(src, library)
    assert not resolved
    assert names(library, files) == {rel for rel in PACKAGE if not rel.startswith("book/") and rel != "cli.py"} | {
        "measures/broken.py"}


def test_a_literal_dynamic_import_is_followed(tmp_path):
    library = make_package(tmp_path)
    src = tmp_path / "nb.py"
    src.write_text("import importlib\nimportlib.import_module('glauber_mlm.stats')\n")
    assert names(library, closure.closure(src, library)) == {"__init__.py", "exact/__init__.py", "exact/models.py",
                                                            "samplers/__init__.py", "samplers/sampling.py", "stats.py"}


def fake_published(src: Path, root: Path) -> Path:
    """A published, sealed page of `src` (smoke profile) stamped with the inputs it has now."""
    from glauber_mlm.book import publish

    published = root / "book" / "notebooks"
    (published / src.stem).mkdir(parents=True)
    page = published / f"{src.stem}.ipynb"
    stamp = {"inputs": cache.inputs(src, prepare_parameters(src, {"profile": "smoke"}), published), "run_id": "r1"}
    page.write_text(json.dumps({"cells": [], "metadata": {"glauber_mlm": stamp}}))
    contract.write_provenance(published / src.stem, {**{key: "-" for key in contract.REQUIRED}, "scale": 1.0,
                                                     "parameters": {}, "versions": {}, "wall_time_s": 1.0, "run_id": "r1"})
    publish.seal(page, published / src.stem)
    return page


@pytest.mark.parametrize("edit, stale", [
    ("measures/political.py", {"84_political"}),
    ("stats.py", {"82_stats", "83_margins", "84_political"}),
    ("exact/models.py", set(PAGES)),
    ("book/command.py", set()),
    ("book/plan.py", set()),
])
def test_an_edit_re_executes_exactly_the_pages_whose_closure_holds_the_module(tmp_path, monkeypatch, edit, stale):
    library, nbs = make_package(tmp_path), make_notebooks(tmp_path)
    monkeypatch.setattr(cache, "LIBRARY", library)
    pages = {name: fake_published(nbs / f"{name}.py", tmp_path / "root") for name in PAGES}
    (library / edit).write_text((library / edit).read_text() + "\n# a helper moved\n")
    reasons = {name: cache.stale_reason(nbs / f"{name}.py", prepare_parameters(nbs / f"{name}.py", {"profile": "smoke"}),
                                        page) for name, page in pages.items()}
    assert reasons == {name: "changed: library" if name in stale else None for name in PAGES}


def test_every_notebook_of_the_book_has_a_resolved_closure_holding_what_it_imports():
    """The real notebooks: no page falls back to the whole package, 04's closure holds measures/political.py, and no
    closure holds the runner."""
    for src in sorted((REPO / "notebooks").glob("*.py")):
        files = names(LIBRARY, closure.closure(src, LIBRARY))
        assert files is not None, src.name
        assert "__init__.py" in files and "pages/run.py" in files, src.name
        assert not any(f.startswith("book/") or f == "cli.py" for f in files), src.name
    assert "measures/political.py" in names(LIBRARY, closure.closure(REPO / "notebooks" / "04_political_basins.py",
                                                                     LIBRARY))


def test_the_provenance_records_how_many_modules_the_key_covers(tmp_path, monkeypatch):
    library, nbs = make_package(tmp_path), make_notebooks(tmp_path)
    monkeypatch.setattr(cache, "LIBRARY", library)
    assert cache.provenance(nbs / "81_exact.py", {"library": "x"})["library_modules"] == 7
    src = tmp_path / "dynamic.py"
    src.write_text(textwrap.dedent("""\
        import importlib
        importlib.import_module(NAME)
    """))
    assert cache.provenance(src, {})["library_modules"] == "the whole package (12 modules)"


def library_keys(library: Path) -> dict[str, str]:
    return {src.stem: cache.library_digest(src, library) for src in sorted((REPO / "notebooks").glob("*.py"))}


def edited_keys(tmp_path: Path, module: str) -> set[str]:
    """The book's pages whose library key changes when `module` of a copy of the package is edited."""
    import shutil

    library = tmp_path / "glauber_mlm"
    shutil.copytree(LIBRARY, library, ignore=shutil.ignore_patterns("__pycache__"))
    before = library_keys(library)
    (library / module).write_text((library / module).read_text() + "\n# a helper moved\n")
    after = library_keys(library)
    return {name for name in before if before[name] != after[name]}


def test_editing_the_statistics_re_executes_every_page_of_the_book(tmp_path):
    assert edited_keys(tmp_path, "stats.py") == {src.stem for src in (REPO / "notebooks").glob("*.py")}


def test_editing_the_political_measures_re_executes_page_04_only(tmp_path):
    assert edited_keys(tmp_path, "measures/political.py") == {"04_political_basins"}
