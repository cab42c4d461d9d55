"""`glauber-mlm book --workers N | --scheduler ADDRESS`: the notebooks as tasks on `dask.distributed`.

Each task is one `run_notebook` (staging in `<root>/_build/staging/NAME/`, atomic publish) in its
worker's process, so a notebook's kernel, environment and files are those of the serial path. A task
that raises is retried once, then reported with its notebook's error; the others go on and publish.
A notebook whose upstream notebook (`DEPENDS_ON`) executes in the same build starts after it finished.
Tasks that need a GPU ask for the Dask resource `GPU`, so a worker holding one GPU runs one at a time.
`run_notebook` sets the kernel's environment in `os.environ`, so every worker runs one task at a time.
A local cluster's kernels share the cores out (`kernel_threads`): Dask's workers alone would give each kernel one
thread, and kernels side by side that each used every core would spin on each other's (benchmarks/shared_cpu.py).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from graphlib import TopologicalSorter
from pathlib import Path

from ..contract import READS, upstream
from .errors import BookError
from .execute import run_notebook

# a notebook -> the notebooks whose *published* tables it reads (`contract.READS`, also a cache input): when
# both execute in one build, the reader must start after its upstream published, or it would read the previous run
DEPENDS_ON: dict[str, tuple[str, ...]] = {name: upstream(name) for name in READS}

CONNECT_TIMEOUT_S = 30
WORKERS_TIMEOUT_S = 120


def execute_notebook(name: str, *upstream, root: Path, notebooks_dir: Path, parameters: dict[str, dict],
                     staging: Path, wait: bool = False) -> float:
    """One task: execute and publish `name` under `root` as the serial path does; its wall time in seconds.

    `parameters` maps each notebook to its checked parameters (`prepare_parameters`: model folders already
    absolute, so they name the same folder in a worker started elsewhere). `upstream` holds the results of
    the tasks this one waited for; only their order matters. `wait`: wait for another process executing
    `name` (`lock.held`) instead of failing.
    """
    started = time.time()
    out_nb = Path(root) / "book" / "notebooks" / f"{name}.ipynb"
    run_notebook(name, out_nb, out_nb.with_suffix(""), parameters[name], notebooks_dir=notebooks_dir, staging=staging,
                 progress=False, wait=wait)
    return time.time() - started


def gpus_per_task(requested: int | None, local: bool) -> int:
    """GPUs each task asks for: `requested` if given; on a local cluster 1 when CUDA is available, else 0.

    On an existing cluster (`--scheduler`) tasks ask for GPUs only with `--gpus-per-task`: its workers
    say what they hold (`dask worker ... --resources GPU=1`).
    """
    if requested is not None:
        if requested < 0:
            raise BookError(f"--gpus-per-task must be >= 0, got {requested}.")
        return requested
    if not local:
        return 0
    import torch

    return 1 if torch.cuda.is_available() else 0


def submit(client, names: list[str], task: Callable, *, resources: dict | None = None, retries: int = 1,
           depends_on: dict[str, tuple[str, ...]] = DEPENDS_ON) -> dict:
    """One future per notebook in `names`, each waiting for the futures of its upstream notebooks in `names`.

    Keys are NAME-BUILD (BUILD new for each call), so two builds on one scheduler never share a task.
    """
    upstream = {name: [d for d in depends_on.get(name, ()) if d in names] for name in names}
    build = uuid.uuid4().hex[:8]
    futures: dict = {}
    for name in TopologicalSorter(upstream).static_order():
        futures[name] = client.submit(task, name, *(futures[d] for d in upstream[name]), key=f"{name}-{build}",
                                      resources=resources, retries=retries, pure=False)
    return futures


def _failure(name: str, futures: dict, depends_on: dict[str, tuple[str, ...]]) -> str:
    """The error of `name`'s failed future: its notebook's message, or which upstream notebook kept it from running."""
    failed_upstream = [d for d in depends_on.get(name, ()) if d in futures and futures[d].status == "error"]
    if failed_upstream:
        return (f"{name} was not executed: it reads the tables of {', '.join(failed_upstream)}, which failed; "
                "its published page is unchanged")
    err = futures[name].exception()
    if isinstance(err, BookError):
        return str(err)
    return f"{name} could not be executed on the cluster: {type(err).__name__}: {err}; its published page is unchanged"


def completed(client, names: list[str], task: Callable, *, resources: dict | None = None, retries: int = 1,
              depends_on: dict[str, tuple[str, ...]] = DEPENDS_ON) -> Iterator[tuple[str, object, str | None]]:
    """Run `task(name, *upstream results)` for every name on `client`; yield (name, result, None) or
    (name, None, error message) as each finishes (after its retries)."""
    from distributed import as_completed

    futures = submit(client, names, task, resources=resources, retries=retries, depends_on=depends_on)
    by_key = {f.key: name for name, f in futures.items()}
    for future in as_completed(list(futures.values())):
        name = by_key[future.key]
        if future.status == "error":
            yield name, None, _failure(name, futures, depends_on)
        else:
            yield name, future.result(), None


def _check_workers(client, gpus: int) -> None:
    """Refuse a cluster whose workers run several tasks per process or lack the GPUs a task asks for."""
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
    except TimeoutError:
        raise BookError(f"no Dask worker joined the scheduler in {WORKERS_TIMEOUT_S} s: start some "
                        "(dask worker ADDRESS --nthreads 1, or cluster.scale(N)).") from None
    workers = client.scheduler_info()["workers"]
    threaded = sorted(address for address, w in workers.items() if w["nthreads"] != 1)
    if threaded:
        raise BookError(f"Dask workers {', '.join(threaded)} run several threads; each notebook sets its kernel's environment "
                        "in its worker's process, so start the workers with --nthreads 1.")
    if gpus and not any(w.get("resources", {}).get("GPU", 0) >= gpus for w in workers.values()):
        raise BookError(f"each task asks for {gpus} GPU(s) but no worker holds that many: start the workers with "
                        f"--resources GPU={gpus}, or drop --gpus-per-task.")


def kernel_threads(workers: int) -> int:
    """Torch threads of each of `workers` kernels that run at once: cores // workers, at least one."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // workers)


@contextlib.contextmanager
def dask_client(workers: int | None, scheduler: str | None, gpus: int) -> Iterator:
    """A client on the scheduler at `scheduler`, or on a new LocalCluster of `workers` one-thread processes.

    The local workers hold {"GPU": gpus} each when `gpus` > 0; their kernels get `kernel_threads(workers)` torch
    threads (OMP_NUM_THREADS, unless the environment sets it); they have no memory limit, since the
    notebooks' memory is in their kernels (child processes), not in the workers; their logs are silenced
    below ERROR (a failed task's error is reported once, by the command, with its notebook's message).
    """
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as err:
            raise BookError(f"no Dask scheduler answers at {scheduler} ({err}): start one (dask scheduler, or a "
                            "SLURMCluster) and pass its address, or use --workers N for a local cluster.") from None
        with client:
            _check_workers(client, gpus)
            yield client
        return
    resources = {"GPU": gpus} if gpus else None
    env = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(kernel_threads(workers)))}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, resources=resources, memory_limit=0,
                      dashboard_address=None, silence_logs=logging.ERROR, env=env) as cluster, \
            Client(cluster) as client:
        yield client
