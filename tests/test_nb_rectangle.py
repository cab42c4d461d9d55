"""Notebook 01 (rectangle test) runs in the smoke profile, saves sane tables, and refuses bad parameters early."""
import numpy as np
import pandas as pd
import pytest

from glauber_mlm.book import BookError, NotebookFailed
from glauber_mlm.models.hf import DEFAULT_MODEL
from notebook_runner import execute, first_cell_error

NAME = "01_rectangle_test"
pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                reason="the embedded default model is not built yet")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb01"))


def test_rectangles_table(out):
    r = pd.read_csv(out / "rectangles.csv")
    assert list(r.columns[:8]) == ["model", "context", "i", "j", "rho", "abs_rho", "influence", "certified"]
    assert len(r) == 12 * 3  # smoke: contexts × per_passage
    assert (r.i != r.j).all() and r.i.between(0, 9).all() and r.j.between(0, 9).all()
    assert (r.abs_rho >= 0).all() and np.allclose(r.abs_rho, r.rho.abs())
    assert r.influence.between(0, 1).all() and np.allclose(r.influence, (r.tv_i + r.tv_j) / 2)


def test_summary_certifies_with_a_tolerance_above_float_noise(out):
    r = pd.read_csv(out / "rectangles.csv")
    s = pd.read_csv(out / "summary.csv")
    assert list(s.columns[:7]) == ["model", "rectangles", "tolerance", "fraction_certified", "ci_low", "ci_high",
                                   "median_abs_rho"]
    row = s.iloc[0]
    assert row.rectangles == len(r)
    assert 0 < row.compatible_max_abs_rho < 1e-4 and row.forward_noise < 1e-3  # fp32 rounding, not signal
    assert row.tolerance == pytest.approx(10 * max(row.compatible_max_abs_rho, row.forward_noise))
    assert (r.certified == (r.abs_rho > row.tolerance)).all()
    assert row.fraction_certified == pytest.approx(r.certified.mean())
    assert 0 <= row.ci_low <= row.fraction_certified <= row.ci_high <= 1
    assert row.median_abs_rho == pytest.approx(r.abs_rho.median())
    # the embedded MLM's conditionals are incompatible: most rectangles are far above the noise
    assert row.fraction_certified > 0.5 and row.median_abs_rho > 100 * row.tolerance


def test_temperature_table_follows_rho_over_tau(out):
    t = pd.read_csv(out / "temperature.csv")
    s = pd.read_csv(out / "summary.csv").iloc[0]
    assert (t.identity_error < s.tolerance).all()  # ρ_τ · τ = ρ_1 up to float noise
    for _, g in t.groupby("threshold_kind"):
        g = g.sort_values("temperature")
        assert (np.diff(g.fraction_above) <= 0).all()  # |ρ_1|/τ shrinks as τ grows
        assert ((g.ci_low <= g.fraction_above) & (g.fraction_above <= g.ci_high)).all()


def test_influence_tables(out):
    bins = pd.read_csv(out / "influence_bins.csv")
    assert bins.rectangles.sum() == 36
    assert ((bins.ci_low <= bins.median_abs_rho) & (bins.median_abs_rho <= bins.ci_high)).all()
    corr = pd.read_csv(out / "influence_correlation.csv").iloc[0]
    assert -1 <= corr.ci_low <= corr.spearman <= corr.ci_high <= 1
    # the interval resamples contexts (12 in smoke, 3 rectangles each), not rectangles
    assert corr.contexts == 12 and corr.rectangles == 36 and corr.context_sd_log_rho > 0
    r = pd.read_csv(out / "rectangles.csv")
    assert (r.context.value_counts() == 3).all() and r.context.nunique() == 12
    for fig in ("rho_distribution", "fraction_against_temperature", "rho_against_influence"):
        assert (out / f"{fig}.png").is_file()


def test_compatibility_tables_agree_with_the_rectangles(out):
    r = pd.read_csv(out / "rectangles.csv")
    c = pd.read_csv(out / "compatibility.csv")
    s = pd.read_csv(out / "compatibility_summary.csv").iloc[0]
    assert list(c.columns) == ["model", "context", "i", "j", "abs_rho", "certified", "rms", "flagged"]
    assert len(c) == s.pairs == 36 and s.k == 4  # smoke: every rectangle's (context, i, j), top-4 candidates
    assert np.allclose(c.abs_rho, r.abs_rho) and (c[["i", "j"]].to_numpy() == r[["i", "j"]].to_numpy()).all()
    assert np.isfinite(c.rms).all() and (c.rms >= 0).all()
    assert 0 <= s.compatible_max_rms < 1e-4 and s.forward_noise < 1e-3  # fp32 rounding, not signal
    assert s.tolerance == pytest.approx(10 * max(s.compatible_max_rms, s.forward_noise))
    assert (c.flagged == (c.rms > s.tolerance)).all()
    shares = [s.both, s.rectangle_only, s.residual_only, s.neither]
    assert sum(shares) == pytest.approx(1) and s.both == pytest.approx((c.certified & c.flagged).mean())
    assert s.flagged_given_certified == pytest.approx(c.flagged[c.certified].mean())
    assert s.flagged == pytest.approx(c.flagged.mean())
    assert -1 <= s.ci_low <= s.spearman <= s.ci_high <= 1
    # the embedded MLM is incompatible over its top-k candidates too: the residual is far above its noise
    assert s.median_rms > 100 * s.tolerance
    assert (out / "residual_against_rho.png").is_file()


def test_every_check_that_decides_is_calibrated(out):
    cal = pd.read_csv(out / "calibration.csv")
    assert set(cal.rule) == {"certified share", "Arnold–Press residual", "Spearman(|ρ|, influence)"}
    assert cal.power.between(0, 1).all() and cal["size"].between(0, 1).all() and (cal.replicates >= 10).all()
    checks = pd.read_csv(out / "checks.csv").set_index("check")
    decided = checks[checks.outcome != "inconclusive"]
    assert ((decided.power >= 0.8) & (decided["size"] <= 0.1)).all()
    spearman = checks.loc["the Spearman correlation of |ρ| with influence has a 95% interval above zero for every model"]
    residual = checks.loc["the Arnold–Press residual flags at least nine in ten of the pairs, for every model"]
    assert spearman.replicates == 30 and residual.replicates == 30


def test_a_length_the_model_cannot_take_stops_the_first_cell(tmp_path):
    err = first_cell_error(NAME, tmp_path, length=10000)
    assert err is not None, "the first cell after the parameters ran through"
    assert "length=10000 tokens is more than" in str(err), repr(err)


def test_a_missing_model_folder_is_refused_before_a_kernel_starts(tmp_path):
    with pytest.raises(BookError) as err:
        execute(NAME, tmp_path, models=["/no/such/model"])
    assert not isinstance(err.value, NotebookFailed)
    assert "no model folder at /no/such/model" in str(err.value)
