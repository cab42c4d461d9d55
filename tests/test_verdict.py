"""The result box: checks that decide only where the error their outcome risks is bounded, the verdict rule on
known cases (it rests on the core checks), and what `Run.conclude` writes (result.json, checks.csv)."""
import json

import numpy as np
import pandas as pd
import pytest

from glauber_mlm.pages.checks import COLUMNS, Calibration, Check, calibrate, smallest_decisive, table
from glauber_mlm.pages.run import Run
from glauber_mlm.pages.history import Provenance
from glauber_mlm.pages.verdict import RULE, box_markdown, judge, scope

# 40 of 40 planted truths pass, 0 of 40 planted nulls: both one-sided 95 % bounds are 1 − 0.05^(1/40) = 0.072
STRONG, WEAK = Calibration.from_counts(40, 40, 0, 40, "planted"), Calibration(0.6, 0.3, 40, "planted")


def check(passes, calibration=STRONG, core=True, name="c", to_decide=""):
    return Check(name, "s", "t", "v", passes, calibration, core=core, to_decide=to_decide)


@pytest.mark.parametrize("passes, calibration, outcome", [
    (True, STRONG, "pass"), (False, STRONG, "fail"),
    (True, WEAK, "inconclusive"), (False, WEAK, "inconclusive"),       # both errors too likely: no decision
    (True, None, "inconclusive"), (None, STRONG, "inconclusive"),      # not calibrated; not computable
    # a pass is charged only its false-pass rate, a fail only its false-fail rate
    (True, Calibration.from_counts(10, 40, 0, 30, "weak power, small size"), "pass"),
    (False, Calibration.from_counts(10, 40, 0, 30, "weak power, small size"), "inconclusive"),
    (False, Calibration.from_counts(40, 40, 20, 40, "full power, large size"), "fail"),
    (True, Calibration.from_counts(40, 40, 20, 40, "full power, large size"), "inconclusive"),
])
def test_a_check_decides_only_where_the_error_its_outcome_risks_is_bounded(passes, calibration, outcome):
    assert check(passes, calibration).outcome == outcome


@pytest.mark.parametrize("checks, question, word", [
    ([check(True), check(True)], "paper", "reproduced"),
    ([check(True), check(False)], "paper", "not reproduced"),                  # a decisive core fail
    ([check(True), check(False, core=False)], "paper", "reproduced"),          # a side check never blocks
    ([check(False), check(True, core=False)], "paper", "not reproduced"),      # nor grants
    ([check(True), check(False, None)], "paper", "reproduced"),                # nor does an uncalibrated one
    ([check(True), check(True, WEAK)], "paper", "inconclusive at this scale"),  # a weak pass does not count
    ([check(None), check(False, WEAK)], "paper", "inconclusive at this scale"),
    ([check(True, core=False)], "paper", "inconclusive at this scale"),        # no core check: nothing decides
    ([check(True)], "book", "passes"), ([check(False)], "book", "fails"),
    ([check(True, None)], "book", "inconclusive at this scale"),
])
def test_verdict_rule(checks, question, word):
    v = judge(checks, question)
    assert v.word == word
    core = [c.outcome for c in checks if c.core and c.calibration is not None]
    assert (v.passed, v.failed, v.inconclusive) == tuple(core.count(o) for o in ("pass", "fail", "inconclusive"))
    assert v.beside == len(checks) - len(core)


def test_a_page_without_core_checks_says_so():
    assert judge([check(True, core=False)]).reason == "the page states no core check, so nothing decides its verdict"
    assert judge([check(True, None)]).reason == "the page has no calibrated core check, so nothing decides its verdict"


def test_the_reason_names_the_first_open_core_check_and_the_bound_that_is_too_wide():
    v = judge([check(True, name="a"), check(True, WEAK, name="b"), check(None, name="c")])
    assert v.reason.startswith("1 of 3 core checks pass decisively; “b” is inconclusive: rule says pass, but the "
                               "false-pass rate's one-sided 95 % upper bound is 0.44 (12 of 40 null replicates passed)")
    assert "(and 1 more)" in v.reason


def test_an_open_side_check_is_not_named_by_the_reason():
    v = judge([check(True, WEAK, core=False, name="side"), check(False, WEAK, name="core")])
    assert "“core” is inconclusive" in v.reason and "“side”" not in v.reason and "more" not in v.reason


@pytest.mark.parametrize("checks, deciding", [
    ([check(True, name="a"), check(False, name="b"), check(False, name="c")], "b"),     # the first decisive core fail
    ([check(True, core=False, name="side"), check(True, name="core")], "core"),        # all pass: the first core check
    ([check(True, name="a"), check(False, WEAK, core=False, name="s"), check(None, name="c")], "c"),  # open core first
    ([check(True, name="a"), check(False, core=False, name="s")], "a"),                # a side fail is beside
])
def test_the_verdict_rests_on_the_check_its_reason_names(checks, deciding):
    v = judge(checks)
    assert v.deciding.check == deciding
    assert v.word == "reproduced" or f"{deciding}" in v.reason


def test_the_box_says_which_bound_is_too_wide_and_what_would_decide_it():
    checks = [check(False, WEAK, name="weak fail", to_decide="96 pairs (40 min on this machine)"),
              check(True, WEAK, core=False, name="weak side pass"), check(True, name="strong")]
    text = box_markdown("claim", "build", {}, checks, judge(checks))
    assert ("| weak fail | v | t | ≤ 0.44 (12 of 40) / ≤ 0.54 (16 of 40) | inconclusive: rule says fail, but the "
            "false-fail rate's one-sided 95 % upper bound is 0.54 (16 of 40 truth replicates did not pass); at its "
            "observed rate (0.40) no number of replicates would bound it at 0.20: the design must change |") in text
    assert "(12 of 40 null replicates passed); at its observed rate (0.30) no number" in text
    assert "the design must change (side check, beside the verdict) |" in text
    assert "| strong | v | t | ≤ 0.07 (0 of 40) / ≤ 0.07 (0 of 40) | pass |" in text
    assert "**What would decide it.**\n\n- “weak fail”: 96 pairs (40 min on this machine)\n" in text
    assert "“weak side pass”:" not in text                                  # only core checks are listed


def test_the_box_names_the_replicates_where_the_check_names_no_design():
    weak = Calibration.from_counts(10, 10, 0, 10, "ten replicates")
    text = box_markdown("claim", "build", {}, [check(True, weak, name="few")], judge([check(True, weak)]))
    assert ("- “few”: rule says pass, but the false-pass rate's one-sided 95 % upper bound is 0.26 (0 of 10 null "
            "replicates passed); 29 null replicates would bound it at 0.10") in text


@pytest.mark.parametrize("checks", [[], [{"a": True}], ["yes"]])
def test_a_verdict_needs_checks(checks):
    with pytest.raises(ValueError, match="Check"):
        judge(checks)


def test_a_check_refuses_a_number_for_its_answer():
    with pytest.raises(ValueError, match="True, False or None"):
        Check("c", "s", "t", "v", 0.7, STRONG)


def test_calibration_measures_power_and_size_of_a_planted_rule():
    """A one-sided z-test of mean > 0 on 25 normal draws: power against mean 1 is ~1, size at mean 0 is ~0.05."""
    rule = lambda x: bool(x.mean() / (1 / np.sqrt(x.size)) > 1.645)
    cal = calibrate(rule, lambda rng: rng.normal(1.0, 1, 25), lambda rng: rng.normal(0.0, 1, 25), 400, "normal")
    assert cal.power > 0.99 and 0.02 < cal.size < 0.09 and cal.decisive
    flat = calibrate(rule, lambda rng: rng.normal(0.1, 1, 25), lambda rng: rng.normal(0.0, 1, 25), 400, "weak")
    assert flat.power < 0.3 and not flat.decisive                     # a true but tiny effect: underpowered


def test_smallest_decisive_names_the_cheapest_decisive_design():
    designs = {"12 pairs": WEAK, "24 pairs": STRONG, "48 pairs": STRONG}
    assert smallest_decisive(designs).startswith("decisive at 24 pairs")
    assert smallest_decisive({"12 pairs": WEAK}).startswith("not decisive up to 12 pairs")
    small_size = Calibration.from_counts(10, 40, 0, 30, "weak power, small size")
    assert smallest_decisive({"12 pairs": small_size, "24 pairs": STRONG}, passes=True).startswith("decisive at 12")
    assert smallest_decisive({"12 pairs": small_size, "24 pairs": STRONG}, passes=False).startswith("decisive at 24")


def test_box_lists_claim_numbers_and_every_check_with_its_calibration():
    checks = [check(True, name="fraction above one half"), check(None, None, name="a | pipe")]
    text = box_markdown("the claim", "cpu build", {"fraction": "0.9 [0.8, 1.0]"}, checks, judge(checks),
                        not_shown="beyond this model", paper="0.95 on BERT-base")
    assert "**The claim.** the claim\n\n**What the paper reports.** 0.95 on BERT-base\n\n**This build.**" in text
    assert text.startswith("**Verdict: reproduced.** the one core check passes decisively")
    assert "| fraction | 0.9 [0.8, 1.0] |" in text
    assert "| fraction above one half | v | t | ≤ 0.07 (0 of 40) / ≤ 0.07 (0 of 40) | pass |" in text
    assert ("| a \\| pipe | v | t | not calibrated | inconclusive: not computable at this scale (beside the verdict) |"
            in text and "**What this build does not show.** beyond" in text)


def test_the_box_says_what_its_verdict_is_about_and_whether_its_rules_came_before_the_run():
    checks = [check(True, name="fraction above one half"), check(True, name="second")]
    where = scope(["minilm-mlm", "minilm6-mlm"], "cpu")
    assert where == "on minilm-mlm and minilm6-mlm at `cpu` scale"
    before = box_markdown("c", "b", {}, checks, judge(checks), where=where, provenance=Provenance(()))
    assert before.startswith("**Verdict: reproduced on minilm-mlm and minilm6-mlm at `cpu` scale.** all 2 core checks")
    assert "| check, rules stated before the run | value |" in before and "Under the earlier rules" not in before
    revised = box_markdown("c", "b", {}, checks, judge(checks), where=where, provenance=Provenance(
        ("2026-12-02", "2026-12-03"), "inconclusive: size 1.00", "2026-12-02"))
    assert "| check, rules revised after 2 outcomes (last 2026-12-03) | value |" in revised
    assert "stated before the run" not in revised
    assert ("**Under the earlier rules.** This page's rules were revised after 2 outcomes (last 2026-12-03); its "
            "outcome before the last recorded revision: inconclusive: size 1.00 (recorded 2026-12-02, when the rules "
            "were revised).") in revised
    unrecorded = box_markdown("c", "b", {}, checks, judge(checks), provenance=Provenance(("2026-12-03",)))
    assert "before the last recorded revision: not recorded in `notebooks/rules.json`." in unrecorded
    open_ = [check(True, WEAK)]
    assert box_markdown("c", "b", {}, open_, judge(open_), where=where).startswith(
        "**Verdict: inconclusive on minilm-mlm and minilm6-mlm at `cpu` scale.**")
    smoke = box_markdown("c", "b", {}, checks, judge(checks), smoke=True, where=where)
    assert where not in smoke.splitlines()[0]            # a smoke run claims nothing, at any scope


def test_the_intro_no_longer_states_the_old_point_estimate_rule():
    """The rule in force (`RULE`: one-sided bounds on the error rates) is written under the first screen
    (tests/test_first_screen.py); the intro's prose must not state the power ≥ 0.8 / size ≤ 0.1 rule it replaced."""
    from pathlib import Path

    intro = (Path(__file__).resolve().parents[1] / "book" / "intro.md").read_text()
    assert "one-sided 95 % upper bound of its false-pass" in RULE
    assert "≥ 0.8" not in intro and "≤ 0.1 on a planted null" not in intro
    assert "bounds on its false-pass and false-fail rates" in intro


def test_a_bound_just_above_its_limit_never_reads_as_the_limit():
    from glauber_mlm.pages.checks import shown_bound, upper_bound

    assert shown_bound(0.1014, 0.10) == "0.101" and shown_bound(0.0950, 0.10) == "0.10"
    assert shown_bound(0.2034, 0.20) == "0.203" and shown_bound(0.54, 0.20) == "0.54"
    above = Calibration.from_counts(169, 200, 0, 29, "30 nulls less one")       # 0 of 29: bound 0.0982
    assert upper_bound(0, 29) < 0.10 and "≤ 0.10 (0 of 29)" in box_markdown(
        "c", "b", {}, [check(True, above)], judge([check(True, above)]))
    weak = Calibration.from_counts(169, 200, 0, 30, "planted")                  # 31 of 200 fail: bound 0.203
    text = box_markdown("c", "b", {}, [check(False, weak)], judge([check(False, weak)]))
    assert "/ ≤ 0.203 (31 of 200)" in text and "upper bound is 0.203 (31 of 200 truth replicates" in text


def test_conclude_saves_result_json_and_checks_csv(tmp_path):
    run = Run("99_test", "smoke", {"smoke": dict(model=None, seed=0)}, tmp_path / "out")
    run.conclude("a claim", {"x": "1.0 [0.5, 1.5]"}, [check(True, name="x > 0"), check(False, name="x < 2")],
                 paper="x = 1.2 on BERT")
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["paper"] == "x = 1.2 on BERT"
    bound = 1 - 0.05 ** (1 / 40)
    assert saved["deciding"] == pytest.approx(dict(
        check="x < 2", value="v", outcome="fail", core=True, reason="fail: false-fail bound ≤ 0.20", power=1.0,
        size=0.0, false_pass_upper=bound, false_fail_upper=bound, to_decide="",
        decide_with=None))
    assert saved["checks_verdict"] == "not reproduced" and saved["reason"] == "a core check fails decisively: x < 2"
    assert saved["verdict"] == "smoke test, not a result"  # a smoke run is no result (issue 34)
    assert saved["checks"] == {"x > 0": "pass", "x < 2": "fail"} and "smoke" in saved["build"]
    csv = pd.read_csv(tmp_path / "out" / "checks.csv")
    assert list(csv.columns) == COLUMNS and csv.outcome.tolist() == ["pass", "fail"] and csv.power.tolist() == [1.0, 1.0]
    assert csv.decided_by.tolist() == ["pass: false-pass bound ≤ 0.10", "fail: false-fail bound ≤ 0.20"]
    assert csv.truth_replicates.tolist() == csv.null_replicates.tolist() == [40, 40]
    assert csv.false_pass_upper.tolist() == pytest.approx([bound, bound]) == csv.false_fail_upper.tolist()
    assert table([check(True, None)]).calibrated_on.tolist() == ["not calibrated"]


def test_the_build_line_names_every_model_and_the_embedded_default(tmp_path):
    profiles = {"smoke": dict(models=[None, "./other-mlm"], seed=0)}
    line = Run("99_test", "smoke", profiles, tmp_path).build()
    assert "the embedded minilm-mlm, ./other-mlm" in line and "`smoke` profile" in line and "forward" in line
