"""The result box: the verdict rule on known cases, and what `Run.conclude` writes."""
import json

import pytest

from glauber_mlm.notebook import Run
from glauber_mlm.verdict import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, box_markdown, judge


@pytest.mark.parametrize("checks, word", [
    ({"a": True, "b": True}, REPRODUCED),
    ({"a": True, "b": False}, PARTLY),
    ({"a": True, "b": None}, PARTLY),            # all computable pass, one could not be computed
    ({"a": False, "b": False}, NOT_REPRODUCED),
    ({"a": False, "b": None}, NOT_REPRODUCED),   # every computable check fails
    ({"a": None, "b": None}, NOT_TESTABLE),
])
def test_verdict_rule(checks, word):
    v = judge(checks)
    assert v.word == word
    assert (v.passed, v.failed, v.untestable) == tuple(sum(x is y for x in checks.values()) for y in (True, False, None))


@pytest.mark.parametrize("checks", [{}, {"a": 0.7}, {"a": "yes"}])
def test_a_verdict_needs_named_boolean_checks(checks):
    with pytest.raises(ValueError, match="check"):
        judge(checks)


def test_box_lists_claim_numbers_and_every_check_with_its_answer():
    checks = {"fraction above one half": True, "trend resolved": None, "a | pipe": False}
    text = box_markdown("the claim", "cpu build", {"fraction": "0.9 [0.8, 1.0]"}, checks, judge(checks))
    assert text.startswith("**Verdict: partly reproduced** (1 of 3 checks pass, 1 not computable at this scale).")
    assert "the claim" in text and "cpu build" in text and "| fraction | 0.9 [0.8, 1.0] |" in text
    assert "| fraction above one half | yes |" in text and "| trend resolved | not computable at this scale |" in text
    assert "| a \\| pipe | **no** |" in text  # a pipe in a check cannot break the table


def test_conclude_saves_the_box_as_result_json(tmp_path):
    profiles = {"smoke": dict(model=None, seed=0)}
    run = Run("99_test", "smoke", profiles, tmp_path / "out")
    run.conclude("a claim", {"x": "1.0 [0.5, 1.5]"}, {"x is positive": True, "x is below 2": False})
    saved = json.loads((tmp_path / "out" / "result.json").read_text())
    assert saved["verdict"] == PARTLY and saved["summary"] == "1 of 2 checks pass"
    assert saved["checks"] == {"x is positive": True, "x is below 2": False}
    assert saved["numbers"] == {"x": "1.0 [0.5, 1.5]"} and "smoke" in saved["build"]


def test_the_build_line_names_every_model_and_the_embedded_default(tmp_path):
    profiles = {"smoke": dict(models=[None, "./other-mlm"], seed=0)}
    line = Run("99_test", "smoke", profiles, tmp_path).build()
    assert "the embedded minilm-mlm, ./other-mlm" in line and "`smoke` profile" in line and "forward" in line
