"""The intervals and planted calibrations of notebooks 00 and 01: resampling over units, one tolerance rule, and
the planted truths and nulls of their checks (each rule passes on its truth and fails on its null)."""
import numpy as np
import pytest

from glauber_mlm.pages.planted import chains, rectangles
from glauber_mlm.measures.rectangle import noise_tolerance
from glauber_mlm.stats import spearman_ci, unit_bootstrap_ci


def test_spearman_interval_resamples_units_not_rows():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(100), rng.standard_normal(100)
    y = 0.5 * x + y
    one = spearman_ci(x, y, np.arange(100), n_boot=400)
    # each unit's row copied 8 times: the same information, so resampling units gives the same interval width,
    # while resampling the 800 rows as if independent would shrink it by about √8
    units = np.repeat(np.arange(100), 8)
    eight = spearman_ci(np.repeat(x, 8), np.repeat(y, 8), units, n_boot=400)
    rows = spearman_ci(np.repeat(x, 8), np.repeat(y, 8), np.arange(800), n_boot=400)
    width = lambda ci: ci[2] - ci[1]  # noqa: E731
    assert one[1] <= one[0] <= one[2] and eight[1] <= eight[0] <= eight[2]
    assert width(eight) == pytest.approx(width(one), rel=0.3)
    assert width(rows) < 0.6 * width(eight)


def test_spearman_is_exact_on_monotone_data_and_units_of_unequal_size():
    x = np.arange(30.0)
    units = np.r_[np.zeros(5), np.arange(1, 26)]  # one unit of five rows, 25 of one
    r, low, high = spearman_ci(x, x**3, units, n_boot=200)
    assert r == pytest.approx(1) and low == pytest.approx(1) and high == pytest.approx(1)
    r, low, high = spearman_ci(x, -x, units, n_boot=200)
    assert r == pytest.approx(-1) and high == pytest.approx(-1)


def test_unit_bootstrap_needs_two_units_and_contains_its_estimate():
    with pytest.raises(ValueError, match="two independent units"):
        unit_bootstrap_ci(np.zeros(5), lambda k: float(k.size))
    v = np.random.default_rng(1).exponential(size=60)
    est, low, high = unit_bootstrap_ci(np.arange(60) // 6, lambda k: np.median(v[k]), n_boot=300)
    assert est == pytest.approx(np.median(v)) and low <= est <= high


def test_noise_tolerance_is_one_rule():
    assert noise_tolerance(1e-6) == pytest.approx(1e-5)  # an exact model: its forward adds nothing
    assert noise_tolerance(1e-6, 2e-5) == pytest.approx(2e-4)  # an MLM whose fp32 forward rounds more
    assert noise_tolerance(1e-6, 2e-5, safety=3) == pytest.approx(6e-5)
    with pytest.raises(ValueError, match="safety"):
        noise_tolerance(1e-6, safety=0.5)
    with pytest.raises(ValueError, match="noise levels"):
        noise_tolerance(float("nan"))


def test_planted_influence_and_rho_are_related_only_in_the_truth():
    rng = np.random.default_rng(3)
    units, infl, rho = rectangles.influence_rho_sample(rng, 10, 2.0, 60, 4, 6, 0.5, dependent=True, q=8)
    assert units.size == infl.size == rho.size == 240 and np.bincount(units).tolist() == [4] * 60
    assert spearman_ci(infl, rho, units, n_boot=300)[1] > 0.2
    nulls = [spearman_ci(*rectangles.influence_rho_sample(rng, 10, 2.0, 60, 4, 6, 0.5, dependent=False, q=8)[1:],
                         units, n_boot=10)[0] for _ in range(6)]
    assert abs(np.mean(nulls)) < 0.1


def test_influence_correlation_rule_is_calibrated_at_a_small_design():
    cal = rectangles.influence_correlation_calibration(10, 2.0, 60, 4, 6, 0.5, replicates=10, q=8, n_boot=200)
    assert cal.power >= 0.8 and cal.size <= 0.2


def test_residual_rule_passes_on_incompatible_and_fails_on_compatible_models():
    cal = rectangles.residual_calibration(8, 2.0, 30, 3, tolerance=1e-4, replicates=4, q=8)
    assert cal.power == 1 and cal.size == 0
    # a tolerance of zero flags float noise too: the rule then passes on compatible models, and the size says so
    assert rectangles.residual_calibration(8, 2.0, 30, 3, tolerance=0.0, replicates=4, q=8).size == 1


def test_closed_form_rule_fails_on_a_wrong_closed_form():
    cal = rectangles.closed_form_calibration(6, 4, 0.5, 40, 1e-5, replicates=5)
    assert (cal.power, cal.size) == (1, 0)  # 5 replicates bound neither error at its limit: decisive needs 29 (issue 36)
    same = rectangles.closed_form_calibration(6, 4, 0.5, 40, 1e-5, error=0.0, replicates=5)
    assert same.power == same.size == 1  # a "wrong" closed form that is the right one passes: the null needs an error


def test_ising_influence_rule_fails_on_a_wrong_coupling():
    cal = rectangles.ising_influence_calibration(4, [0.5, 2.0], replicates=3)
    assert cal.power == 1 and cal.size == 0
    assert rectangles.ising_influence_calibration(4, [0.5, 2.0], error=0.0, replicates=3).size == 1


def test_slowdown_rule_tells_a_rate_inside_from_one_outside():
    cal = chains.slowdown_calibration(10, [1.0, 0.7, 0.5], 40, 20_000, replicates=4, n_boot=200)
    assert cal.power == 1 and cal.size == 0
    # nulls at the truth's own rate pass as often as the truth: the replanting keeps the spread and moves the rate
    same = chains.slowdown_calibration(10, [1.0, 0.7, 0.5], 40, 20_000, outside=(1.5,), replicates=4, n_boot=200)
    assert same.size == same.power
