"""The Hugging Face adapter: head-at-site conditionals equal the full model's, on tiny BERT and RoBERTa."""
import pytest
import torch

from glauber_mlm import load_mlm, log_conditionals
from glauber_mlm.build.data import refresh_model_checksums
from tiny_models import SPECIALS, save_tiny


@pytest.fixture(scope="module", params=["bert", "roberta"])
def tiny(request, tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp(request.param), request.param), device="cpu", dtype=torch.float32)


def full_model_reference(mlm, states, sites, tau):
    """softmax(full_model_logits[site] / τ) on the support, with the mask at the site and the frame added."""
    B = states.shape[0]
    ids = torch.cat([torch.full((B, 1), mlm.prefix), states, torch.full((B, 1), mlm.suffix)], 1)
    ids[torch.arange(B), sites + 1] = mlm.mask_id
    logits = mlm.model(input_ids=ids).logits[torch.arange(B), sites + 1] / tau
    return torch.log_softmax(logits.masked_fill(~mlm.support, float("-inf")), -1)


@pytest.mark.parametrize("tau", [0.5, 1.0, 3.0])
def test_site_conditionals_equal_full_model(tiny, tau):
    g = torch.Generator().manual_seed(0)
    support_ids = torch.nonzero(tiny.support).flatten()
    states = support_ids[torch.randint(support_ids.numel(), (16, 12), generator=g)]
    sites = torch.randint(12, (16,), generator=g)
    with torch.no_grad():
        ours = log_conditionals(tiny, states, sites, torch.full((16,), tau))
        ref = full_model_reference(tiny, states, sites, tau)
    assert torch.allclose(ours.exp(), ref.exp(), atol=1e-6)
    assert torch.allclose(ours.exp().sum(-1), torch.ones(16), atol=1e-5)


def test_support_excludes_special_and_unused(tiny):
    vocab = tiny.tokenizer.get_vocab()
    assert not tiny.support[[vocab[s] for s in SPECIALS]].any()
    assert tiny.support[vocab["cat"]]


def test_site_token_is_ignored(tiny):
    states = torch.full((2, 6), tiny.tokenizer.get_vocab()["cat"])
    states[1, 2] = tiny.tokenizer.get_vocab()["dog"]
    logits = tiny.logits(states, torch.tensor([2, 2]), dtype=torch.float32)
    assert torch.allclose(logits[0], logits[1])


def test_encode_decode_roundtrip(tiny):
    states, kept = tiny.encode(["the cat sat on the mat", "the dog", "a big red house and a tree"], 4)
    assert kept == [0, 2] and states.shape == (2, 4)
    assert tiny.decode(states)[0] == "the cat sat on"


def test_bf16_default_is_close_to_fp32(tmp_path):
    mlm = load_mlm(save_tiny(tmp_path, "bert"), device="cpu", dtype=torch.bfloat16)
    states = torch.full((4, 8), 10)
    sites = torch.arange(4)
    with torch.no_grad():
        lo = torch.softmax(mlm.logits(states, sites), -1)
        hi = torch.softmax(mlm.logits(states, sites, dtype=torch.float32), -1)
    assert lo.dtype == torch.float32
    assert 0.5 * (lo - hi).abs().sum(-1).max() < 0.05


def test_an_embedded_model_loads_by_its_folder_name(tmp_path, monkeypatch):
    from glauber_mlm.models import hf

    save_tiny(tmp_path / "models" / "tiny-embedded", "bert")
    (tmp_path / "MANIFEST.json").write_text('{"models": []}')
    refresh_model_checksums(tmp_path)  # an embedded model is checked against its manifest (as train-model writes it)
    monkeypatch.setattr(hf, "EMBEDDED_MODELS", tmp_path / "models")
    mlm = load_mlm("tiny-embedded", device="cpu", dtype=torch.float32)
    assert mlm.name == "tiny-embedded" and mlm.model.config.model_type == "bert"
    with pytest.raises(OSError, match="cannot resolve model 'tiny-absent'"):
        load_mlm("tiny-absent", device="cpu")
