"""Notebook 02's check "at low temperature mixing is slow": the censored share's trend test on known answers, and its
calibration at a design like the page's (5 temperatures × 3 lengths × 8 pairs)."""
import numpy as np
import pytest

from glauber_mlm.pages.planted.censoring import (censoring_trend, censoring_trend_calibration, rises_as_tau_falls,
                                                 tilted_levels)

TAUS = [0.75, 1.0, 1.5, 2.0, 3.0]


def design(per_cell=8, lengths=(4, 8, 16)):
    t = np.repeat(np.tile(TAUS, len(lengths)), per_cell)
    n = np.repeat(np.repeat(lengths, len(TAUS)), per_cell)
    return t, n


def test_the_rule_reads_the_direction_of_the_trend():
    t, _ = design()
    falling = t < 1.2  # censored only at the two coldest temperatures
    assert rises_as_tau_falls((t, falling)) is True
    assert rises_as_tau_falls((t, ~falling)) is False  # censoring rising with τ is the opposite claim
    assert rises_as_tau_falls((t, np.zeros(t.size, bool))) is None  # nothing censored: no trend to read
    res = censoring_trend(t, falling)
    assert res["kendall"] < 0 and res["p_value"] < 1e-6
    with pytest.raises(ValueError, match="one length"):
        censoring_trend(t, falling[:-1])


def test_the_tilt_keeps_the_level_and_rises_as_tau_falls():
    p = tilted_levels(np.array(TAUS), 0.3, 2.0)
    assert p.mean() == pytest.approx(0.3) and (np.diff(p) < 0).all()
    assert (tilted_levels(np.array(TAUS), 0.0, 2.0) == 0).all()


def test_the_calibration_separates_a_trend_from_the_same_level_at_every_tau():
    t, n = design()
    rng = np.random.default_rng(0)
    observed = rng.random(t.size) < np.where(n == 4, 0.1, 0.4)  # each length its own level, no trend
    cal = censoring_trend_calibration(t, n, observed, replicates=300, seed=1)
    assert cal.size <= 0.09  # a level test at 5 %: the null is the truth's twin without the trend
    assert cal.power >= 0.8
    assert "the same at every τ" in cal.calibrated_on
    weak = censoring_trend_calibration(t, n, observed, replicates=200, slope=0.2, seed=1)
    assert weak.power < 0.5  # a trend this small is not found at this design: the check can fail to see it
