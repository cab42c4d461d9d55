"""Issue 26 §9: bad arguments are refused before any work, naming the problem and the fix; good ones keep their
known answers."""
import math

import numpy as np
import pytest
import torch

from glauber_mlm import (convergence, coupling_times, exact, glauber, influence_matrix, load_mlm, random_rectangles,
                         rectangle_statistic)
from glauber_mlm.exact import PairwiseModel
from tiny_models import save_tiny

POTTS = exact.potts_chain(4, q=3, coupling=0.8)
INIT = torch.zeros(2, 4, dtype=torch.long)


class NoForward:
    """A model whose forward pass must never run: every refusal below happens before it."""

    def __init__(self, model):
        self.vocab_size, self.max_length, self.device, self.support = (model.vocab_size, model.max_length,
                                                                       model.device, model.support)

    def logits(self, states, sites, dtype=None):
        raise AssertionError("a forward pass ran before the argument was checked")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp("bert")), device="cpu", dtype=torch.float32)


# ------------------------------------------------------------------ exact models
def test_ising_pair_keeps_its_closed_form_law():
    """Two sites, J = 0.7: π(00) = π(11) = e^J / (2e^J + 2), π(01) = π(10) = 1 / (2e^J + 2)."""
    states, law = exact.potts_chain(2, 2, 0.7).joint()
    z = 2 * math.exp(0.7) + 2
    expected = {(0, 0): math.exp(0.7) / z, (1, 1): math.exp(0.7) / z, (0, 1): 1 / z, (1, 0): 1 / z}
    for s, p in zip(states.tolist(), law.tolist()):
        assert p == pytest.approx(expected[tuple(s)], rel=1e-12)


@pytest.mark.parametrize("coupling", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_coupling_is_refused_not_read_as_incompatible(coupling):
    with pytest.raises(ValueError, match="coupling must be finite"):
        exact.potts_chain(4, 2, coupling)


@pytest.mark.parametrize("n, q, error, message", [
    (-1, 2, ValueError, "n must be an integer ≥ 1, got -1"),
    (0, 2, ValueError, "n must be an integer ≥ 1, got 0"),
    (2.5, 2, TypeError, "n must be an integer, got 2.5"),
    (4, 0, ValueError, "q must be an integer ≥ 2, got 0"),
    (4, 1, ValueError, "q must be an integer ≥ 2, got 1"),
    (4, True, TypeError, "q must be an integer, got True"),
])
def test_sizes_must_be_integers_with_sites_and_states(n, q, error, message):
    for build in (lambda: exact.potts_chain(n, q), lambda: exact.compatible_pairwise(n, q),
                  lambda: exact.incompatible_pairwise(n, q)):
        with pytest.raises(error, match=message):
            build()


def test_fields_weights_and_scales_must_be_finite_and_fit():
    with pytest.raises(ValueError, match="field holds NaN"):
        exact.potts_chain(3, 2, field=torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match=r"field must broadcast to \(n, q\) = \(3, 2\)"):
        exact.potts_chain(3, 2, field=torch.tensor([0.0, 1.0, 2.0]))
    W = torch.zeros(3, 3, 2, 2)
    W[0, 1, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="W holds NaN or ±inf"):
        PairwiseModel(W)
    with pytest.raises(ValueError, match=r"W must have shape \(n, n, q, q\)"):
        PairwiseModel(torch.zeros(3, 2, 2, 2))
    with pytest.raises(ValueError, match=r"h must have shape \(n, q\) = \(3, 2\)"):
        PairwiseModel(torch.zeros(3, 3, 2, 2), torch.zeros(2))
    with pytest.raises(ValueError, match="scale must be finite"):
        exact.incompatible_pairwise(3, 2, scale=float("nan"))
    with pytest.raises(ValueError, match="logit_std must be ≥ 0"):
        exact.compatible_pairwise(3, 2, logit_std=-1.0)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan")])
def test_joint_refuses_a_temperature_that_defines_no_law(tau):
    with pytest.raises(ValueError, match="temperature must be"):
        POTTS.joint(tau)


# ------------------------------------------------------------------ convergence thresholds
DRAWS = np.random.default_rng(0).normal(size=(4, 1000))


def test_independent_draws_are_mixed_under_the_usual_and_a_zero_ess_bound():
    assert convergence(DRAWS).status.item() == "mixed"
    assert convergence(DRAWS, ess_min=0).status.item() == "mixed"


@pytest.mark.parametrize("kwargs, message", [
    (dict(rhat_max=float("nan")), "rhat_max must be finite, got nan. R̂ is ≥ 1 up to noise; the usual bound is 1.01"),
    (dict(rhat_max=1.0), "rhat_max must be > 1, got 1.0"),
    (dict(rhat_max=float("inf")), "rhat_max must be finite"),
    (dict(ess_min=-1), "ess_min must be ≥ 0, got -1. The usual bound is 400"),
    (dict(ess_min=float("nan")), "ess_min must be finite"),
])
def test_thresholds_that_would_decide_every_status_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        convergence(DRAWS, **kwargs)


def test_threshold_types_are_checked():
    with pytest.raises(TypeError, match="rhat_max must be a real number, got True"):
        convergence(DRAWS, rhat_max=True)
    with pytest.raises(TypeError, match="ess_min must be a real number, got '400'"):
        convergence(DRAWS, ess_min="400")


# ------------------------------------------------------------------ temperatures
@pytest.mark.parametrize("taus", [[True], [1.0, True], True, torch.tensor([True]), ["1.0"]])
def test_bool_and_string_temperatures_are_refused(taus):
    with pytest.raises(TypeError, match="temperature"):
        influence_matrix(NoForward(POTTS), INIT[:1], taus, top_k=2)
    with pytest.raises(TypeError, match="temperature"):
        glauber(NoForward(POTTS), INIT, 3, temperature=taus)


def test_a_temperature_list_of_the_wrong_length_is_refused_before_any_forward():
    with pytest.raises(ValueError, match="got 3 temperatures for 2 chains"):
        glauber(NoForward(POTTS), INIT, 3, temperature=[1.0, 2.0, 3.0])
    rects = random_rectangles(POTTS, INIT, 2, top_k=2)
    with pytest.raises(ValueError, match="got 2 temperatures for 4 rectangles"):
        rectangle_statistic(NoForward(POTTS), rects, temperature=[1.0, 2.0])


# ------------------------------------------------------------------ forward dtypes
@pytest.mark.parametrize("dtype", [torch.int64, torch.float64, torch.complex64, "fp32", "bf16", "int64", 16])
def test_dtypes_no_forward_runs_in_are_refused(dtype):
    with pytest.raises(TypeError, match=r"dtype must be a forward dtype, one of torch.float32, torch.bfloat16"):
        glauber(NoForward(POTTS), INIT, 3, dtype=dtype)
    with pytest.raises(TypeError, match="dtype must be a forward dtype"):
        coupling_times(NoForward(POTTS), INIT, INIT + 1, 3, dtype=dtype)
    with pytest.raises(TypeError, match="dtype must be a forward dtype"):
        influence_matrix(NoForward(POTTS), INIT[:1], [1.0], top_k=2, dtype=dtype)


@pytest.mark.parametrize("name, dtype", [("float32", torch.float32), ("bfloat16", torch.bfloat16)])
def test_a_dtype_named_as_the_cli_names_it_runs_as_that_dtype(tiny, name, dtype):
    init = torch.full((2, 5), 10)
    assert torch.equal(glauber(tiny, init, 12, seed=3, dtype=name).states,
                       glauber(tiny, init, 12, seed=3, dtype=dtype).states)


# ------------------------------------------------------------------ seeds
def test_seeds_run_up_to_the_int64_limit():
    """A chain's stream depends on its own seed only: chain 1 of seed 2**63 − 2 is the chain of seed 2**63 − 1."""
    top = 2**63 - 1
    pair = glauber(POTTS, INIT, 30, seed=top - 1)
    alone = glauber(POTTS, INIT[1:], 30, seed=top)
    assert torch.equal(pair.states[:, 1], alone.states[:, 0])
    assert torch.equal(glauber(POTTS, INIT, 30, seed=[top, -(2**63)]).states[:, 0], alone.states[:, 0])


@pytest.mark.parametrize("seed, message", [
    (2**63 - 1, r"seed must be an int64, in \[-2\*\*63, 2\*\*63 - 2\] so that the seeds seed, …, seed \+ 1 of its 2 "),
    (-(2**63) - 1, r"seed must be an int64"),
    ([2**63, 0], r"each an int64 in \[-2\*\*63, 2\*\*63 - 1\]"),
    (np.array([2**63, 0], dtype=np.uint64), r"seed values must be int64"),
])
def test_seeds_beyond_int64_are_refused_with_the_range(seed, message):
    with pytest.raises((ValueError, TypeError), match=message):
        glauber(NoForward(POTTS), INIT, 3, seed=seed)
    with pytest.raises((ValueError, TypeError), match=message):
        coupling_times(NoForward(POTTS), INIT, INIT + 1, 3, seed=seed)


def test_generator_seeds_share_the_int64_range():
    for call in (lambda: random_rectangles(NoForward(POTTS), INIT, 1, top_k=2, seed=2**63),
                 lambda: influence_matrix(NoForward(POTTS), INIT[:1], [1.0], top_k=2, seed=2**63),
                 lambda: exact.incompatible_pairwise(3, 2, seed=2**64)):
        with pytest.raises(ValueError, match=r"seed must be an int64, in \[-2\*\*63, 2\*\*63 - 1\]"):
            call()
