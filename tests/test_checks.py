"""The verdict rule by error type: each outcome charged its own error rate, with the one-sided 95 % upper
Clopper–Pearson bound of that rate on planted data; and the rules history a page shows at its end."""
import json
import math

import pytest
from scipy.stats import beta

from glauber_mlm.pages.checks import (Calibration, Check, calibrate, deciding_design, replicates_to_bound,
                                      smallest_decisive, upper_bound)
from glauber_mlm.pages.history import fixed_on, provenance, rules_history, rules_in_force
from glauber_mlm.pages.verdict import judge


@pytest.mark.parametrize("n", [10, 20, 29, 30, 40])
def test_no_error_in_n_runs_bounds_the_rate_at_the_closed_form(n):
    """0 of n: the one-sided 95 % bound solves (1 − p)^n = 0.05, p = 1 − 0.05^(1/n), the Beta(1, n) quantile."""
    assert upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)


def test_known_bounds():
    assert upper_bound(0, 10) == pytest.approx(0.2589, abs=1e-4)          # 0 of 10 bounds nothing at 0.10
    assert upper_bound(0, 30) == pytest.approx(0.0950, abs=1e-4)
    assert upper_bound(1, 40) == pytest.approx(beta.ppf(0.95, 2, 39))
    assert upper_bound(5, 5) == 1.0
    with pytest.raises(ValueError, match="error count"):
        upper_bound(6, 5)


def test_the_replicates_that_would_bound_a_rate():
    assert replicates_to_bound(0.0, 0.10) == 29                           # 1 − 0.05^(1/28) = 0.101 > 0.10
    assert upper_bound(0, 28) > 0.10 >= upper_bound(0, 29)
    assert replicates_to_bound(0.0, 0.20) == math.ceil(math.log(0.05) / math.log(0.8))
    n = replicates_to_bound(0.05, 0.10)
    assert upper_bound(round(0.05 * n), n) <= 0.10 < upper_bound(round(0.05 * (n - 1)), n - 1)
    assert replicates_to_bound(0.12, 0.10) is None and replicates_to_bound(0.10, 0.10) is None


def test_calibration_carries_its_counts_with_different_replicates_on_truth_and_null():
    cal = Calibration.from_counts(30, 40, 0, 30, "planted")
    assert (cal.power, cal.size, cal.replicates, cal.null_replicates) == (0.75, 0.0, 40, 30)
    assert (cal.truth_passes, cal.truth_replicates, cal.null_passes) == (30, 40, 0)
    assert cal.false_pass_upper == pytest.approx(1 - 0.05 ** (1 / 30))
    assert cal.false_fail_upper == pytest.approx(beta.ppf(0.95, 11, 30))
    assert Calibration(0.5, 0.1, 20, "rates").null_replicates == 20         # the old signature: as many on both
    with pytest.raises(ValueError, match="size must be a rate"):
        Calibration(0.5, 1.5, 20, "bad")
    with pytest.raises(ValueError, match="null_replicates must be a whole number"):
        Calibration(0.5, 0.1, 20, "bad", null_replicates=0)


def test_an_unknown_rate_decides_nothing():
    cal = Calibration(0.0, math.nan, 3, "no law to replant")
    assert cal.null_passes is None and math.isnan(cal.false_pass_upper) and not cal.decides(True)
    assert "false-pass rate is unknown" in Check("c", "s", "t", "v", True, cal).reason


def calibrated(truth_passes, truth_n, null_passes, null_n):
    return Calibration.from_counts(truth_passes, truth_n, null_passes, null_n, "planted")


def test_a_size_bound_of_0_12_cannot_pass_decisively_and_0_of_30_nulls_can():
    over = calibrated(40, 40, 1, 37)                                        # bound 0.122
    assert over.false_pass_upper == pytest.approx(0.12, abs=0.005)
    c = Check("c", "s", "t", "v", True, over)
    assert c.outcome == "inconclusive"
    assert c.reason.startswith("rule says pass, but the false-pass rate's one-sided 95 % upper bound is 0.12 "
                               "(1 of 37 null replicates passed); ")
    assert Check("c", "s", "t", "v", True, calibrated(40, 40, 0, 30)).outcome == "pass"   # bound 0.095


def test_a_fail_whose_false_fail_bound_is_0_25_is_inconclusive_and_one_at_0_20_decides():
    weak = calibrated(16, 17, 0, 40)                                        # 1 of 17 truths fail: bound 0.250
    assert weak.false_fail_upper == pytest.approx(0.25, abs=0.002)
    c = Check("c", "s", "t", "v", False, weak)
    assert c.outcome == "inconclusive" and "false-fail rate's one-sided 95 % upper bound is 0.25" in c.reason
    assert Check("c", "s", "t", "v", False, calibrated(14, 14, 0, 40)).outcome == "fail"   # 0 of 14: 0.192


def test_a_pass_ignores_the_power_and_a_fail_ignores_the_size():
    low_power = calibrated(8, 40, 0, 30)
    assert Check("c", "s", "t", "v", True, low_power).outcome == "pass"
    large_size = calibrated(40, 40, 30, 40)
    assert Check("c", "s", "t", "v", False, large_size).outcome == "fail"


def test_checks_csv_names_the_rule_that_decided():
    rows = [Check("a", "s", "t", "v", True, calibrated(40, 40, 0, 30)).row(),
            Check("b", "s", "t", "v", False, calibrated(40, 40, 0, 30)).row(),
            Check("c", "s", "t", "v", True, calibrated(40, 40, 0, 10), to_decide="30 nulls").row()]
    assert [r["decided_by"] for r in rows[:2]] == ["pass: false-pass bound ≤ 0.10", "fail: false-fail bound ≤ 0.20"]
    assert rows[2]["decided_by"].endswith("29 null replicates would bound it at 0.10")
    assert rows[2]["to_decide"] == "30 nulls" and rows[2]["null_replicates"] == 10 and rows[2]["truth_replicates"] == 40


def test_an_open_check_names_its_deciding_design_as_parameters_and_a_decided_one_names_none():
    designs = {"150 draws": calibrated(40, 40, 3, 30), "300 draws": calibrated(200, 200, 0, 200),
               "600 draws": calibrated(200, 200, 0, 200)}
    steps = {"150 draws": {"steps": 2400}, "300 draws": {"steps": 4800}, "600 draws": {"steps": 9600}}
    assert smallest_decisive(designs).startswith("decisive at 300 draws")
    assert deciding_design(designs, steps) == {"steps": 4800}
    assert deciding_design({"150 draws": designs["150 draws"]}, steps) is None
    with pytest.raises(ValueError, match="no parameters given"):
        deciding_design(designs, {"150 draws": {"steps": 2400}})
    open_ = Check("c", "s", "t", "v", True, designs["150 draws"], decide_with=deciding_design(designs, steps))
    assert open_.outcome == "inconclusive" and json.loads(open_.row()["decide_with"]) == {"steps": 4800}
    decided = Check("c", "s", "t", "v", True, designs["300 draws"], decide_with={"steps": 4800})
    assert decided.row()["decide_with"] == ""
    with pytest.raises(ValueError, match="decide_with must be a non-empty dict"):
        Check("c", "s", "t", "v", True, None, decide_with="4800 steps")
    from glauber_mlm.pages.verdict import _to_decide

    assert _to_decide([open_])[-1].endswith("— its parameters: `-p steps 4800`")


def test_a_side_check_cannot_block_a_verdict_nor_an_uncalibrated_one():
    core = Check("core", "s", "t", "v", True, calibrated(40, 40, 0, 30))
    side = Check("side", "s", "t", "v", False, calibrated(40, 40, 0, 30), core=False)
    loose = Check("loose", "s", "t", "v", False, None)
    assert judge([core, side, loose]).word == "reproduced"


def test_calibrate_counts_passes_on_each_planted_law_with_its_own_replicates():
    cal = calibrate(lambda x: x, lambda rng: True, lambda rng: rng.random() < 0.0, 12, "constant", null_replicates=30)
    assert (cal.truth_passes, cal.replicates, cal.null_passes, cal.null_replicates) == (12, 12, 0, 30)


RECORD = {"99_page": [
    {"date": "2026-12-01", "change": "first rules", "hash": None, "paper": None, "builds_committed": True},
    {"date": "2026-12-02", "change": "threshold 0.5 → 0.4 | after a build", "hash": "aaa", "paper": "p",
     "builds_committed": True, "outcome_before": "not reproduced", "outcome_after": "reproduced"},
    {"date": "2026-12-03", "change": "more pairs (rules unchanged)", "hash": "aaa", "paper": "q",
     "builds_committed": False},
]}


def test_rules_history_lists_every_change_with_its_date_and_recorded_outcomes(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(RECORD))
    text = rules_history("99_page", path)
    assert text.startswith("## How these rules came to be")
    assert "changed 2 times" in text and "2 of these changed its rules, design or calibration after an outcome" in text
    assert "| 2026-12-02 | threshold 0.5 → 0.4 \\| after a build | yes | not reproduced → reproduced | aaa |" in text
    assert "| 2026-12-03 | more pairs (rules unchanged) | yes | not recorded | aaa |" in text   # never invented
    with pytest.raises(ValueError, match="no entry"):
        rules_history("98_other", path)


def test_rules_revised_after_an_outcome_are_counted_and_the_latest_recorded_outcome_is_kept():
    entries = RECORD["99_page"]
    seen = provenance(entries)
    assert seen.revisions == ("2026-12-02", "2026-12-03") and not seen.stated_before_run
    assert seen.label == "revised after 2 outcomes (last 2026-12-03)"
    assert (seen.previous_outcome, seen.previous_date) == ("not reproduced", "2026-12-02")
    display = [entries[0], {**entries[1], "display_only": True}, entries[2]]
    assert provenance(display).revisions == ("2026-12-03",)   # the display-only entry revises nothing
    assert provenance(display).previous_outcome is None       # nor is its outcome the one before a revision
    assert provenance(display).label == "revised after 1 outcome (2026-12-03)"
    before = [{**entries[0], "builds_committed": False}, {**entries[1], "builds_committed": False,
                                                          "outcome_before": None}]
    assert provenance(before).stated_before_run and provenance(before).label == "stated before the run"
    assert provenance(before).previous == "not recorded in `notebooks/rules.json`"          # never reconstructed
    flagged = [before[0], {**before[1], "revised_after_outcome": True}]
    assert provenance(flagged).revisions == ("2026-12-02",)


def test_the_box_names_the_date_the_rules_in_force_were_fixed(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(RECORD))
    assert fixed_on(RECORD["99_page"], "aaa") == "2026-12-02"               # a later design change keeps the date
    assert rules_in_force("99_page", "aaa", path).startswith("in force since 2026-12-02 (rules hash aaa)")
    assert "no dated entry" in rules_in_force("99_page", "bbb", path)
