"""Numerical summaries and figure helpers the notebooks share: the slow-to-fast boundary, interval error bars."""
import math

import numpy as np

from glauber_mlm.stats import slow_to_fast_boundary

inf = np.inf


def test_boundary_is_the_lowest_temperature_from_which_on_every_median_is_finite():
    assert slow_to_fast_boundary([0.5, 1, 2, 4], [inf, inf, 30, 10]) == 2.0
    # a finite median below a slow one does not count: fast must hold from the boundary upwards
    assert slow_to_fast_boundary([0.5, 1, 2, 4], [40, inf, 30, 10]) == 2.0
    assert slow_to_fast_boundary([0.5, 1, 2], [90, 50, 20]) == 0.5  # fast everywhere: the grid's lowest τ
    assert math.isnan(slow_to_fast_boundary([0.5, 1, 2], [20, 30, inf]))  # slow at the top: no boundary
    assert slow_to_fast_boundary([4, 0.5, 2, 1], [10, inf, 30, inf]) == 2.0  # order of the rows does not matter


def test_interval_errorbar_clips_intervals_that_end_inside_the_estimate():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from glauber_mlm.plots import interval_errorbar, temperature_axis

    fig, ax = plt.subplots()
    bars = interval_errorbar(ax, [1, 2, 4], [3.0, 2.0, 1.0], [2.0, 2.5, 0.5], [4.0, 2.0, 1.5], marker="o")
    (segments,) = bars.lines[2]
    lengths = [seg[1, 1] - seg[0, 1] for seg in segments.get_segments()]
    assert np.allclose(lengths, [2.0, 0.0, 1.0])  # the middle interval [2.5, 2.0] ends inside its estimate
    temperature_axis(ax, [0.5, 1.0, 4.0])
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["0.5", "1", "4"]
    plt.close(fig)
