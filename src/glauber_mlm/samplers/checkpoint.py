"""Checkpoints for long runs: a run's state saved atomically every few steps, resumed only by the same call.

Randomness is counter-based (see `rng`): a chain's uniforms depend only on (seed, step, stream), so a
run restored from its state at step t continues the trajectory it would have followed uninterrupted.
A checkpoint is a `torch.save`d dict of tensors and ints tagged with `fingerprint` of the call's inputs (a model
by every parameter and buffer) and carrying the sha256 of its own values (`checksum`); `load` trusts it only when
both match. A file written by other inputs, or one that cannot be read or fails its checksum (truncated, corrupt,
a flipped bit), is set aside under a new name with a warning naming the path and the reason,
never trusted and never deleted. A finished run's checkpoint stays: a rerun of the same call returns at once.
Each save writes the whole state so far (recorded states, site and change logs), so a run writes about
(steps / every) × its result in all: for long runs that record many states, raise `checkpoint_every`.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

# module -> (the state of its tensors, their sha256): see `module_identity`
_IDENTITIES: weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple, bytes]] = weakref.WeakKeyDictionary()


def package_version() -> str:
    """The installed glauber-mlm version ('unknown' when run from a source tree that is not installed)."""
    try:
        return importlib.metadata.version("glauber-mlm")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def tensor_bytes(t: torch.Tensor) -> bytes:
    """dtype, shape and raw bytes of a tensor (on the host)."""
    raw = t.detach().flatten().cpu().contiguous().view(torch.uint8).numpy().tobytes()
    return f"{t.dtype}{tuple(t.shape)}".encode() + raw


def module_identity(module: torch.nn.Module) -> bytes:
    """sha256 of every parameter and buffer of a network, each by name, dtype, shape and bytes.

    Hashed once, then again only when a tensor was replaced, moved or written in place since: the cache is keyed on
    each tensor's storage address and version counter, which every in-place write (an optimiser step, `copy_`,
    `load_state_dict`) advances. A write through `.data` does not advance it: call `forget_identity(module)`
    (`MLMAdapter.refresh_weights` does) after one."""
    tensors = [*module.named_parameters(), *module.named_buffers()]
    # an inference tensor (made under inference_mode, e.g. a buffer built lazily by a forward) has no version
    # counter: a network holding one is hashed on every call
    state = None if any(t.is_inference() for _, t in tensors) else tuple(
        (name, t.data_ptr(), t._version, t.dtype, t.shape, t.device) for name, t in tensors)
    cached = _IDENTITIES.get(module)
    if state is None or cached is None or cached[0] != state:
        h = hashlib.sha256()
        for name, t in tensors:
            h.update(name.encode() + b"\0" + tensor_bytes(t))
        cached = _IDENTITIES[module] = (state, h.digest())
    return cached[1]


def forget_identity(module: torch.nn.Module) -> None:
    """Drop the cached `module_identity` of `module` (after a write its version counters do not see)."""
    _IDENTITIES.pop(module, None)


def model_identity(model) -> bytes:
    """Class, vocabulary size, length, `name`, and every tensor, network, string, float, bool or dtype attribute
    (ints other than the sizes are left out: they may be counters)."""
    parts = [type(model).__qualname__, model.vocab_size, model.max_length, getattr(model, "name", None)]
    out = repr(parts).encode()
    for key, value in sorted(getattr(model, "__dict__", {}).items()):
        if isinstance(value, torch.Tensor):
            out += key.encode() + tensor_bytes(value)
        elif isinstance(value, torch.nn.Module):
            out += key.encode() + module_identity(value)
        elif isinstance(value, (str, float, bool, torch.dtype)):
            out += f"{key}={value!r}".encode()
    return out


def encode(value) -> bytes:
    """Canonical bytes of one input: tensors by dtype, shape and bytes; a model by `model_identity`; else its repr."""
    if isinstance(value, torch.Tensor):
        return tensor_bytes(value)
    if hasattr(value, "logits") and hasattr(value, "vocab_size"):
        return model_identity(value)
    return repr(value).encode()


def digest(values: dict, prefix: str = "") -> str:
    """sha256 over `prefix` and each value's canonical bytes (`encode`), sorted by name."""
    h = hashlib.sha256(prefix.encode())
    for name in sorted(values):
        part = encode(values[name])
        h.update(f"\0{name}\0{len(part)}\0".encode() + part)
    return h.hexdigest()


def fingerprint(**inputs) -> str:
    """sha256 over the package version and the call's inputs (sorted by name): the tag a checkpoint must match."""
    return digest(inputs, f"glauber-mlm {package_version()}")


def checksum(state: dict) -> str:
    """The sha256 of a checkpoint's values (all but its "checksum"): tensors by their bytes, numbers by their repr."""
    return digest({k: v for k, v in state.items() if k != "checksum"})


def save(path: str | Path, state: dict) -> None:
    """Write `state` (tensors and ints) atomically: a temporary file in the same folder, fsync, os.replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def set_aside(path: Path, tag: str) -> Path:
    """Rename `path` to `<name>.<tag>` (or `<name>.<tag>.1`, … if taken) and return the new path."""
    aside, i = path.with_name(f"{path.name}.{tag}"), 0
    while aside.exists():
        i += 1
        aside = path.with_name(f"{path.name}.{tag}.{i}")
    os.replace(path, aside)
    return aside


def load(path: str | Path, fingerprint: str) -> dict | None:
    """The saved state when `path` holds a readable checkpoint tagged `fingerprint`; else None.

    A missing file returns None quietly; an unreadable one, or one whose values fail their checksum, is renamed
    `<name>.corrupt`, one written by other inputs `<name>.other-inputs`, each with a warning naming the path and
    the reason."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "fingerprint" not in state:
            raise ValueError("not a glauber-mlm checkpoint")
        if "checksum" not in state:
            raise ValueError("it carries no checksum (written by an older glauber-mlm)")
        if checksum(state) != state["checksum"]:
            raise ValueError("its values fail their checksum (a changed bit)")
    except Exception as err:  # any failure to read means the file cannot be trusted
        aside = set_aside(path, "corrupt")
        warnings.warn(f"checkpoint {path} is unreadable/truncated or damaged ({type(err).__name__}: {err}); "
                      f"moved to {aside.name}, starting afresh.", stacklevel=3)
        return None
    if state["fingerprint"] != fingerprint:
        aside = set_aside(path, "other-inputs")
        warnings.warn(f"checkpoint {path} was written by other inputs (model, states, steps, temperatures, seeds, "
                      f"options or package version differ); moved to {aside.name}, starting afresh.", stacklevel=3)
        return None
    return state


@dataclass
class Checkpointer:
    """Saves a run's state to `path` whenever its step passes a multiple of `every`; `path=None` does nothing."""

    path: Path | None
    every: int
    fingerprint: str
    last: int = 0  # the step of the last save (or of the restored state)

    def resume(self) -> dict | None:
        """The matching saved state, if any (see `load`)."""
        state = None if self.path is None else load(self.path, self.fingerprint)
        if state is not None:
            self.last = int(state["step"])
        return state

    def maybe_save(self, step: int, state: Callable[[int], dict], final: bool = False) -> None:
        """Save `state(step)` when ⌊step/every⌋ grew since the last save, or at the end (`final`) if not yet."""
        due = step > self.last if final else step // self.every > self.last // self.every
        if self.path is not None and due:
            values = {**state(step), "step": step, "fingerprint": self.fingerprint}
            save(self.path, {**values, "checksum": checksum(values)})
            self.last = step


def checkpointer(path: str | Path | None, every: int, **inputs) -> Checkpointer:
    """A `Checkpointer` for a call with these inputs (the fingerprint is computed only when `path` is given)."""
    return Checkpointer(None if path is None else Path(path), every, fingerprint(**inputs) if path is not None else "")
