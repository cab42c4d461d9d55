"""Argument checks shared by the samplers, measures and model adapters: each returns the value in the type the
code uses, or raises an error that names the argument, what it got and how to fix it, before any heavy work.
"""
from __future__ import annotations

import math
import numbers
import operator
from pathlib import Path

import torch


def check_temperatures(temperature) -> torch.Tensor:
    """Every τ given, as a flat float32 tensor, after checking each is a finite real number > 0.

    Bools and strings are refused, also inside a list: torch would read True as τ = 1."""
    items = temperature if isinstance(temperature, (list, tuple)) else [temperature]
    if any(isinstance(t, (bool, str)) for t in items):
        raise TypeError(f"temperature must be a positive float or a list of them, got {temperature!r}.")
    try:
        tau = torch.as_tensor(temperature)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"temperature must be a positive float or a list of them, got {temperature!r}.") from err
    if tau.dtype == torch.bool or tau.is_complex():
        raise TypeError(f"temperature must hold real numbers, got dtype {tau.dtype}.")
    tau = tau.to(torch.float32).flatten()
    if tau.numel() == 0:
        raise ValueError("temperature is empty: pass a positive float or one value per chain.")
    bad = ~torch.isfinite(tau) | (tau <= 0)
    if bad.any():
        raise ValueError(
            f"temperature must be finite and > 0, got {tau[bad].tolist()}: "
            "q_i^τ ∝ exp(ℓ_i/τ) is undefined there; use e.g. τ = 0.05 for a near-greedy chain."
        )
    return tau


def as_temperatures(temperature: float | list[float] | torch.Tensor, batch: int, device: torch.device,
                    item: str = "chain") -> torch.Tensor:
    """One temperature per `item` (a chain, a pair, a rectangle …), float32: one τ for all, or one per item."""
    tau = check_temperatures(temperature).to(device)
    if tau.numel() == 1:
        return tau.expand(batch)
    if tau.numel() != batch:
        what = f"{batch} {item}" + ("s" if batch != 1 else "")
        raise ValueError(f"got {tau.numel()} temperatures for {what}: pass one, or one per {item}.")
    return tau


FORWARD_DTYPES_BY_NAME = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def check_dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    """A forward-pass dtype: None (the model's default), torch.float32 / bfloat16 / float16, or its name as the CLI
    writes it ('float32', 'bfloat16', 'float16'). Other dtypes are refused: a network's matmuls run in none of them."""
    if dtype is None or dtype in FORWARD_DTYPES_BY_NAME.values():
        return dtype
    if isinstance(dtype, str) and dtype in FORWARD_DTYPES_BY_NAME:
        return FORWARD_DTYPES_BY_NAME[dtype]
    raise TypeError(f"dtype must be a forward dtype, one of torch.float32, torch.bfloat16, torch.float16 (or its name "
                    f"{', '.join(map(repr, FORWARD_DTYPES_BY_NAME))}), or None for the model's default; got {dtype!r}.")


def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as a Python int; bools, floats (even 5.0), strings and values outside [minimum, maximum] are refused."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        got = None
    else:
        try:
            got = operator.index(value)
        except TypeError:
            got = None
    if got is None:
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__}): pass a plain int.")
    if (minimum is not None and got < minimum) or (maximum is not None and got > maximum):
        bounds = f"in [{minimum}, {maximum}]" if maximum is not None else f"≥ {minimum}"
        raise ValueError(f"{name} must be an integer {bounds}, got {got}.")
    return got


def check_real(name: str, value, minimum: float | None = None, above: bool = False, fix: str = "") -> float:
    """`value` as a finite Python float ≥ `minimum` (> it if `above`); bools, strings, NaN and ±inf are refused.

    `fix` ends the message, e.g. with the usual value."""
    tail = f" {fix}" if fix else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__}).{tail}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.{tail}")
    if minimum is not None and (value <= minimum if above else value < minimum):
        raise ValueError(f"{name} must be {'>' if above else '≥'} {minimum}, got {value!r}.{tail}")
    return float(value)


def check_sites(sites, batch: int, n: int, name: str = "sites") -> torch.Tensor:
    """One integer site in [0, n) per row, as int64: float, bool and out-of-range sites are refused."""
    sites = torch.as_tensor(sites)
    if sites.dtype == torch.bool or sites.is_floating_point() or sites.is_complex():
        raise TypeError(f"{name} must hold integer positions, got dtype {sites.dtype}.")
    sites = sites.flatten()
    if sites.numel() != batch:
        raise ValueError(f"need one {name} entry per row ({batch}), got {sites.numel()}.")
    if ((sites < 0) | (sites >= n)).any():
        raise ValueError(
            f"{name} must lie in [0, {n}) (positions among the n ordinary tokens, frame excluded), got "
            f"{sites[(sites < 0) | (sites >= n)].unique()[:5].tolist()}."
        )
    return sites.long()


def check_states(model, states: torch.Tensor) -> torch.Tensor:
    """Validate a (B, n) batch of token ids against `model` (a `ConditionalModel`) before any forward pass.

    Every id must lie in the model's support: a state is the n ordinary tokens only, never the special
    frame ([CLS] … [SEP], <s> … </s>), a mask, padding or an unused id."""
    states = torch.as_tensor(states)
    if states.ndim != 2:
        raise ValueError(f"states must be a (chains, length) tensor of token ids, got shape {tuple(states.shape)}.")
    if states.shape[0] == 0 or states.shape[1] == 0:
        raise ValueError(f"empty batch (shape {tuple(states.shape)}): pass at least one chain of at least one token.")
    if states.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"states must hold integer token ids, got dtype {states.dtype}.")
    n = states.shape[1]
    if n > model.max_length:
        raise ValueError(
            f"sequences of {n} tokens are longer than the model takes ({model.max_length} tokens "
            "besides its special frame tokens): use shorter passages or a model with more positions."
        )
    if (states < 0).any() or (states >= model.vocab_size).any():
        raise ValueError(f"token ids must lie in [0, {model.vocab_size}): check the tokenizer matches the model.")
    support = model.support.to(states.device)
    if not support.any():
        raise ValueError("the model's support is empty: no token id may be sampled; check its tokenizer and vocabulary.")
    off = ~support[states.long()]
    if off.any():
        ids = states[off].unique()[:8].tolist()
        tokenizer = getattr(model, "tokenizer", None)
        names = f" ({tokenizer.convert_ids_to_tokens(ids)})" if tokenizer is not None else ""
        raise ValueError(
            f"states hold ids {ids}{names} outside the model's support: special frame, mask, padding or unused "
            "tokens. A state is the n ordinary tokens only: encode with add_special_tokens=False "
            "(MLMAdapter.encode does), or drop a tokenizer's frame with input_ids[:, 1:-1]."
        )
    return states.to(model.device, torch.int64)


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors: a CUDA device's free memory, else the host's (psutil, or /proc/meminfo
    MemAvailable); None where neither can be read."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        import psutil
    except ImportError:
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None
    return psutil.virtual_memory().available


def check_memory(what: str, host_bytes: int, device_bytes: int, device: torch.device, fix: str) -> None:
    """Refuse before starting a call whose estimated memory (host: kept results; device: the per-step working
    set) exceeds what is available now; `fix` says how to make it fit."""
    on_host = host_bytes + (device_bytes if device.type != "cuda" else 0)
    needs = [(on_host, torch.device("cpu"), "host")]
    if device.type == "cuda":
        needs.append((device_bytes, device, str(device)))
    for need, dev, where in needs:
        free = available_memory(dev)
        if free is not None and need > free:
            raise MemoryError(
                f"{what} needs about {need / 2**30:.2f} GiB of {where} memory but {free / 2**30:.2f} GiB is "
                f"available: {fix}"
            )
