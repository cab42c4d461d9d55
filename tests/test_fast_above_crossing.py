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
    cells = [(4, 8, 500), (8, 8, 500), (16, 8, 500)]
    cal = fast_cells_calibration(cells, replicates=30, seed=1)  # 0 of 30 nulls bound the size at 0.095 (issue 36)
    assert cal.power >= 0.8 and cal.size <= 0.1 and cal.decisive
    assert "n = 16 (8 pairs, budget 500)" in cal.calibrated_on
    # a "slow" law whose median is half the budget is fast in truth: the rule passes it, so the size can be large
    loose = fast_cells_calibration(cells, replicates=20, slow_factor=0.5, seed=1)
    assert loose.size >= 0.8 and not loose.decisive
    with pytest.raises(ValueError, match="at least one"):
        fast_cells_calibration([])


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_notebook_05_measures_tau_star_at_every_length_of_02(profile):
    mixing = declared_profiles(notebook_source("02_high_temperature_mixing"))[profile]
    influence = declared_profiles(notebook_source("05_influence_and_margin"))[profile]
    assert set(mixing["lengths"]) <= set(influence["lengths"])  # the phase diagram's, with every context
    assert set(mixing["scaling_lengths"]) <= set(influence["lengths"]) | set(influence["scaling_lengths"])
