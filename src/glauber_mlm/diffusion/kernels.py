"""Masked-diffusion samplers as (init, step) kernels on batches of partial states, seeded and counter-based.

Step j of chain b draws its uniforms at counter j of its seed (`rng.uniforms`), one stream per site and use, so a
chain's draws depend on its own seed only. `product_step`: each masked site i unmasks to c ~ p_i^τ(· | z) with
probability `rates.unmask`, each decoded site remasks with probability `rates.remask`, independently given z (MDLM,
ReMDM). `commit_step`: a token c_i ~ p_i^τ(· | z) at every masked site, the `commits` sites of highest confidence
keep theirs (ties to the lower site), the others stay masked (LLaDA).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..rng import sample_categorical, uniforms
from ..validate import as_temperatures
from .denoiser import MASK, Denoiser
from .plan import CommitStep, ProductStep, Step

MOVE, TOKEN, CONFIDENCE = range(3)
FIRST_STREAM = 1000  # the diffusion streams start past the Glauber ones (`rng`): stream = FIRST_STREAM + 3i + use


@dataclass
class DiffusionState:
    """B partial states (MASK at masked sites) and the steps taken."""

    z: torch.Tensor  # (B, n) int64
    step: int


def diffusion_init(batch: int, n: int) -> DiffusionState:
    """B fully masked states of n sites."""
    return DiffusionState(torch.full((batch, n), MASK, dtype=torch.int64), 0)


def site_uniforms(seeds: torch.Tensor, step: int, n: int, use: int) -> torch.Tensor:
    """U[0,1) per chain and site (B, n): counter `step` of stream FIRST_STREAM + 3i + use of each chain's seed."""
    return torch.stack([uniforms(seeds, step, FIRST_STREAM + 3 * i + use) for i in range(n)], 1)


def _draw(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """c_bi ~ probs[b, i] by inverse CDF at u[b, i]: (B, n, V), (B, n) → (B, n)."""
    B, n, V = probs.shape
    return sample_categorical(probs.reshape(B * n, V), u.reshape(-1)).view(B, n)


@torch.inference_mode()
def diffusion_step(denoiser: Denoiser, state: DiffusionState, seeds: torch.Tensor, step: Step,
                   temperature: float | torch.Tensor = 1.0, dtype: torch.dtype | None = None) -> DiffusionState:
    """One step of the plan on every chain: one forward of the denoiser on the B partial states."""
    z = state.z.clone()
    B, n = z.shape
    logits = denoiser.logits(z, dtype).double().cpu()
    if not torch.isfinite(logits.amax(-1)).all():
        raise ValueError("the denoiser gave non-finite logits at some site: check the model's weights or run it in "
                         "dtype=torch.float32.")
    tau = as_temperatures(temperature, B, torch.device("cpu")).double().view(-1, 1, 1)
    probs = torch.softmax(logits / tau, -1)
    masked = z == MASK
    drawn = _draw(probs, site_uniforms(seeds, state.step, n, TOKEN))
    if isinstance(step, ProductStep):
        move = site_uniforms(seeds, state.step, n, MOVE)
        unmask = masked & (move < step.rates.unmask)
        remask = ~masked & (move < step.rates.remask)
        z = torch.where(unmask, drawn, torch.where(remask, MASK, z))
    elif isinstance(step, CommitStep):
        if step.confidence == "random":
            conf = site_uniforms(seeds, state.step, n, CONFIDENCE)
        else:
            p = torch.softmax(logits, -1) if step.confidence == "low_confidence" else probs
            conf = p.gather(2, drawn.unsqueeze(-1)).squeeze(-1)
        conf = torch.where(masked, conf, -1.0)
        order = torch.sort(-conf, dim=1, stable=True).indices[:, : step.commits]
        commit = torch.zeros_like(masked).scatter_(1, order, True) & masked
        z = torch.where(commit, drawn, z)
    else:
        raise TypeError(f"a step is a ProductStep or a CommitStep, got {type(step).__name__}.")
    return DiffusionState(z, state.step + 1)
