"""Parameters are data, never code (issue 34, item 1, and its "YAML 1.1 numbers" bullet).

Every YAML tag and every odd scalar, given as `-p KEY VALUE` to every parameter of every notebook, is either
refused with a BookError before any kernel starts, or reaches papermill as plain data whose parameters cell
(papermill's own rendering) is nothing but `KEY = literal` lines reading back as the value. No kernel runs here.
"""
from __future__ import annotations

import ast
import base64
import datetime
import json
import math

import papermill
import pytest
from papermill.translators import translate_parameters

from glauber_mlm.book import command
from glauber_mlm.book.errors import BookError
from glauber_mlm.book.parameters import (accepted_parameters, known_notebooks, notebook_source, parse_value,
                                         resolve_parameters, safe_parameters)

PAYLOAD = "\"+__import__('os').system('id')+\""
TAGGED = ["!!binary aWQ=", "!!set {a: null}", "!!python/object:os.system id", "!!python/object/apply:os.system [id]",
          "!!str x", "!!int 3", "!!float 1", "!!bool yes", "!!null ''", "!!timestamp 2001-12-14", "!!omap [a: 1]",
          "!!pairs [a: 1]", "!!seq [1]", "!!map {a: 1}", "!custom x", "! x", "[1, !!binary aWQ=]",
          f"!!set {{{PAYLOAD}: null}}", f"!!binary {base64.b64encode(PAYLOAD.encode()).decode()}"]
ODD = ["010", "-010", "0o10", "0x1F", "0b11", "1:30", "1:30.5", "1_0", "1.5_0", ".inf", "-.inf", ".nan", "1e999",
       "yes", "on", "off", "no", "2001-12-14", "2001-12-14 21:59:43.10", "<<", "=", "&a [1, *a]", "%YAML 1.1\n--- 3",
       "~", "", "null", "NaN", "Infinity", "x\"y'z\nw", "\"x\\\"y'z\\nw\"", PAYLOAD, '"\\u00e9\\t"',
       "{a: 1}", "{1: 2}", "[[1, 2], [3]]", "\"\\ud800\""]
NOTEBOOKS = known_notebooks()


def parameters_of(name: str) -> list[str]:
    return accepted_parameters(notebook_source(name))


def assert_plain(value) -> None:
    """`value` holds nothing but str, int, finite float, bool, None, lists and dicts with text keys."""
    if isinstance(value, list):
        for item in value:
            assert_plain(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str)
            assert_plain(item)
    else:
        assert value is None or type(value) in (str, int, float, bool), repr(value)
        assert not isinstance(value, float) or math.isfinite(value)


def assert_written_as_literals(params: dict) -> None:
    """papermill's parameters cell for `params` is one `KEY = literal` per key, reading back as the value."""
    cell = ast.parse(translate_parameters("python3", "python", params))
    assert len(cell.body) == len(params)
    for node, (key, value) in zip(cell.body, params.items()):
        assert isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [key]
        assert repr(ast.literal_eval(node.value)) == repr(value)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_tag_and_odd_scalar_is_refused_or_written_as_a_literal(name):
    src = notebook_source(name)
    outcomes = {"refused": 0, "passed": 0}
    for key in parameters_of(name):
        for text in TAGGED + ODD:
            try:
                params = resolve_parameters(src, {key: parse_value(text, key)})
            except BookError:
                outcomes["refused"] += 1
                continue
            outcomes["passed"] += 1
            assert text not in TAGGED, f"{name}: -p {key} {text!r} was accepted"
            assert_plain(params)
            assert_written_as_literals(params)
    assert outcomes["refused"] and outcomes["passed"]


@pytest.mark.parametrize("text", TAGGED)
def test_a_tag_is_refused_naming_the_key_and_the_fix(text):
    with pytest.raises(BookError, match=r"-p device .*YAML tags .* are refused.*drop the tag"):
        parse_value(text, "device")


@pytest.mark.parametrize("text, fix", [("010", "write 10 without the leading zero"), ("0o10", "write 8 in decimal"),
                                       ("0x1F", "write 31 in decimal"), ("1:30", "reads it as 90"),
                                       ("1_000", "reads it as 1000"), ("yes", "reads it as True"),
                                       ("2001-12-14", "reads it as a timestamp"), (".inf", "finite"),
                                       (".nan", "finite"), ("1e999", "finite")])
def test_yaml_11_numbers_and_words_are_refused(text, fix):
    with pytest.raises(BookError, match=fix):
        parse_value(text, "pairs")


@pytest.mark.parametrize("text, value", [("12", 12), ("[8, 16]", [8, 16]), ("[1.0, 2.0]", [1.0, 2.0]), ("2.5", 2.5),
                                         ("1e3", 1000.0), ("-3", -3), ("null", None), ("~", None), ("", None),
                                         ("true", True), ("false", False), ("cpu", "cpu"), ("my-folder", "my-folder"),
                                         ("data/models/x", "data/models/x"), ('"010"', "010"), ("'yes'", "yes"),
                                         ('"a\\"b\'c\\nd"', "a\"b'c\nd"), ("[null, minilm6-mlm]", [None, "minilm6-mlm"])])
def test_plain_values_read_as_before(text, value):
    assert repr(parse_value(text, "k")) == repr(value)


@pytest.mark.parametrize("name, params, expected", [
    ("02_high_temperature_mixing", {"lengths": [8, 16], "temperatures": [1.0, 2.0], "pairs": 12, "device": "cpu"}, None),
    ("06_has_my_chain_mixed", {"model": "my-folder", "device": None, "seed": 7}, None),
    ("03_metastability_traps", {"embedder": None, "umap": False}, None),
    ("04_political_basins", {"profile": "paper", "score_texts": 100, "base_passages": None}, None),
    ("01_rectangle_test", {"model": "potts", "device": "cuda:0"}, {"models": ["potts"], "device": "cuda:0"}),
])
def test_normal_values_still_pass(name, params, expected):
    assert resolve_parameters(notebook_source(name), params) == (expected or params)


@pytest.mark.parametrize("name, params, message", [
    ("06_has_my_chain_mixed", {"device": 3}, "device must be text"),
    ("06_has_my_chain_mixed", {"device": ["cpu"]}, "device must be one value"),
    ("06_has_my_chain_mixed", {"model": {"a": 1}}, "model must be text"),
    ("04_political_basins", {"profile": "paper", "score_texts": "abc"}, "score_texts must be a whole number"),
    ("04_political_basins", {"base_passages": [1]}, "base_passages must be one value"),
    ("04_political_basins", {"embedder": 1.5}, "embedder must be text"),
    ("01_rectangle_test", {"models": "potts"}, "models must be a non-empty list"),
    ("06_has_my_chain_mixed", {"scale": None}, "scale must be a finite number"),
    ("06_has_my_chain_mixed", {"output_dir": 3}, "output_dir must be text"),
    ("06_has_my_chain_mixed", {"dtype": ["float32"]}, "dtype must be one value"),
])
def test_keys_the_profiles_leave_untyped_are_checked(name, params, message):
    """`device`, the model keys, the knobs and keys a profile holds as None have a declared type too."""
    with pytest.raises(BookError, match=message):
        resolve_parameters(notebook_source(name), params)


@pytest.mark.parametrize("params, message", [
    ({"device": b"id"}, "of type bytes"), ({"device": {"a", "b"}}, "of type set"), ({"x": datetime.date(2001, 12, 14)}, "of type date"),
    ({"x": float("nan")}, "not a finite number"), ({"x": [float("inf")]}, "not a finite number"),
    ({"x": (1, 2)}, "of type tuple"), ({"x": {1: 2}}, "keys must be text"), ({"x y": 1}, "not a Python name"),
    ({"class": 1}, "not a Python name"), ({"x": "\ud800"}, "not valid Unicode"), ({"x": object()}, "of type object"),
])
def test_safe_parameters_refuses_what_papermill_would_not_write_as_data(params, message):
    with pytest.raises(BookError, match=message):
        safe_parameters(params)


def test_safe_parameters_passes_plain_data_unchanged():
    params = {"device": PAYLOAD, "x": "a\"b'c\nd\\", "n": [1, 2.5, None, True], "d": {"k": ["v"]}, "e": "é"}
    assert safe_parameters(params) is params
    assert_written_as_literals(params)


@pytest.fixture
def no_kernel(monkeypatch):
    """papermill.execute_notebook replaced: records the parameters it would get, and stops there."""
    calls = []

    def execute_notebook(*args, parameters=None, **kwargs):
        calls.append(parameters)
        raise RuntimeError("no kernel in this test")

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)
    return calls


@pytest.mark.parametrize("key, text, message", [
    ("device", f"!!binary {base64.b64encode(PAYLOAD.encode()).decode()}", "YAML tags"),
    ("pairs", "010", "write 10 without the leading zero"),
    ("seed", "1:30", "reads it as 90"),
    ("pairs", "0x1F", "write 31 in decimal"),
])
def test_the_command_refuses_before_any_kernel_starts(tmp_path, capsys, no_kernel, key, text, message):
    rc = command.main(["run", "06_has_my_chain_mixed", "--profile", "smoke", "--root", str(tmp_path), "-p", key, text])
    assert rc == 1 and message in capsys.readouterr().err
    assert no_kernel == []


def test_a_payload_as_text_reaches_papermill_as_a_string_literal(tmp_path, capsys, no_kernel):
    rc = command.main(["run", "06_has_my_chain_mixed", "--profile", "smoke", "--root", str(tmp_path),
                       "-p", "device", json.dumps(PAYLOAD), "-p", "pairs", "12"])
    assert rc == 1 and "no kernel in this test" in capsys.readouterr().err
    [params] = no_kernel
    assert params["device"] == PAYLOAD and params["pairs"] == 12
    assert_plain(params)
    assert_written_as_literals(params)
