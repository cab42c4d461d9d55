"""Chains whose answers are known exactly: pairwise models with a closed-form joint law or incompatibility
(`models`), their enumerated kernels and laws under each scan order (`scan_order`), the check that a chain's
visits match a known law (`calibration`), a real model's chain restricted to a few candidates at a few sites
(`restricted`), and the exact quantities of any such chain (`quantities`).

`glauber_mlm.exact.potts_chain` and the other model constructors are re-exported here, as before the split.
"""
from .models import PairwiseModel, compatible_pairwise, exact_rectangle, incompatible_pairwise, potts_chain
from .quantities import (Incompatibility, SpectralGap, asymptotic_variance, conditional_table, distance_curve, dobrushin_bound,
                         dobrushin_matrix, greedy_basin, incompatibility, kernel, logit_table, mean_escape_time,
                         mixing_time, pll_target_tv, rectangle_ratios, spectral_gap, stationary, total_influence)
from .restricted import RestrictedModel, candidate_sets, restricted

__all__ = ["Incompatibility", "PairwiseModel", "RestrictedModel", "SpectralGap", "asymptotic_variance", "candidate_sets",
           "compatible_pairwise", "conditional_table", "distance_curve", "dobrushin_bound", "dobrushin_matrix",
           "exact_rectangle", "greedy_basin", "incompatibility", "incompatible_pairwise", "kernel", "logit_table", "mean_escape_time", "mixing_time",
           "pll_target_tv", "potts_chain", "rectangle_ratios", "restricted", "spectral_gap", "stationary",
           "total_influence"]
