"""One run per notebook, one build per book: an exclusive `flock` on `<root>/_build/locks/NAME.lock`.

A second `run` of a notebook would delete the first one's staging folder (and a second `book` its pages'),
so it is refused, naming the process that holds the lock, or waits for it (`--wait`). The kernel releases
a `flock` when its holder exits, however it exits (kill -9 too), so a lock is never stale; the file itself
stays (deleting it would let a waiter and a newcomer lock two different files).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from .errors import BookError


def lock_dir(staging: Path) -> Path:
    """`<root>/_build/locks`, beside the staging folder `<root>/_build/staging`."""
    return Path(staging).parent / "locks"


@contextlib.contextmanager
def held(path: Path, what: str, wait: bool = False) -> Iterator[None]:
    """Hold the lock file `path` for `what` (e.g. 'notebook 00_exact_models') inside the block.

    Held by another process: a BookError naming its pid, or with `wait` a wait until it is released.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"  # empty while the holder writes its pid
            if not wait:
                raise BookError(f"{what} is already being executed by {holder} (lock {path}): let it finish, "
                                "stop it, or add --wait to start when it is done.") from None
            print(f"waiting for {holder}, which is executing {what} (lock {path})", file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"process {os.getpid()} ({' '.join(sys.argv)[:200]})\n")
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)  # the next holder writes its own pid; closing the file releases the lock
