import os
from pathlib import Path

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

# files that share an expensive run run on one worker, so that run happens once per session: the smoke profile's
# notebook runs (tests/notebook_runner.py caches them per process; 02's tests run two models, a run of their own), the
# paper dry run, and each file whose module fixture executes notebooks (xdist would repeat it on every worker that
# takes one of the file's tests)
# (a notebook's test file, test_nb_*.py, joins the smoke runs by its name: nothing to list here)
MIXING = "test_nb_mixing.py"
GROUPS = {"smoke_runs": {"test_book.py"} | {p.name for p in Path(__file__).parent.glob("test_nb_*.py")} - {MIXING},
          "paper_dry_run": {"test_paper_dry_run.py"},
          "published_root": {"test_publish.py"},
          "cache_world": {"test_cache.py"},
          "mixing_runs": {MIXING}}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        for group, files in GROUPS.items():
            if item.path.name in files:
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
