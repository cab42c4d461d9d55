"""Chains whose answers are known exactly: pairwise models with a closed-form joint law or incompatibility
(`models`), their enumerated kernels and laws under each scan order (`scan_order`), and the check that a chain's
visits match a known law (`calibration`).

`glauber_mlm.exact.potts_chain` and the other model constructors are re-exported here, as before the split.
"""
from .models import PairwiseModel, compatible_pairwise, exact_rectangle, incompatible_pairwise, potts_chain

__all__ = ["PairwiseModel", "compatible_pairwise", "exact_rectangle", "incompatible_pairwise", "potts_chain"]
