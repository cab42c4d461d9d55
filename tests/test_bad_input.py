"""Every documented bad input fails early with a message that names the problem and the fix."""
import pytest
import torch

import glauber_mlm.models.hf as hf
from glauber_mlm import Rectangles, coupling_times, exact, glauber, load_mlm, rectangle_statistic
from tiny_models import save_tiny

POTTS = exact.potts_chain(4, q=3)
INIT = torch.zeros(2, 4, dtype=torch.long)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_temperature(tau):
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        glauber(POTTS, INIT, steps=5, temperature=tau)
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        coupling_times(POTTS, INIT, INIT + 1, budget=5, temperature=tau)


def test_empty_batch():
    with pytest.raises(ValueError, match="empty batch"):
        glauber(POTTS, torch.zeros(0, 4, dtype=torch.long), steps=5)


def test_tokens_outside_vocabulary():
    with pytest.raises(ValueError, match="token ids must lie in"):
        glauber(POTTS, INIT + 7, steps=5)


def test_sequence_longer_than_model(tmp_path):
    mlm = load_mlm(save_tiny(tmp_path), device="cpu")
    with pytest.raises(ValueError, match="longer than the model takes"):
        glauber(mlm, torch.full((1, 39), 10), steps=1)
    with pytest.raises(ValueError, match="length must lie in"):
        mlm.encode(["the cat"], 100)


def rect(**change):
    spec = dict(contexts=torch.zeros(1, 4, dtype=torch.long), i=[0], j=[1], a=[0], a2=[1], b=[0], b2=[2])
    spec.update(change)
    return Rectangles(**spec)


def test_rectangle_same_site():
    with pytest.raises(ValueError, match="two different sites"):
        rectangle_statistic(POTTS, rect(j=[0]))


def test_rectangle_token_outside_vocabulary():
    with pytest.raises(ValueError, match="outside the model's support"):
        rectangle_statistic(POTTS, rect(b2=[9]))


def test_rectangle_empty_batch():
    with pytest.raises(ValueError, match="empty batch"):
        rectangle_statistic(POTTS, rect(contexts=torch.zeros(0, 4, dtype=torch.long), i=[], j=[], a=[], a2=[], b=[], b2=[]))


def test_model_without_mlm_head(tmp_path):
    with pytest.raises(ValueError, match="no masked-LM head"):
        load_mlm(save_tiny(tmp_path, head=False))


def test_unresolvable_name_offline():
    with pytest.raises(OSError, match="pass a local folder"):
        load_mlm("no-such-org/no-such-mlm")


def test_pickle_weights_refused_unless_allowed(tmp_path):
    folder = save_tiny(tmp_path)
    state = load_mlm(folder, device="cpu").model.state_dict()
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pickle format"):
        load_mlm(folder)
    assert load_mlm(folder, allow_pickle=True, device="cpu").vocab_size == state["cls.predictions.decoder.weight"].shape[0]


def test_missing_or_corrupt_default_names_the_rebuild_command(tmp_path, monkeypatch):
    monkeypatch.setattr(hf, "DEFAULT_MODEL", tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="glauber-mlm train-model"):
        load_mlm()
    folder = save_tiny(tmp_path / "corrupt")
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setattr(hf, "DEFAULT_MODEL", folder)
    with pytest.raises(OSError, match="glauber-mlm train-model"):
        load_mlm()
