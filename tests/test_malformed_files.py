"""One sentence for every malformed file the runner reads (issue 34, item 7): a published provenance.json, result.json
or checks.csv, data/MANIFEST.json and notebooks/rules.json that are not what their writer writes each give an error
naming the file and the fix, never a JSONDecodeError, KeyError, TypeError or AttributeError traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from glauber_mlm import contract
from glauber_mlm.book import BookError, cache, publish, site
from glauber_mlm.book.execute import prepare_parameters
from glauber_mlm.build import data
from glauber_mlm.cli import main as cli_main
from test_book import EXAMPLE
from test_seal import NAME, make_page

PROVENANCES = {"truncated": "{", "empty object": "{}", "a list": "[]", "scale as text": None}


def malformed_provenance(results: Path, how: str) -> None:
    path = results / contract.PROVENANCE
    if PROVENANCES[how] is None:
        path.write_text(path.read_text().replace('"scale": 1.0', '"scale": "0.5"'))
    else:
        path.write_text(PROVENANCES[how])


@pytest.fixture
def world(tmp_path) -> tuple[Path, Path]:
    """(notebooks folder, root): one notebook and its sealed published page."""
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / f"{NAME}.py").write_text(EXAMPLE.replace('Run("99_example"', f'Run("{NAME}"'))
    make_page(tmp_path / "root" / "book" / "notebooks")
    return nbs, tmp_path / "root"


def refused_verify(nbs: Path, root: Path) -> bool:
    """`verify --only NAME` exits 1 and leaves no scratch folder in the temporary directory (a refused verify once
    left an empty glauber-mlm-verify-* folder in /tmp each time)."""
    import tempfile

    scratch_parent = root.parent / "tmp"
    scratch_parent.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(scratch_parent))
        status = cli_main(["verify", "--notebooks", str(nbs), "--root", str(root), "--only", NAME])
    return status == 1 and list(scratch_parent.iterdir()) == []


def one_sentence(capsys, *names: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


@pytest.mark.parametrize("how", PROVENANCES)
def test_a_malformed_provenance_is_named_with_its_fix(world, how, capsys):
    nbs, root = world
    results = root / "book" / "notebooks" / NAME
    malformed_provenance(results, how)
    with pytest.raises(ValueError, match=f"{results / 'provenance.json'}.*glauber-mlm book --only {NAME}"):
        contract.read_provenance(results)
    found = publish.problems(results.with_suffix(".ipynb"))
    assert len(found) == 1 and "provenance.json" in found[0] and f"glauber-mlm book --only {NAME}" in found[0]
    assert refused_verify(nbs, root)
    one_sentence(capsys, "provenance.json", f"glauber-mlm book --only {NAME}")
    assert cli_main(["book", "--no-execute", "--notebooks", str(nbs), "--root", str(root)]) == 1
    one_sentence(capsys, "provenance.json", "glauber-mlm book --only NAME")
    assert site.execution_rows(root)[0]["status"] == "incomplete"


@pytest.mark.parametrize("text", ["[]", '["confirmed"]', "{", '{"verdict": null}'])
def test_a_malformed_result_box_is_named_with_its_fix(world, text, capsys):
    nbs, root = world
    results = root / "book" / "notebooks" / NAME
    (results / "result.json").write_text(text)
    publish.seal(results.with_suffix(".ipynb"), results)  # sealed as it is: only the reader can tell
    with pytest.raises(ValueError, match=f"{results / 'result.json'} .*glauber-mlm book --only {NAME}"):
        contract.read_result(results)
    assert refused_verify(nbs, root)
    one_sentence(capsys, "result.json", f"glauber-mlm book --only {NAME}")
    assert site.execution_rows(root)[0]["verdict"] == "unreadable result.json"
    site.write_verdicts(root, nbs)
    assert f"not shown: {results / 'result.json'}" in (root / site.VERDICTS).read_text()


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00\x81", b"", b'check,outcome\n"a check,pass\n', b"a,b\n1,2\n3,4,5,6,7\n"])
def test_a_malformed_checks_table_is_named_with_its_fix(world, raw, capsys):
    nbs, root = world
    results = root / "book" / "notebooks" / NAME
    (results / "checks.csv").write_bytes(raw)
    assert refused_verify(nbs, root)
    one_sentence(capsys, "checks.csv is not a readable table", f"glauber-mlm book --only {NAME}")


# ---- data/MANIFEST.json ----------------------------------------------------------------------------------------------

@pytest.fixture
def model(tmp_path, monkeypatch) -> Path:
    """An embedded model folder data/models/m with one file, listed in data/MANIFEST.json."""
    monkeypatch.setattr(data, "HASH_CACHE", tmp_path / "cache" / "sha256.json")
    folder = tmp_path / "data" / "models" / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    entry = {"file": "models/m/config.json", "sha256": data.sha256_file(folder / "config.json"), "bytes": 2}
    (tmp_path / "data" / "MANIFEST.json").write_text(json.dumps({"products": [], "models": [entry]}))
    data.verify_model(folder)
    return folder


@pytest.mark.parametrize("manifest, said", [
    ("[]", "holds a JSON list"),
    ('{"models": null}', "its 'models' is None, not a list of files"),
    ('{"models": [{"sha256": "ab", "bytes": 2}]}', "entry 0 of 'models' has no valid file"),
    ('{"models": ["models/m/config.json"]}', "entry 0 of 'models' has no valid file, sha256, bytes"),
    ('{"products": [{"file": "passages.jsonl"}]}', "entry 0 of 'products' has no valid sha256"),
    ("{", "is not valid JSON"),
])
def test_a_malformed_manifest_is_named_with_its_fix(model, manifest, said):
    path = model.parent.parent / "MANIFEST.json"
    path.write_text(manifest)
    for check in (lambda: data.verify_model(model), lambda: data.verify_product(model / "config.json")):
        with pytest.raises(ValueError) as err:
            check()
        assert str(err.value).startswith(f"{path}") and said in str(err.value)
        assert "git checkout -- " in str(err.value) and "glauber-mlm build-data" in str(err.value)


# ---- notebooks/rules.json --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("record", ["{", "[]", f'{{"{NAME}": {{"date": "2026-12-01"}}}}', f'{{"{NAME}": [1]}}',
                                    f'{{"{NAME}": [{{"change": "no date"}}]}}'])
def test_a_malformed_rules_record_is_named_with_its_fix(world, tmp_path, monkeypatch, record, capsys):
    nbs, root = world
    rules = tmp_path / "rules.json"
    rules.write_text(record)
    monkeypatch.setattr(contract, "RULES", rules)
    src = nbs / f"{NAME}.py"
    with pytest.raises(BookError, match=f"{rules} .*git checkout -- {rules}"):
        cache.inputs(src, prepare_parameters(src, {"profile": "smoke"}), root / "book" / "notebooks")
    with pytest.raises(BookError, match=f"{rules} "):
        site.write_rules_record(root)
    assert cli_main(["book", "--profile", "smoke", "--notebooks", str(nbs), "--root", str(root)]) == 1
    one_sentence(capsys, str(rules), "git checkout --")
