"""The result box: checks that decide only where calibrated, the verdict rule on known cases, and what
`Run.conclude` writes (result.json, checks.csv)."""
import json

import numpy as np
import pandas as pd
import pytest

from glauber_mlm.pages.checks import COLUMNS, Calibration, Check, calibrate, smallest_decisive, table
from glauber_mlm.pages.run import Run
from glauber_mlm.pages.verdict import box_markdown, judge

STRONG, WEAK = Calibration(0.95, 0.02, 40, "planted"), Calibration(0.6, 0.3, 40, "planted")


def check(passes, calibration=STRONG, core=True, name="c"):
    return Check(name, "s", "t", "v", passes, calibration, core=core)


@pytest.mark.parametrize("passes, calibration, outcome", [
    (True, STRONG, "pass"), (False, STRONG, "fail"),
    (True, WEAK, "inconclusive"), (False, WEAK, "inconclusive"),       # underpowered or oversized: no decision
    (True, None, "inconclusive"), (None, STRONG, "inconclusive"),      # not calibrated; not computable
    (True, Calibration(0.8, 0.1, 10, "edge"), "pass"),                # the thresholds are inclusive
    (True, Calibration(0.79, 0.0, 10, "edge"), "inconclusive"), (True, Calibration(1.0, 0.11, 10, "edge"), "inconclusive"),
])
def test_a_check_decides_only_with_power_and_size(passes, calibration, outcome):
    assert check(passes, calibration).outcome == outcome


@pytest.mark.parametrize("checks, question, word", [
    ([check(True), check(True)], "paper", "reproduced"),
    ([check(True), check(False)], "paper", "not reproduced"),                  # a decisive core fail
    ([check(True), check(False, core=False)], "paper", "inconclusive at this scale"),  # a side check fails
    ([check(True), check(True, WEAK)], "paper", "inconclusive at this scale"),  # a weak pass does not count
    ([check(None), check(False, WEAK)], "paper", "inconclusive at this scale"),
    ([check(True)], "book", "passes"), ([check(False)], "book", "fails"),
    ([check(True, None)], "book", "inconclusive at this scale"),
])
def test_verdict_rule(checks, question, word):
    v = judge(checks, question)
    assert v.word == word
    outcomes = [c.outcome for c in checks]
    assert (v.passed, v.failed, v.inconclusive) == tuple(outcomes.count(o) for o in ("pass", "fail", "inconclusive"))


def test_the_reason_names_the_first_open_check_and_why():
    v = judge([check(True, name="a"), check(True, WEAK, name="b"), check(None, name="c")])
    assert "1 of 3 checks pass decisively" in v.reason and "“b” is inconclusive: power 0.60 < 0.8, size 0.30 > 0.1" in v.reason
    assert "(and 1 more)" in v.reason


def test_the_reason_names_an_open_core_check_before_an_open_side_check():
    v = judge([check(True, WEAK, core=False, name="side"), check(False, WEAK, name="core")])
    assert "“core” is inconclusive" in v.reason and "(and 1 more)" in v.reason


@pytest.mark.parametrize("checks, deciding", [
    ([check(True, name="a"), check(False, name="b"), check(False, name="c")], "b"),     # the first decisive core fail
    ([check(True, core=False, name="side"), check(True, name="core")], "core"),        # all pass: the first core check
    ([check(True, name="a"), check(False, WEAK, core=False, name="s"), check(None, name="c")], "c"),  # open core first
    ([check(True, name="a"), check(False, core=False, name="s")], "s"),                # only a side check is open
])
def test_the_verdict_rests_on_the_check_its_reason_names(checks, deciding):
    v = judge(checks)
    assert v.deciding.check == deciding
    assert v.word == "reproduced" or f"{deciding}" in v.reason


def test_the_box_says_what_the_rule_says_for_an_inconclusive_check():
    checks = [check(False, WEAK, name="weak fail"), check(True, WEAK, core=False, name="weak side pass")]
    text = box_markdown("claim", "build", {}, checks, judge(checks))
    assert "| weak fail | v | t | 0.60 / 0.30 | inconclusive: the rule says fail, but power 0.60 < 0.8, size 0.30 > 0.1 |" in text
    assert "inconclusive: the rule says pass, but power 0.60 < 0.8, size 0.30 > 0.1 (side check) |" in text


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


def test_box_lists_claim_numbers_and_every_check_with_its_calibration():
    checks = [check(True, name="fraction above one half"), check(None, None, name="a | pipe")]
    text = box_markdown("the claim", "cpu build", {"fraction": "0.9 [0.8, 1.0]"}, checks, judge(checks),
                        not_shown="beyond this model", paper="0.95 on BERT-base")
    assert "**The claim.** the claim\n\n**What the paper reports.** 0.95 on BERT-base\n\n**This build.**" in text
    assert text.startswith("**Verdict: inconclusive at this scale.** 1 of 2 checks pass decisively")
    assert "| fraction | 0.9 [0.8, 1.0] |" in text and "| fraction above one half | v | t | 0.95 / 0.02 | pass |" in text
    assert "| a \\| pipe |" in text and "not calibrated" in text and "**What this build does not show.** beyond" in text


def test_conclude_saves_result_json_and_checks_csv(tmp_path):
    run = Run("99_test", "smoke", {"smoke": dict(model=None, seed=0)}, tmp_path / "out")
    run.conclude("a claim", {"x": "1.0 [0.5, 1.5]"}, [check(True, name="x > 0"), check(False, name="x < 2")],
                 paper="x = 1.2 on BERT")
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["paper"] == "x = 1.2 on BERT"
    assert saved["deciding"] == dict(check="x < 2", value="v", outcome="fail", core=True, reason="decisive",
                                     power=0.95, size=0.02)
    assert saved["verdict"] == "not reproduced" and saved["reason"] == "a decisive check fails: x < 2"
    assert saved["checks"] == {"x > 0": "pass", "x < 2": "fail"} and "smoke" in saved["build"]
    csv = pd.read_csv(tmp_path / "out" / "checks.csv")
    assert list(csv.columns) == COLUMNS and csv.outcome.tolist() == ["pass", "fail"] and csv.power.tolist() == [0.95, 0.95]
    assert table([check(True, None)]).calibrated_on.tolist() == ["not calibrated"]


def test_the_build_line_names_every_model_and_the_embedded_default(tmp_path):
    profiles = {"smoke": dict(models=[None, "./other-mlm"], seed=0)}
    line = Run("99_test", "smoke", profiles, tmp_path).build()
    assert "the embedded minilm-mlm, ./other-mlm" in line and "`smoke` profile" in line and "forward" in line
