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

# files that share an expensive run run on one worker, so that run happens once per session: the smoke profile's
# notebook runs (tests/notebook_runner.py caches them per process; 02's tests run two models, a run of their own) and
# the paper dry run (a module fixture that each worker would otherwise repeat)
GROUPS = {"smoke_runs": {"test_book.py", "test_nb_exact.py", "test_nb_rectangle.py", "test_nb_traps.py",
                         "test_nb_political.py", "test_nb_influence.py", "test_nb_diagnostics_mh.py"},
          "paper_dry_run": {"test_paper_dry_run.py"}}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        for group, files in GROUPS.items():
            if item.path.name in files:
                item.add_marker(pytest.mark.xdist_group(group))
