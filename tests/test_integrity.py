"""Nothing silently wrong (issue 26, items 1–3 and load_mlm's arguments): embedded model files checked against the
manifest and keyed into the book's cache, checkpoints keyed on every weight and checksummed, arguments refused."""
import json
import os
import shutil
import textwrap
import time
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from glauber_mlm import exact, glauber, load_mlm
from glauber_mlm.samplers import checkpoint
from glauber_mlm.build import data
from glauber_mlm.models import hf
from glauber_mlm.book import cache
from tiny_models import save_tiny

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = REPO / "data" / "models" / "minilm-mlm"
needs_model = pytest.mark.skipif(not (EMBEDDED / "model.safetensors").is_file(), reason="embedded model not built")


def flip_byte(path: Path, offset: int | None = None, keep_mtime: bool = False) -> None:
    """XOR one byte of `path` (its middle by default) with 0x01; optionally put its mtime back as it was."""
    st = path.stat()
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 if offset is None else offset] ^= 0x01
    path.write_bytes(bytes(raw))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def hash_cache(tmp_path, monkeypatch) -> Path:
    """A private sha256 cache that remembers files however recently written (RACY_NS = 0)."""
    path = tmp_path / "cache" / "sha256.json"
    monkeypatch.setattr(data, "HASH_CACHE", path)
    monkeypatch.setattr(data, "RACY_NS", 0)
    return path


@pytest.fixture
def embedded(tmp_path, monkeypatch, hash_cache) -> Path:
    """A copy of data/MANIFEST.json and the embedded default model, installed as the embedded models."""
    root = tmp_path / "data"
    shutil.copytree(EMBEDDED, root / "models" / EMBEDDED.name)
    shutil.copy(REPO / "data" / "MANIFEST.json", root / "MANIFEST.json")
    monkeypatch.setattr(hf, "EMBEDDED_MODELS", root / "models")
    monkeypatch.setattr(hf, "DEFAULT_MODEL", root / "models" / EMBEDDED.name)
    return root / "models" / EMBEDDED.name


# ---- 1. embedded model files verified ----------------------------------------------------------------------------

@needs_model
def test_a_flipped_byte_in_the_embedded_weights_is_refused_before_loading(embedded, monkeypatch):
    data.verify_model(embedded)  # the intact copy passes
    flip_byte(embedded / "model.safetensors")
    from transformers import AutoConfig

    def never(*args, **kwargs):
        raise AssertionError("the model was read before its files were checked")

    monkeypatch.setattr(AutoConfig, "from_pretrained", never)
    for ref in (None, EMBEDDED.name, str(embedded)):  # the default, by name, by folder
        with pytest.raises(ValueError, match=r"model\.safetensors has sha256 [0-9a-f]{64} where 13bc1d95") as err:
            load_mlm(ref, device="cpu")
        assert f"git checkout -- {embedded.resolve()}" in str(err.value)


@needs_model
def test_a_change_that_keeps_size_and_mtime_is_still_caught(embedded, hash_cache):
    data.verify_model(embedded)
    cached = json.loads(hash_cache.read_text())
    assert str((embedded / "model.safetensors").resolve()) in cached  # the hash is remembered …
    time.sleep(0.05)  # … and a rewrite that restores the mtime still moves the ctime past the clock's tick
    flip_byte(embedded / "tokenizer.json", keep_mtime=True)
    with pytest.raises(ValueError, match=r"tokenizer\.json has sha256"):
        data.verify_model(embedded)


@needs_model
def test_a_verified_model_is_not_hashed_again(embedded, monkeypatch):
    data.verify_model(embedded)
    hashed = []
    monkeypatch.setattr(data, "sha256_file", lambda path: hashed.append(path))
    data.verify_model(embedded)
    assert hashed == []


@needs_model
@pytest.mark.parametrize("change, problem", [
    (lambda f: (f / "special_tokens_map.json").write_text("{}"), "special_tokens_map.json is not listed"),
    (lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json is missing"),
    (lambda f: (f / "config.json").write_text((f / "config.json").read_text() + " "), "config.json has 752 bytes"),
])
def test_extra_missing_or_resized_files_are_refused(embedded, change, problem):
    change(embedded)
    with pytest.raises(ValueError, match=problem):
        load_mlm(device="cpu")


@needs_model
def test_verify_product_finds_the_manifest_of_a_model_file(embedded):
    data.verify_product(EMBEDDED / "config.json")  # data/MANIFEST.json, two folders up
    flip_byte(embedded / "config.json", offset=10)
    with pytest.raises(ValueError, match="checksum mismatch for .*config.json"):
        data.verify_product(embedded / "config.json")


NOTEBOOK = textwrap.dedent('''\
    # %% tags=["parameters"]
    profile = "cpu"
    model = None
    output_dir = None

    # %%
    PROFILES = {"cpu": dict(model=None), "hub": dict(model="bert-base-uncased")}
    ''')


@needs_model
def test_a_changed_embedded_model_changes_the_cache_key_of_its_pages(embedded, tmp_path):
    src = tmp_path / "91_uses_model.py"
    src.write_text(NOTEBOOK)
    before = {p: cache.inputs(src, {"profile": p}, tmp_path) for p in ("cpu", "hub")}
    flip_byte(embedded / "model.safetensors")
    after = {p: cache.inputs(src, {"profile": p}, tmp_path) for p in ("cpu", "hub")}
    changed = {p: [k for k in before[p] if before[p][k] != after[p][k]] for p in before}
    assert changed == {"cpu": ["models"], "hub": []}  # the profile's embedded model (None), not a hub model
    assert cache.inputs(src, {"profile": "cpu", "model": EMBEDDED.name}, tmp_path)["models"] == after["cpu"]["models"]


# ---- 2. a checkpoint is keyed on the whole model -----------------------------------------------------------------

def test_module_identity_sees_every_tensor_and_is_cached():
    net = torch.nn.Sequential(*(torch.nn.Linear(3, 3) for _ in range(4)))
    first = checkpoint.module_identity(net)
    assert checkpoint.module_identity(net) is first  # unchanged: the cached digest, not a new hash
    kept = net[1].weight.detach().clone()
    with torch.no_grad():
        net[1].weight[0, 0] = 5.0  # a middle tensor: neither the first two nor the last two
    moved = checkpoint.module_identity(net)
    assert moved != first
    with torch.no_grad():
        net[1].weight.copy_(kept)
    assert checkpoint.module_identity(net) == first  # a hash of the values, not of the history
    net[2].bias.data.zero_()  # `.data` bypasses the version counter …
    assert checkpoint.module_identity(net) == first
    checkpoint.forget_identity(net)  # … until the cache is dropped (MLMAdapter.refresh_weights does)
    assert checkpoint.module_identity(net) not in (first, moved)


@needs_model
def test_a_checkpoint_of_the_model_before_an_in_place_change_is_not_resumed(tmp_path):
    mlm = load_mlm(device="cpu", dtype=torch.float32)
    init = torch.nonzero(mlm.support).flatten()[1000:1012].view(2, 6)
    path = tmp_path / "run.pt"
    old = glauber(mlm, init, 6, temperature=1.0, seed=0, checkpoint=path)
    with torch.no_grad():
        mlm.model.get_parameter("bert.encoder.layer.1.output.dense.weight").zero_()
    with pytest.warns(UserWarning, match=r"run\.pt was written by other inputs"):
        new = glauber(mlm, init, 6, temperature=1.0, seed=0, checkpoint=path)
    fresh = glauber(mlm, init, 6, temperature=1.0, seed=0)
    assert torch.equal(new.states, fresh.states) and not torch.equal(new.states, old.states)
    assert (tmp_path / "run.pt.other-inputs").is_file()


# ---- 3. a checkpoint's data is checksummed -------------------------------------------------------------------------

def potts_run(path=None):
    model = exact.potts_chain(10, q=3, coupling=0.8)
    return glauber(model, torch.zeros(4, 10, dtype=torch.long), 200, temperature=1.0, seed=3, record_every=10,
                   checkpoint=path, checkpoint_every=20)


def data_offset(path: Path, content: bytes) -> int:
    """Where in the zip file `path` the stored (uncompressed) record whose bytes are `content` begins."""
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if z.read(info) == content:
                with open(path, "rb") as f:  # the data follow a 30-byte local header, the name and the extra field
                    f.seek(info.header_offset + 26)
                    name_len, extra_len = (int.from_bytes(f.read(2), "little") for _ in range(2))
                return info.header_offset + 30 + name_len + extra_len
    raise AssertionError("no such record")


def test_a_flipped_bit_in_the_final_state_is_set_aside_and_the_run_restarts(tmp_path):
    path = tmp_path / "run.pt"
    ref = potts_run(path)
    saved = torch.load(path, weights_only=True)
    flip_byte(path, data_offset(path, saved["x"].numpy().tobytes()) + 8)  # the second chain's first token
    flipped = path.read_bytes()
    damaged = torch.load(path, weights_only=True)  # torch itself reads it without complaint …
    assert not torch.equal(damaged["x"], saved["x"]) and torch.equal(damaged["states"], saved["states"])
    with pytest.warns(UserWarning, match=r"run\.pt is unreadable/truncated or damaged .*fail their checksum"):
        out = potts_run(path)  # … the checksum does not
    assert torch.equal(out.final, ref.final) and torch.equal(out.final, out.states[-1])
    assert (tmp_path / "run.pt.corrupt").read_bytes() == flipped  # set aside, never deleted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(potts_run(path).final, ref.final)  # the new checkpoint verifies


def test_a_checkpoint_without_a_checksum_is_set_aside(tmp_path):
    path = tmp_path / "run.pt"
    ref = potts_run(path)
    state = torch.load(path, weights_only=True)
    del state["checksum"]
    torch.save(state, path)
    with pytest.warns(UserWarning, match="carries no checksum"):
        assert torch.equal(potts_run(path).final, ref.final)


# ---- load_mlm's arguments (item 9) ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    return save_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("name, dtype", [("bfloat16", torch.bfloat16), ("float32", torch.float32)])
def test_dtype_by_name_as_the_cli_writes_it(tiny_folder, name, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        assert load_mlm(tiny_folder, device="cpu", dtype=name).dtype == dtype


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dtype=torch.int64), TypeError, "dtype must be a forward dtype"),
    (dict(dtype="fp16"), TypeError, "dtype must be a forward dtype"),
    (dict(attn_implementation="bogus"), ValueError, "attn_implementation must be one of 'sdpa', 'eager'"),
    (dict(device="meta"), ValueError, r"device 'meta' cannot hold .* pass device='cpu'"),
    (dict(device="gpu"), ValueError, r"device 'gpu' is not a device name: pass device='cpu'"),
])
def test_bad_arguments_are_refused_before_the_model_is_read(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        load_mlm(tmp_path / "absent", **kwargs)  # the folder is never looked at


def test_logits_refuse_sites_outside_the_state(tiny_folder):
    mlm = load_mlm(tiny_folder, device="cpu", dtype=torch.float32)
    states = torch.nonzero(mlm.support).flatten()[:5].repeat(2, 1)
    assert mlm.logits(states, torch.tensor([0, 4])).shape == (2, mlm.vocab_size)
    for bad in (-1, 5):
        with pytest.raises(ValueError, match=r"sites must lie in \[0, 5\)"):
            mlm.logits(states, torch.tensor([0, bad]))
