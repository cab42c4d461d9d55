"""Do a model's conditionals say anything? Their mean entropy against log|S|, and top-1 accuracy against chance.

A model with random weights gives conditionals q_i(· | x_{-i}) near the uniform law on its support S, and every
measure of the book then describes noise: its rectangles are "incompatible" by many times the tolerance, its chains
mix at once. The rule, fixed before any run and the same for every model: the conditionals are *near uniform* when,
over every site of the passages given,

- the mean entropy H̄ = mean_{r,i} −Σ_v q_i(v | x_{-i}) log q_i(v | x_{-i}) is within `ENTROPY_MARGIN` nats of log|S|
  (the entropy of the uniform law; within 0.5 nats, the conditionals spread over more than e^{-0.5} ≈ 61 % of S), or
- the share of sites whose most likely token is the passage's own is at most `CHANCE_FACTOR` / |S| (twice chance).

A trained MLM is far from both. On the run's design (`pages.run.check_sharpness`: the first 32 embedded passages with
16 supported tokens, 512 sites, fp32 on a CPU) the embedded minilm-mlm gave H̄ = 4.54 nats against log|S| = 10.29 and
top-1 accuracy 27.9 % (8,246× chance), minilm6-mlm 4.99 nats and 23.6 %; a 2-layer BERT with random weights
(tests/test_known_models.py) sits within the margin of log|S|.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .conditionals import checked_logits

ENTROPY_MARGIN = 0.5  # nats: H̄ ≥ log|S| − ENTROPY_MARGIN is near uniform
CHANCE_FACTOR = 2.0  # top-1 accuracy ≤ CHANCE_FACTOR / |S| is near chance


@dataclass(frozen=True)
class Sharpness:
    """A model's conditionals on some passages: mean entropy (nats), log|S|, top-1 accuracy, chance 1/|S|, sites."""

    mean_entropy: float
    log_support: float
    top1_accuracy: float
    chance: float
    sites: int

    @property
    def near_uniform(self) -> bool:
        """The module's rule: H̄ ≥ log|S| − ENTROPY_MARGIN, or top-1 accuracy ≤ CHANCE_FACTOR × chance."""
        return (self.mean_entropy >= self.log_support - ENTROPY_MARGIN
                or self.top1_accuracy <= CHANCE_FACTOR * self.chance)

    def warning(self, name: str) -> str:
        """The sentence a run on model `name` prints and shows in its result box when near uniform; "" otherwise."""
        if not self.near_uniform:
            return ""
        return (f"{name}'s conditionals are near uniform on the book's passages (mean entropy {self.mean_entropy:.2f} "
                f"nats against log|S| = {self.log_support:.2f}; top-1 accuracy {self.top1_accuracy:.1%} against "
                f"chance {self.chance:.2g}; rule: within {ENTROPY_MARGIN:g} nats of log|S| or at most "
                f"{CHANCE_FACTOR:g}× chance, over {self.sites} sites): an untrained or broken model, whose every "
                "measure here describes noise.")


def sharpness(model, states: torch.Tensor) -> Sharpness:
    """H̄ = mean over rows r and sites i of H(q_i(· | x^r_{-i})), and the share of (r, i) where argmax_v q_i = x^r_i,
    for the token states `states` (B × n) of `model` (any `ConditionalModel`), every site of every row."""
    B, n = states.shape
    rows, sites = states.repeat_interleave(n, 0), torch.arange(n).repeat(B)
    logp = torch.log_softmax(checked_logits(model, rows, sites), -1)
    entropy = -torch.where(logp > float("-inf"), logp.exp() * logp, torch.zeros_like(logp)).sum(-1)
    own = rows[torch.arange(len(rows)), sites].to(logp.device)
    support = int(model.support.sum())
    return Sharpness(mean_entropy=float(entropy.mean()), log_support=math.log(support),
                     top1_accuracy=float((logp.argmax(-1) == own).float().mean()), chance=1 / support,
                     sites=len(rows))
