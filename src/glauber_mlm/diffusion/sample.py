"""Run a masked-diffusion plan on a batch of chains through the one driver (`samplers.driver.drive`)."""
from __future__ import annotations

import torch

from ..samplers.driver import drive
from ..validate import check_int
from .denoiser import MASK, Denoiser
from .kernels import DiffusionState, diffusion_init, diffusion_step
from .plan import Step


class _Final:
    """Keeps nothing: a plan's output is its last state."""

    def record(self, state: DiffusionState, info) -> None:
        pass


def sample(denoiser: Denoiser, n: int, plan: list[Step], seeds: torch.Tensor, temperature: float | torch.Tensor = 1.0,
           dtype: torch.dtype | None = None, progress: bool = False) -> torch.Tensor:
    """x (B, n): chain b runs `plan` from the fully masked state with seed `seeds[b]`; every site is decoded at the end
    (a plan whose last step leaves a mask is refused)."""
    n = check_int("n", n, 1)
    seeds = torch.as_tensor(seeds, dtype=torch.int64).flatten()
    if not plan:
        raise ValueError("the plan has no steps: build one with diffusion.plan.mdlm(T), remdm(T) or llada(n, T).")
    final = drive(lambda s: (diffusion_step(denoiser, s, seeds, plan[s.step], temperature, dtype), None),
                  diffusion_init(seeds.numel(), n), _Final(), lambda s: s.step, len(plan), None, "diffusion", progress)
    if (final.z == MASK).any():
        raise ValueError("the plan left masked sites at its end: its last step must unmask every site (MDLM's and "
                         "ReMDM's do; LLaDA's commit counts must sum to n).")
    return final.z
