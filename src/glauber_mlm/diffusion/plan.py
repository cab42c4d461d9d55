"""A masked-diffusion sampler as a plan: what each of its T steps does, shared by the Monte Carlo sampler
(`kernels`, `sample`) and its exact twin (`exact_laws`), so both run the same schedule.

A step is a `ProductStep` (each masked site unmasks with rate·p^τ(c | z), each decoded one remasks with σ, sites
independent given z: MDLM, ReMDM) or a `CommitStep` (draw a token at every masked site from p^τ, commit the `commits`
most confident, LLaDA). Confidence: "low_confidence" (the untempered p^1 of the drawn token, as LLaDA's reference
code computes it), "tempered" (p^τ of the drawn token, ML-GSAI/LLaDA#37) or "random" (a uniform: the committed sites
are a uniform subset).
"""
from __future__ import annotations

from dataclasses import dataclass

from .schedules import StepRates, commit_counts, mdlm_rates, remdm_rates

CONFIDENCES = ("low_confidence", "tempered", "random")


@dataclass(frozen=True)
class ProductStep:
    rates: StepRates


@dataclass(frozen=True)
class CommitStep:
    commits: int
    confidence: str


Step = ProductStep | CommitStep


def mdlm(steps: int) -> list[Step]:
    """MDLM ancestral sampling on the log-linear T-step grid."""
    return [ProductStep(r) for r in mdlm_rates(steps)]


def remdm(steps: int, schedule: str = "cap", eta: float = 0.02, t_on: float = 0.55, t_off: float = 0.05,
          alpha_on: float = 0.9) -> list[Step]:
    """ReMDM (arXiv 2503.00307) with the cap, rescale or loop schedule (`schedules.remdm_rates`)."""
    return [ProductStep(r) for r in remdm_rates(steps, schedule, eta, t_on, t_off, alpha_on)]


def llada(n: int, steps: int, confidence: str = "low_confidence") -> list[Step]:
    """LLaDA-style confidence remasking: `commit_counts(n, T)` commits per step, chosen by `confidence`."""
    if confidence not in CONFIDENCES:
        raise ValueError(f"confidence must be one of {', '.join(map(repr, CONFIDENCES))}, got {confidence!r}.")
    return [CommitStep(c, confidence) for c in commit_counts(n, steps)]
