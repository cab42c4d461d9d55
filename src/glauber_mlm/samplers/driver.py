"""The one sampler loop: a kernel's `step` until the slowest chain reaches the end, with progress and checkpoints.

What a run keeps is its recorder's business (a trajectory's states and logs, coupling times, MH decisions): the
driver calls `record(state, info)` after every step. With a `Checkpointer` it also saves `snapshot(state)` (every
`checkpoint_every` steps of the slowest chain, and at the end) and, where a matching checkpoint exists, starts from
`restore(saved, state)`: a resumed run returns what the uninterrupted run returns (counter-based draws, see `rng`),
and says so on stderr, where its progress bar is ("resuming glauber from its checkpoint at step s of S").
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from tqdm.auto import tqdm

from .checkpoint import Checkpointer

State = TypeVar("State")


class Recorder(Protocol[State]):
    """What a run keeps of each step."""

    def record(self, state: State, info: Any) -> None: ...


class Checkpointed(Recorder[State], Protocol[State]):
    """A recorder whose run can be saved in a checkpoint and restored from it."""

    def snapshot(self, state: State) -> dict: ...

    def restore(self, saved: dict, state: State) -> State: ...


def drive(step: Callable[[State], tuple[State, Any]], state: State, recorder: Recorder[State],
          position: Callable[[State], int], total: int, ckpt: Checkpointer | None, desc: str,
          progress: bool) -> State:
    """state_{j+1}, info_j = step(state_j) until position(state) (the slowest running chain's step; `total` when none
    runs) reaches `total`: `recorder.record` after each step; with `ckpt` (the recorder `Checkpointed`), a resume
    first, a save after each step that passes a multiple of `ckpt.every` and one at the end."""
    if ckpt is not None and (saved := ckpt.resume()) is not None:
        state = recorder.restore(saved, state)
        announce_resume(desc, position(state), total, ckpt)
    bar = progress_bar(total, desc, progress, initial=position(state))
    while (at := position(state)) < total:
        state, info = step(state)
        recorder.record(state, info)
        bar.update(position(state) - at)
        if ckpt is not None:
            ckpt.maybe_save(position(state), lambda _: recorder.snapshot(state))
    bar.close()
    if ckpt is not None:
        ckpt.maybe_save(total, lambda _: recorder.snapshot(state), final=True)
    return state


def progress_bar(total: int, desc: str, enabled: bool = True, initial: int = 0) -> tqdm:
    """The engine's one kind of progress bar (stderr, redrawn at most every 2 s): the driver's, and every measure's
    through `counted`; `enabled` False gives a silent one."""
    return tqdm(total=total, initial=initial, disable=not enabled, desc=desc, mininterval=2.0)


def counted(items: range, desc: str, enabled: bool = True) -> Iterator[int]:
    """`items` one by one, a `progress_bar` ticking once per item (a measure's loop over contexts or batches)."""
    with progress_bar(len(items), desc, enabled) as bar:
        for item in items:
            yield item
            bar.update()


def announce_resume(desc: str, step: int, total: int, ckpt: Checkpointer) -> None:
    """'resuming DESC from its checkpoint at step s of S (PATH)' on stderr: a resumed run is told from a fresh one."""
    print(f"resuming {desc} from its checkpoint at step {step} of {total} ({ckpt.path})", file=sys.stderr, flush=True)
