"""Notebook 05's check "every cell above τ* is fast": its rule on known answers, its calibration on planted truths,
and the design rule that 05 measures τ* at every length of notebook 02's tables."""
import numpy as np
import pytest

from glauber_mlm.book.parameters import declared_profiles, notebook_source
from glauber_mlm.pages.planted.growth import ising_coupling_samples
from glauber_mlm.pages.planted.margin_theorem import every_cell_fast, fast_cells_calibration


def test_the_rule_reads_the_censored_median():
    fast = (np.array([10, 20, 30, 100]), np.array([True, True, True, False]))  # 3 of 4 met: median 25
    half = (np.array([10, 20, 100, 100]), np.array([True, True, False, False]))  # half censored: median +∞
    assert every_cell_fast([fast]) is True
    assert every_cell_fast([fast, half]) is False  # one slow cell fails the whole set
    assert every_cell_fast([]) is None  # no cell above τ*: nothing to test


def test_the_ising_chain_is_fast_at_high_and_slow_at_low_temperature():
    """Known answers: at J/τ = 1/2 path coupling contracts (T ≈ (n/δ)·log(n/2) ≈ 40 at n = 8); at J/τ = 4 the chain
    sits in its two ground states and coupled copies started in different ones meet only after crossing a domain
    wall, far beyond a budget of 40 steps (5 sweeps): about a third of uniform pairs meet in time, so with 64 pairs
    per replicate no replicate's median is finite (with 16, one replicate in ten had 9 pairs meet)."""
    hot = ising_coupling_samples(0, 10, [8], 16, 400, coupling=1.0, temperature=2.0)
    cold = ising_coupling_samples(0, 10, [8], 64, 40, coupling=1.0, temperature=0.25)
    assert all(every_cell_fast([(t, m)]) for _, t, m in hot)
    assert not any(every_cell_fast([(t, m)]) for _, t, m in cold)


def test_the_calibration_separates_fast_from_slow_and_can_fail():
    """The null is the fast law's twin with its median moved onto the budget (the slow law nearest to fast): one cell
    passes it about half the time, so a lone cell never decides; k independent cells pass it together about 2^−k of
    the time, so eight cells decide."""
    lone = fast_cells_calibration([(8, 16, 200)], replicates=40, seed=1)
    assert lone.power >= 0.9 and 0.2 <= lone.size <= 0.8 and not lone.decisive
    many = fast_cells_calibration([(n, 16, 200) for n in (4, 6, 8, 4, 6, 8, 4, 6)], replicates=40, seed=1)
    assert many.power >= 0.8 and many.size <= 0.05
    assert "n = 8 (16 pairs, budget 200)" in many.calibrated_on and "twin" in many.calibrated_on
    # the old null, a median at twice the budget, is passed by nobody: it cannot tell this rule from a weaker one
    far = fast_cells_calibration([(8, 16, 200)], replicates=40, slow_factor=2.0, seed=1)
    assert far.size == 0 and far.size < lone.size
    # a "slow" law whose median is half the budget is fast in truth: the rule passes it, so the size is large
    loose = fast_cells_calibration([(8, 16, 200)], replicates=20, slow_factor=0.5, seed=1)
    assert loose.size >= 0.8 and not loose.decisive
    with pytest.raises(ValueError, match="at least one"):
        fast_cells_calibration([])


def test_the_certified_upper_bound_of_tau_star_lies_above_every_sampled_lower_bound():
    """TV of two tempered softmaxes is ≤ tanh(osc(h)/4τ) for logits differing by h (equality for two tokens at the
    worst offset), and the head bound makes (n−1)·tanh(osc/4τ) a bound on the total influence of every context: on
    the embedded model it lies above the sampled α at every τ, and the crossing it gives is above the sampled τ*."""
    import math

    import torch

    from glauber_mlm import influence_matrix, total_influence
    from glauber_mlm.conditionals import total_variation
    from glauber_mlm.measures.influence import crossing_upper_bound, head_oscillation_bound
    from glauber_mlm.measures.margins import crossing_temperature
    from glauber_mlm.models.hf import load_mlm
    from glauber_mlm.models.passages import load_passages, sample_passages

    g = torch.Generator().manual_seed(0)
    a, h = torch.randn(200, 30, generator=g) * 3, torch.randn(200, 30, generator=g)
    osc = h.amax(1) - h.amin(1)
    for tau in (0.5, 1.0, 4.0):
        tv = total_variation(torch.log_softmax(a / tau, -1), torch.log_softmax((a + h) / tau, -1))
        assert (tv <= torch.tanh(osc / (4 * tau)) + 1e-6).all()
    s = torch.tensor([[0.0, 0.0]])  # two tokens, offset −s/2: the bound is attained
    assert total_variation(torch.log_softmax(s + torch.tensor([[-1.0, 0.0]]), -1),
                           torch.log_softmax(s + torch.tensor([[1.0, 0.0]]), -1)).item() == pytest.approx(math.tanh(0.5))
    assert crossing_upper_bound(None, 8) == math.inf and crossing_upper_bound(3.0, 2) == 0.0
    from glauber_mlm import exact

    assert head_oscillation_bound(exact.potts_chain(4, q=2, coupling=1.0)) is None  # no LayerNorm → Linear head

    mlm = load_mlm(None)
    bound = head_oscillation_bound(mlm)
    assert bound is not None and math.isfinite(bound) and bound > 0
    contexts = sample_passages(mlm, load_passages("embedded"), 5, 2, seed=0)[0]
    taus = [0.5, 1.0, 2.0, 4.0]
    alpha = influence_matrix(mlm, contexts, taus, replacements=1, top_k=5).amax(0)
    for t, tau in enumerate(taus):
        assert alpha[t].max().item() <= math.tanh(bound / (4 * tau)) + 1e-4
    assert crossing_upper_bound(bound, 5) >= crossing_temperature(taus, total_influence(alpha).numpy())
    assert crossing_upper_bound(bound, 16) > crossing_upper_bound(bound, 8)  # more neighbours, a higher bound


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_notebook_05_measures_tau_star_at_every_length_of_02(profile):
    mixing = declared_profiles(notebook_source("02_high_temperature_mixing"))[profile]
    influence = declared_profiles(notebook_source("05_influence_and_margin"))[profile]
    assert set(mixing["lengths"]) <= set(influence["lengths"])  # the phase diagram's, with every context
    assert set(mixing["scaling_lengths"]) <= set(influence["lengths"]) | set(influence["scaling_lengths"])
