"""Glauber dynamics on masked language models: sampling, coupling, rectangle test, influence, margins."""
from . import exact
from .measures.compatibility import CandidatePairs, Compatibility, compatibility_test, top_k_candidates
from .conditionals import ConditionalModel, log_conditionals, total_variation
from .samplers.coupling import CouplingResult, coupling_times, maximal_coupling
from .diagnostics import chain_draw, convergence, coupling_regime, diagnose, hamming_between, hamming_to_start
from .models.hf import DEFAULT_MODEL, MLMAdapter, load_mlm
from .measures.influence import influence_matrix, local_margins, total_influence
from .samplers.metropolis import (MHTrajectory, acceptance_counts, coupled_metropolis, metropolis, mh_coupling_times,
                         pseudo_log_likelihood)
from .measures.rectangle import Rectangles, RectangleTest, random_rectangles, rectangle_statistic, rectangle_test
from .samplers.sampling import Trajectory, glauber

__all__ = [
    "CandidatePairs", "Compatibility", "ConditionalModel", "CouplingResult", "DEFAULT_MODEL", "MHTrajectory",
    "MLMAdapter", "Rectangles", "RectangleTest", "Trajectory", "acceptance_counts", "chain_draw", "compatibility_test",
    "convergence", "coupled_metropolis", "coupling_regime", "coupling_times", "diagnose", "exact", "glauber",
    "hamming_between", "hamming_to_start", "influence_matrix", "load_mlm", "local_margins", "log_conditionals",
    "maximal_coupling", "metropolis", "mh_coupling_times", "pseudo_log_likelihood", "random_rectangles",
    "rectangle_statistic", "rectangle_test", "top_k_candidates", "total_influence", "total_variation",
]
