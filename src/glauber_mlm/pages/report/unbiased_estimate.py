"""Page 07's unbiased-estimate section: H_{k:m} (`samplers.unbiased`) on the embedded model beside a plain run of
the same forward rows, each with its interval and its cost."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown

from ..plots import show_table
from ...samplers.sampling import glauber
from ...samplers.unbiased import t_interval, unbiased


def continuation_share(model) -> Callable[[torch.Tensor], torch.Tensor]:
    """h(x) = the share of the n sites holding a word-piece continuation token ('##…' in a WordPiece vocabulary):
    one table lookup a state, no forward."""
    tokens = model.tokenizer.convert_ids_to_tokens(list(range(int(model.vocab_size))))
    table = torch.tensor([t.startswith("##") for t in tokens], dtype=torch.float64)
    return lambda x: table[x.cpu()].mean(-1)


def unbiased_against_plain(model, x0: torch.Tensor, y0: torch.Tensor, h: Callable[[torch.Tensor], torch.Tensor],
                           temperature: float, lag: int, pilot_meetings: np.ndarray, budget: int,
                           seed: int) -> pd.DataFrame:
    """π(h) two ways, for a batched h (states → one value each). The unbiased estimate: k the 0.99 quantile of
    the pilot L-lag meeting times (a rule fixed before the run), m = 5k, one replicate per pair (x0[p], y0[p]), a
    t-interval over replicates. The plain run: Glauber chains from x0 for the same forward rows in all, the first k
    steps discarded, a t-interval over the chains' time averages (the chains are the independent units)."""
    n = x0.shape[1]
    k = max(1, int(np.quantile(pilot_meetings, 0.99)))
    m = 5 * k
    est = unbiased(model, x0, y0, h, k, m, lag, temperature, seed=seed, budget=budget)
    mean, low, high = est.interval()
    rows = int(est.cost[est.met].sum())
    chains = x0.shape[0]
    steps = max(k + 1, math.ceil(rows / chains))
    states = glauber(model, x0, steps, temperature, seed + 10 * chains, record_every=1).states[k:]
    averages = h(states.reshape(-1, n)).view(states.shape[0], chains).mean(0).numpy()
    p_mean, p_low, p_high = t_interval(averages)
    return pd.DataFrame([
        dict(method="unbiased H_{k:m}", k=k, m=m, lag=lag, units=int(est.met.sum()), estimate=float(mean),
             low=float(low), high=float(high), forward_rows=rows, censored=int((~est.met).sum()),
             mean_meeting=float(est.meeting_times[est.met].mean())),
        dict(method="plain run, burn-in k", k=k, m=steps, lag=np.nan, units=chains, estimate=float(p_mean),
             low=float(p_low), high=float(p_high), forward_rows=chains * steps, censored=0, mean_meeting=np.nan)])


def unbiased_finding(table: pd.DataFrame, n: int, temperature: float) -> Markdown:
    """The section's reading, worded to hold for any outcome."""
    u, p = table.iloc[0], table.iloc[1]
    overlap = u.low <= p.high and p.low <= u.high
    return Markdown(
        f"At n = {n}, τ = {temperature:g}, the unbiased estimate of the share of sites holding a word-piece "
        f"continuation "
        f"is {u.estimate:.3f} [{u.low:.3f}, {u.high:.3f}] from {u.units} replicates ({u.forward_rows:,} forward rows, "
        f"k = {u.k}, m = {u.m}, lag {u.lag:g}); the plain run's is {p.estimate:.3f} [{p.low:.3f}, {p.high:.3f}] from "
        f"{p.units} chains of {p.m} steps ({p.forward_rows:,} rows). The two intervals "
        f"{'overlap' if overlap else 'do not overlap'}. Only the first is unbiased whatever k: the second "
        "rests on the burn-in k being long enough, which nothing here checks.")


def show(table: pd.DataFrame):
    """The section's table: the two estimates, their intervals and their costs."""
    return show_table(table)
