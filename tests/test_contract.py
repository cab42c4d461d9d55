"""The runner–notebook contract (`glauber_mlm.contract`): one place for the kernel's environment, the forward dtype,
the provenance and which notebook reads which; the provenance records the dtype the models run in."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import torch

from glauber_mlm import contract
from glauber_mlm.models import hf
from glauber_mlm.book import BookError, NOTEBOOKS, resolve_parameters
from glauber_mlm.pages.run import Run
from tiny_models import save_tiny

SRC = Path(contract.__file__).parent
PROFILES = {"cpu": dict(model=None, seed=0)}


def test_forward_dtype_is_the_given_one_else_the_devices_native_one(monkeypatch):
    cpu = torch.device("cpu")
    for native, default in ((True, torch.bfloat16), (False, torch.float32)):
        monkeypatch.setattr(hf, "fast_bf16", lambda device, native=native: native)
        assert hf.forward_dtype(cpu) == default
        assert hf.forward_dtype(cpu, "float32") == torch.float32 and hf.forward_dtype(cpu, "bfloat16") == torch.bfloat16
    monkeypatch.setenv("GLAUBER_MLM_FORWARD_DTYPE", "bfloat16")  # no longer smuggled through the environment
    assert hf.forward_dtype(cpu) == torch.float32
    with pytest.raises(TypeError, match="forward dtype"):
        hf.forward_dtype(cpu, "float64")


def test_provenance_records_the_dtype_of_the_loaded_model_after_a_fallback(tmp_path, monkeypatch):
    folder = save_tiny(tmp_path / "bert")
    run = Run("91_x", "cpu", PROFILES, tmp_path / "out", dtype="bfloat16")
    assert run.dtype == torch.bfloat16 and run.forward_dtype() == "bfloat16"  # before a model is loaded: as asked
    # a family that cannot run in bf16 falls back to fp32 when loaded (`hf._working_dtype`)
    monkeypatch.setattr(hf, "_working_dtype", lambda mlm, dtype: torch.float32)
    mlm = run.load_mlm(str(folder))
    assert mlm.dtype == torch.float32
    prov = run.finish()
    assert prov["dtype"] == "bfloat16" and prov["forward_dtype"] == "float32"
    assert json.loads((tmp_path / "out" / contract.PROVENANCE).read_text())["forward_dtype"] == "float32"
    assert "float32 forward" in run.build()
    monkeypatch.undo()
    run.load_mlm(str(folder.rename(tmp_path / "other")))  # a second model that keeps bf16: both are named
    assert run.forward_dtype() == f"float32 ({folder}), bfloat16 ({tmp_path / 'other'})"


def test_a_bad_dtype_is_refused_by_the_run_and_before_a_kernel_starts():
    with pytest.raises(ValueError, match="'float32', 'bfloat16'"):
        Run("91_x", "cpu", PROFILES, dtype="float16")
    src = NOTEBOOKS / "00_exact_models.py"
    with pytest.raises(BookError, match="00_exact_models: dtype must be one of 'float32', 'bfloat16'"):
        resolve_parameters(src, {"profile": "smoke", "dtype": "fp32"})
    assert resolve_parameters(src, {"profile": "smoke", "dtype": "float32"})["dtype"] == "float32"


def test_write_provenance_refuses_a_record_without_a_required_key(tmp_path):
    info = {**{key: "-" for key in contract.REQUIRED}, "scale": 1.0, "parameters": {}, "versions": {}, "wall_time_s": 1.0}
    assert contract.read_provenance(contract.write_provenance(tmp_path, info).parent) == info
    del info["machine"]
    with pytest.raises(ValueError, match="provenance lacks machine"):
        contract.write_provenance(tmp_path / "b", info)


def _reads_in_notebooks() -> dict[str, dict[str, set[str]]]:
    """Every `run.upstream_table("NOTEBOOK", "TABLE")` call in notebooks/*.py, by reader."""
    reads: dict[str, dict[str, set[str]]] = {}
    for src in sorted(NOTEBOOKS.glob("*.py")):
        for up, table in re.findall(r'upstream_table\(\s*"([^"]+)",\s*"([^"]+)"', src.read_text()):
            reads.setdefault(src.stem, {}).setdefault(up, set()).add(table)
    return reads


def test_contract_reads_are_exactly_the_notebooks_upstream_table_calls():
    declared = {reader: {up: set(tables) for up, tables in ups.items()} for reader, ups in contract.READS.items()}
    assert _reads_in_notebooks() == declared


def test_an_undeclared_read_is_refused(tmp_path):
    run = Run("91_x", "cpu", PROFILES, tmp_path / "out")
    with pytest.raises(ValueError, match="contract.READS does not declare"):
        run.upstream_table("02_high_temperature_mixing", "phase_diagram")


def test_the_environment_is_read_in_the_contract_and_the_data_modules_only():
    """The kernel's environment has one reader (`contract`); beside it only the data's locations are read from it."""
    readers = set()
    for path in SRC.glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Attribute) and node.attr == "environ" for node in ast.walk(tree)):
            readers.add(path.name)
    assert readers <= {"contract.py", "passages.py", "data.py"}, readers
