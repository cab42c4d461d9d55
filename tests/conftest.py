from __future__ import annotations

import os

import pytest

# the test machine has no hub access: fail fast instead of retrying the network
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# `make test` runs the suite on pytest-xdist workers, one per core: each worker (and each notebook kernel it
# starts, which inherits the environment) computes on one thread, so workers do not oversubscribe the cores
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)

# tests that share an expensive run run on one worker, so that run happens once per session (xdist would repeat a
# module's fixture on every worker that takes one of its tests): the paper dry run, each file whose module fixture
# executes notebooks, and the smoke book's runs. A notebook's test file (test_nb_*.py) is grouped by its name, except
# its tests marked slow, which assert on the page's smoke run: they join the smoke book (tests/test_book.py, slow),
# which executed that run already (tests/notebook_runner.py caches the runs per process); 02's tests run two models,
# a run of their own, in their file's group
SMOKE_BOOK, MIXING = "test_book.py", "test_nb_mixing.py"
GROUPS = {"paper_dry_run": {"test_paper_dry_run.py"},
          "published_root": {"test_publish.py"},
          "cache_world": {"test_cache.py"}}


def group_of(item) -> str | None:
    """The xdist group of a test: its file's in GROUPS, the smoke runs', its notebook test file's own, or None."""
    name = item.path.name
    if name == SMOKE_BOOK or (name.startswith("test_nb_") and name != MIXING and item.get_closest_marker("slow")):
        return "smoke_runs"
    if name.startswith("test_nb_"):
        return name
    return next((group for group, files in GROUPS.items() if name in files), None)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        if group := group_of(item):
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_runtest_setup(item):
    """On a loadgroup worker, fail a grouped test that xdist did not tag with its group, before its heavy fixtures
    (each worker would repeat the shared runs, and the suite would silently take twice as long)."""
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
        pytest.fail("pytest-xdist ignored this test's xdist_group, as it does under pytest 9.2 (pytest-xdist #1386): "
                    "`pip install 'pytest<9.2'`, as the dev extra pins", pytrace=False)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny batches of exact models: torch's thread pool costs more than it saves (`pytestmark = usefixtures`)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
