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

# files that share the smoke profile's notebook runs (tests/notebook_runner.py caches them per process) and the
# first UMAP compilation run on one worker, so each of those runs happens once per session
ONE_WORKER = {"test_book.py", "test_semantic.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        name = item.path.name
        if name in ONE_WORKER or name.startswith("test_nb_"):
            item.add_marker(pytest.mark.xdist_group("smoke_runs"))
