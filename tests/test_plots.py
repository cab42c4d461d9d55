"""The interactive figures: the time slider puts each chain's marker where that chain was, the heat map's hover
reads each cell's own numbers."""
import numpy as np
import pandas as pd

from glauber_mlm.pages.plots import MAX_FRAMES, interactive_heatmap, interactive_map


def chains(steps: range) -> pd.DataFrame:
    return pd.DataFrame([dict(chain=f"c{c}", step=s, pc1=10 * c + s, pc2=-s, distance=s / 7, text=f"state {c}/{s}")
                         for c in range(3) for s in steps])


def test_slider_moves_each_marker_to_the_chains_state_at_that_step(monkeypatch):
    monkeypatch.delenv("GLAUBER_MLM_RUN_ID", raising=False)
    frame = chains(range(0, 40, 4))
    fig = interactive_map(frame, "pc1", "pc2", "chain", ["step", "distance"], "map", text="text")
    assert len(fig.frames) == 10 and len(fig.layout.sliders[0].steps) == 10
    for fr in fig.frames:
        step = float(fr.name)
        for trace, c in zip(fr.data, range(3)):
            assert list(trace.x) == [10 * c + step] and list(trace.y) == [-step]
            assert trace.customdata[0][0] == f"c{c}" and trace.customdata[0][1] == step


def test_slider_frames_are_capped_and_span_the_run(monkeypatch):
    monkeypatch.delenv("GLAUBER_MLM_RUN_ID", raising=False)
    fig = interactive_map(chains(range(1000)), "pc1", "pc2", "chain", ["step"], "map")
    names = [float(f.name) for f in fig.frames]
    assert len(names) == MAX_FRAMES and names[0] == 0 and names[-1] == 999 and names == sorted(names)


def test_heatmap_hover_reads_each_cells_numbers(monkeypatch):
    monkeypatch.delenv("GLAUBER_MLM_RUN_ID", raising=False)
    cells = pd.DataFrame([dict(temperature=t, length=n, median_time=t * n if t > 1 else np.inf, met_fraction=t / 10,
                               pairs=n) for t in (0.5, 2.0, 4.0) for n in (4, 8) if (t, n) != (4.0, 8)])
    fig = interactive_heatmap(cells, "temperature", "length", "median_time", ["median_time", "met_fraction", "pairs"],
                              "phase")
    heat = fig.data[0]
    assert list(heat.x) == ["0.5", "2", "4"] and list(heat.y) == ["4", "8"]
    custom = np.asarray(heat.customdata, dtype=float)
    assert custom[1, 1].tolist() == [16.0, 0.2, 8.0]  # n = 8, τ = 2
    assert np.isnan(custom[1, 2]).all()  # the missing cell stays blank
    assert np.isnan(np.asarray(heat.z, dtype=float)[0, 0])  # a censored median (∞) is left blank
    assert np.isinf(custom[0, 0, 0])  # and its hover says ∞
    assert not heat.reversescale
    reversed_ = interactive_heatmap(cells, "temperature", "length", "median_time", ["pairs"], "phase", reverse_colour=True)
    assert reversed_.data[0].reversescale  # small times bright, as in the static viridis_r diagram


def test_panels_put_at_most_two_side_by_side_and_refuse_a_figure_wider_than_the_column(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pytest

    from glauber_mlm.pages.plots import DPI, MAX_WIDTH, legend_outside, log_axis_at, panels

    fig, axes = panels(3)
    assert len(axes) == 3 and len(fig.axes) == 3  # the empty fourth slot is removed
    assert {ax.get_subplotspec().colspan.start for ax in axes} == {0, 1}
    assert fig.get_size_inches()[0] <= MAX_WIDTH
    for ax in axes:
        ax.plot([1, 10, 100], [1, 2, 3], label="a long label that would cover the data")
        legend_outside(ax, "below")
    log_axis_at(axes[0], [8, 16, 32, 64])
    fig.canvas.draw()
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["8", "16", "32", "64"]
    fig.savefig(tmp_path / "f.png", dpi=DPI, bbox_inches="tight")  # as Run.save_figure does
    from PIL import Image

    assert Image.open(tmp_path / "f.png").size[0] / DPI <= MAX_WIDTH
    plt.close(fig)
    with pytest.raises(ValueError, match="at most 9"):
        panels(2, width=12)


def test_map_fits_a_phones_column_in_the_book(monkeypatch, tmp_path):
    """At 400 px the map stays inside the text column: no fixed width, and it is redrawn at once when the page's
    width changes (headless Chromium lays a page out at 500 px before the 400-px capture)."""
    import shutil
    import subprocess

    import pytest
    from PIL import Image

    from glauber_mlm.book.plotly_pages import write_plotly

    monkeypatch.delenv("GLAUBER_MLM_RUN_ID", raising=False)
    assert interactive_map(chains(range(0, 40, 4)), "pc1", "pc2", "chain", ["step"], "map").layout.width is None
    monkeypatch.setenv("GLAUBER_MLM_RUN_ID", "test")
    html = interactive_map(chains(range(0, 400, 4)), "pc1", "pc2", "chain", ["step", "distance"], "map",
                           text="text").data
    assert html.startswith('<figure class="interactive-figure"') and "ResizeObserver" in html
    browser = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                    if (found := shutil.which(name))), None)
    if browser is None:
        pytest.skip("no chromium to render the page")
    write_plotly(tmp_path / "_static")  # plotly.min.js, from the installed plotly as the book ships it (not tracked)
    # the column ends 30 px before the window's right edge; the strip right of it must stay white
    (tmp_path / "page.html").write_text(
        '<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<script src="_static/plotly.min.js"></script></head><body style="margin:0;background:#fff">'
        f'<div style="margin:0 30px 0 16px">{html}</div></body></html>')
    png = tmp_path / "page.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--virtual-time-budget=5000", "--window-size=400,1200", f"--screenshot={png}",
                    (tmp_path / "page.html").as_uri()], check=True, capture_output=True)
    strip = np.asarray(Image.open(png).convert("L"))[:700, 372:]
    assert strip.min() > 240, "the map runs past the text column's right edge"
