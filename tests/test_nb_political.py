"""Notebook 04 (political basins) runs in the smoke profile, saves sane tables, and refuses bad parameters early."""
import numpy as np
import pandas as pd
import pytest

from glauber_mlm.measures import political
from glauber_mlm.book import BookError, NotebookFailed
from glauber_mlm.models.hf import DEFAULT_MODEL
from notebook_runner import execute, first_cell_error

NAME = "04_political_basins"
needs_model = pytest.mark.skipif(not (DEFAULT_MODEL / "model.safetensors").is_file(),
                                 reason="the embedded default model is not built yet")
# smoke profile: starts=3 per type, seeds=1, temperatures [0.1, 1.0], steps=40
STARTS, TEMPS, STEPS = 3, [0.1, 1.0], 40


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return execute(NAME, tmp_path_factory.mktemp("nb04"))


@needs_model
@pytest.mark.slow
def test_score_accuracy(out):
    a = pd.read_csv(out / "score_accuracy.csv").set_index("subset")
    assert list(a.index) == ["all", "political", "not political"]
    assert a.loc["all", "n"] == a.loc["political", "n"] + a.loc["not political", "n"]
    assert ((a.ci_low <= a.accuracy) & (a.accuracy <= a.ci_high)).all()
    # even 200 labelled texts give a score far better than chance on held-out documents
    assert a.loc["all", "accuracy"] > 0.75 and a.loc["all", "ci_low"] > 0.5


@needs_model
@pytest.mark.slow
def test_document_roles_and_base_rate(out):
    r = pd.read_csv(out / "document_roles.csv")
    assert set(r.text_set) == {"all starting passages", "chosen starts", "labelled text (score)"}
    assert set(r[r.text_set != "labelled text (score)"].roles) == {"passages"}  # none of the MLM's training text
    assert set(r[r.text_set == "labelled text (score)"].roles) == {"political"}
    assert r[r.text_set == "chosen starts"].rows.sum() == 2 * STARTS
    b = pd.read_csv(out / "base_rate.csv").set_index("passages")
    assert list(b.index) == ["all passages", "topic politics", "other topics"]
    assert b.loc["all passages", "n"] == b.loc["topic politics", "n"] + b.loc["other topics", "n"] == 300
    assert ((0 <= b.ci_low) & (b.ci_low <= b.fraction) & (b.fraction <= b.ci_high) & (b.ci_high <= 1)).all()
    # the score calls political passages political far more often than the others
    assert b.loc["topic politics", "ci_low"] > b.loc["other topics", "ci_high"]


@needs_model
@pytest.mark.slow
def test_trend_table(out):
    c = pd.read_csv(out / "trend.csv")
    assert set(c.quantity) == {"time_in_region", "escaped"}
    assert (c.tau_a < c.tau_b).all() and set(c.tau_a) | set(c.tau_b) <= set(TEMPS)
    assert ((c.ci_low <= c.difference + 1e-12) & (c.difference <= c.ci_high + 1e-12)).all()
    assert np.allclose(c.difference, c.mean_a - c.mean_b)
    assert set(c.reading) <= {"higher", "lower", "indistinguishable"}
    assert ((c.reading == "higher") == (c.ci_low > 0)).all() and ((c.reading == "lower") == (c.ci_high < 0)).all()


@needs_model
@pytest.mark.slow
def test_time_in_region(out):
    t = pd.read_csv(out / "time_in_region.csv")
    assert list(t.columns[:6]) == ["temperature", "start", "chains", "fraction", "ci_low", "ci_high"]
    assert sorted(set(t.temperature)) == TEMPS and set(t.start) == {"political", "not political"}
    assert len(t) == 4 and (t.chains == STARTS).all()
    assert ((0 <= t.ci_low) & (t.ci_low <= t.fraction + 1e-12) & (t.fraction <= t.ci_high + 1e-12) & (t.ci_high <= 1)).all()


@needs_model
@pytest.mark.slow
def test_escape_times(out):
    e = pd.read_csv(out / "escape_times.csv")
    assert list(e.columns[:6]) == ["temperature", "chains", "escaped", "escape_fraction", "ci_low", "ci_high"]
    chains = pd.read_csv(out / "escape_chains.csv")
    assert (chains.start == "political").all() and (chains.start_score >= 0.5).all()
    assert chains.escape_step.between(0, STEPS).all()
    assert (chains[~chains.escaped].escape_step == STEPS).all()  # censored at the run length
    assert e.chains.sum() == len(chains) and e.escaped.sum() == chains.escaped.sum()
    assert np.allclose(e.escape_fraction, e.escaped / e.chains)
    assert (e.median_escape_step.isin([np.inf]) | e.median_escape_step.between(1, STEPS)).all()
    # Kaplan–Meier median: reached exactly when half the chains escaped (censoring at the run length only)
    assert (np.isfinite(e.median_escape_step) == (e.escaped >= e.chains / 2)).all()
    assert ((e.median_ci_low <= e.median_escape_step) & (e.median_escape_step <= e.median_ci_high)).all()
    assert (e.first_sweep.isna() == (e.escaped == 0)).all() and e.first_sweep.dropna().between(0, 1).all()
    for fig in ("time_in_region", "escape_times"):
        assert (out / f"{fig}.png").is_file()


@needs_model
@pytest.mark.slow
def test_start_memory_and_the_calibrated_level_checks(out):
    m = pd.read_csv(out / "start_memory.csv")
    assert list(m.temperature) == TEMPS and (m.chains == 2 * STARTS).all()
    for est, lo, hi in (("own_start", "own_low", "own_high"), ("other_starts", "other_low", "other_high"),
                        ("gap", "gap_low", "gap_high")):
        assert ((m[lo] <= m[est] + 1e-12) & (m[est] <= m[hi] + 1e-12)).all()
    assert np.allclose(m.gap, m.other_starts - m.own_start)
    assert (m.other_starts > 0.8).all()  # passages of different documents differ at most of their sites
    assert (m.remembers == (m.gap_low > 0)).all()
    cal = pd.read_csv(out / "level_calibration.csv")
    level = ["political vs non-political starts"] + [f"{claim}: {family}" for claim in ("attraction", "persistence")
                                                     for family in political.NULL_FAMILIES]
    assert set(cal.check) == set(level) | {"persistence: every family", "attraction: every family"}
    assert cal.power.between(0, 1).all() and cal["size"].between(0, 1).all()
    checks = pd.read_csv(out / "checks.csv", keep_default_na=False)
    assert len(checks) == 11 and checks.replicates.gt(0).all()  # every check calibrated
    assert checks.core.tolist() == [True] * 5 + [False] * 6  # the verdict: start gap, two trends, every-family checks
    for check, name in ((0, "political vs non-political starts"), (3, "persistence: every family"),
                        (4, "attraction: every family")):
        first = cal[cal.check == name].iloc[0]
        assert first.design == f"{STARTS} starts per type"
        assert checks.power[check] == pytest.approx(first.power) and checks["size"][check] == pytest.approx(first["size"])
    # memory of the start keeps every comparison from deciding, the attraction check's included (issue 42)
    lowest = m.sort_values("temperature").iloc[0]
    level_rows = checks.index.difference([1, 2])
    if lowest.remembers:
        assert (checks.outcome[level_rows] == "inconclusive").all()
        assert (checks.rule_says[level_rows] == "not computable").all()
        assert checks.to_decide[level_rows].str.contains("forget their start").all()
    if m.remembers.any():
        assert (checks.outcome[1:3] == "inconclusive").all()


@pytest.mark.slow  # shares the smoke book's run of the page
@needs_model
def test_the_deciding_comparisons_recompute_from_the_published_tables(out):
    """chains.csv holds every chain of every start type and null_texts.csv every null text: each level check's
    difference is recomputed from them alone (issue 42)."""
    from glauber_mlm.stats import difference_ci

    chains = pd.read_csv(out / "chains.csv")
    assert len(chains) == 2 * STARTS * len(TEMPS) and set(chains.start) == {"political", "not political"}
    assert chains[["time_in_region", "changed", "own_start", "other_starts"]].stack().between(0, 1).all()
    tir = pd.read_csv(out / "time_in_region.csv").set_index(["temperature", "start"])
    assert np.allclose(chains.groupby(["temperature", "start"]).time_in_region.mean(), tir.fraction.sort_index())
    texts = pd.read_csv(out / "null_texts.csv")
    assert set(zip(texts.claim, texts.family)) == {(c, f) for c in ("attraction", "persistence")
                                                  for f in political.NULL_FAMILIES}
    clean = texts[texts.family == "clean text"].groupby("claim")
    assert clean.called.apply(list)["attraction"] == clean.called.apply(list)["persistence"]  # the same text
    assert (texts[texts.family == "clean text"].changed == 0).all() and texts.called.isin([0, 1]).all()
    families = pd.read_csv(out / "null_families.csv").set_index(["claim", "family"])
    assert np.allclose(texts.groupby(["claim", "family"]).called.mean(), families.fraction.sort_index())
    checks = pd.read_csv(out / "checks.csv", keep_default_na=False)
    lo = chains[chains.temperature == min(TEMPS)]
    for claim, kind, words in (("persistence", "political", "from political starts"),
                               ("attraction", "not political", "from non-political starts")):
        g = lo[lo.start == kind]
        for family in political.NULL_FAMILIES:
            ref = texts[(texts.claim == claim) & (texts.family == family)]
            d = difference_ci(g.time_in_region, g.start_id, ref.called, ref.document, seed=0)
            row = checks[checks.check.str.contains(words) & checks.check.str.contains(f"({family};", regex=False)]
            assert len(row) == 1 and row.value.iloc[0].startswith(f"{d[0]:+.2f} [{d[1]:+.2f}, {d[2]:+.2f}]")


@needs_model
@pytest.mark.parametrize("params, expected", [
    (dict(method="svm"), "method must be one of"),
    (dict(starts=100000), "passages from distinct documents have"),
])
def test_bad_parameters_stop_the_first_cell(tmp_path, params, expected):
    err = first_cell_error(NAME, tmp_path, **params)
    assert err is not None, "the first cell after the parameters ran through"
    assert expected in str(err), repr(err)


def test_a_negative_temperature_is_refused_before_a_kernel_starts(tmp_path):
    with pytest.raises(BookError, match=r"temperatures must be > 0") as err:
        execute(NAME, tmp_path, temperatures=[0.5, -1.0])
    assert not isinstance(err.value, NotebookFailed)


def test_fraction_ci_is_wilson_over_single_units_and_resamples_units_otherwise():
    p, lo, hi = political.fraction_ci([0, 0, 0], ["a", "b", "c"])
    assert p == 0 and lo == 0 and 0 < hi < 1                      # Wilson, not a collapsed bootstrap
    p, lo, hi = political.fraction_ci([1, 1, 0, 0], ["a", "a", "b", "b"])
    assert p == 0.5 and lo == 0 and hi == 1                       # two units, each all-in or all-out
    with pytest.raises(ValueError, match="one unit per value"):
        political.fraction_ci([1, 0], ["a"])


def test_temperature_contrasts_pair_starts_and_read_the_trend():
    rng = np.random.default_rng(0)
    rows = [dict(temperature=t, start_id=s, v=float(rng.random() < p)) for t, p in ((0.1, 0.9), (0.5, 0.2), (1.0, 0.9))
            for s in range(60)]
    c = political.temperature_contrasts(pd.DataFrame(rows), "v", seed=0).set_index(["tau_a", "tau_b"])
    assert list(c.index) == [(0.1, 0.5), (0.1, 1.0), (0.5, 1.0)] and (c.starts == 60).all()
    assert c.loc[(0.1, 0.5), "reading"] == "higher" and c.loc[(0.5, 1.0), "reading"] == "lower"
    assert political.trend_verdict(c.reset_index()) == "not monotone"
    assert political.trend_verdict(c.reset_index().iloc[:1]) == "falls as τ rises"
    assert political.trend_verdict(c.reset_index().iloc[1:2]) == "not resolved"


def test_document_roles_recompute_the_build_split():
    rows = [dict(doc_id="bbc/politics/001", source="bbc"), dict(doc_id="bbc/politics/001", source="bbc")]
    r = political.document_roles({"x": rows})
    assert r.rows.tolist() == [2] and r.documents.tolist() == [1]
    from glauber_mlm.build.data import Doc, role_of
    assert r.roles.tolist() == [role_of(Doc("bbc/politics/001", "bbc", None))]
    assert political.shared_documents(rows, [dict(doc_id="bbc/politics/001")]) == {"bbc/politics/001"}
