"""Masked-diffusion samplers on any masked LM, and their exact twins on a real model's restricted chain.

`denoiser`: the interface (logits at every site of a partial state) for Hugging Face MLMs, restricted passages and
known joints; `schedules` and `plan`: MDLM, ReMDM (cap, rescale, loop) and LLaDA-style plans; `kernels` and `sample`:
the seeded Monte Carlo samplers; `partial_table` and `exact_laws`: every partial state's conditionals, each plan's
exact output law and the reference laws (π_G, chain-rule orders, the any-order mixture, the PLL field).
"""
from .denoiser import MASK, HFDenoiser, JointDenoiser, RestrictedDenoiser, denoiser_probabilities
from .exact_laws import (any_order_law, chain_rule_law, commit_kernel, glauber_law, loop_phase_kernel, plan_law,
                         pll_law, product_kernel, remask_kernel)
from .partial_table import OneMaskChain, PartialTable, partial_table
from .plan import llada, mdlm, remdm
from .sample import sample

__all__ = ["MASK", "HFDenoiser", "JointDenoiser", "OneMaskChain", "PartialTable", "RestrictedDenoiser",
           "any_order_law", "chain_rule_law", "commit_kernel", "denoiser_probabilities", "glauber_law", "llada",
           "loop_phase_kernel", "mdlm", "partial_table", "plan_law", "pll_law", "product_kernel", "remask_kernel",
           "remdm", "sample"]
