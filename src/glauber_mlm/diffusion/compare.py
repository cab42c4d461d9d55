"""Each sampler's exact law beside the reference laws, as rows of a table: the comparison notebook 09 draws.

`sampler_plans(n, T)` names the samplers at T steps (LLaDA's at min(T, n)); `reference_laws` gives π_G, the
any-order mixture, the two chain-rule orders and the PLL field; `distance_rows` the TV of every sampler's law to each
reference, per T and τ, with the forwards a sample costs (one per step).
"""
from __future__ import annotations

import numpy as np

from ..exact.scan_order import tv
from .exact_laws import any_order_law, chain_rule_law, glauber_law, plan_law, pll_law
from .partial_table import PartialTable
from .plan import Step, llada, mdlm, remdm


def sampler_plans(n: int, steps: int, eta: float = 0.02, t_on: float = 0.55, t_off: float = 0.05,
                  alpha_on: float = 0.9) -> dict[str, list[Step]]:
    """The samplers compared at T steps: MDLM; ReMDM cap, rescale, loop (η, t_on, t_off, α_on); LLaDA-style with
    untempered, tempered and random confidence at min(T, n) steps."""
    commits = min(steps, n)
    return {"MDLM": mdlm(steps), "ReMDM-cap": remdm(steps, "cap", eta),
            "ReMDM-rescale": remdm(steps, "rescale", eta),
            "ReMDM-loop": remdm(steps, "loop", eta, t_on, t_off, alpha_on),
            "LLaDA low-confidence": llada(n, commits, "low_confidence"),
            "LLaDA tempered confidence": llada(n, commits, "tempered"),
            "LLaDA random": llada(n, commits, "random")}


def reference_laws(partial: PartialTable, temperature: float = 1.0) -> dict[str, np.ndarray]:
    """π_G, the any-order mixture, left-to-right and right-to-left chain rules, the PLL field, at τ."""
    n = partial.n
    return {"glauber": glauber_law(partial, temperature), "any_order": any_order_law(partial, temperature),
            "left_to_right": chain_rule_law(partial, range(n), temperature),
            "right_to_left": chain_rule_law(partial, range(n - 1, -1, -1), temperature),
            "pll": pll_law(partial, temperature)}


def distance_rows(partial: PartialTable, steps: list[int], temperatures: list[float], **loop) -> list[dict]:
    """One row per (τ, T, sampler): TV of its exact law to each reference law, and its forwards (= steps run)."""
    rows = []
    for tau in temperatures:
        refs = reference_laws(partial, tau)
        for T in steps:
            for name, plan in sampler_plans(partial.n, T, **loop).items():
                law = plan_law(partial, plan, tau)
                rows.append(dict(temperature=tau, steps=T, sampler=name, forwards=len(plan),
                                 **{f"tv_{ref}": tv(law, ref_law) for ref, ref_law in refs.items()}))
    return rows
