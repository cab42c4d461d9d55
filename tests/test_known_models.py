"""Issue 43, item 3: a model is known only by the book's own names, and a model whose conditionals are near uniform
is named as such.

`known_model` knows the embedded default (None), an embedded model by its bare name and the models a page's
profiles name; any path (absolute or relative, even to an embedded model's folder) or other hub name is the user's.
`sharpness` measures a model's conditionals on given passages; a tiny random-weight BERT is near uniform by the
rule stated in `glauber_mlm.sharpness`, the same BERT trained for a few steps on its passages is not.
"""
from __future__ import annotations

import json

import pytest
import torch

from glauber_mlm.models.hf import EMBEDDED_MODELS, load_mlm
from glauber_mlm.pages.run import known_model
from glauber_mlm.sharpness import CHANCE_FACTOR, ENTROPY_MARGIN, sharpness
from tiny_models import WORDS, save_tiny

SENTENCES = ["the cat sat on the mat", "the dog ran fast", "a big red house", "the sun and the moon"]


@pytest.mark.parametrize("model", [str(EMBEDDED_MODELS / "minilm6-mlm"), "/abs/path", "data/models/minilm6-mlm",
                                   "./minilm6-mlm", "bert-large-cased", "org/minilm6-mlm", "..", "."])
def test_a_path_or_a_hub_name_of_the_users_is_not_known(model):
    assert not known_model(model, {"roberta-base"})


@pytest.mark.parametrize("model", [None, "minilm6-mlm", "minilm-mlm", "roberta-base"])
def test_the_books_own_names_are_known(model):
    assert known_model(model, {"roberta-base"})


def test_a_run_on_a_model_by_absolute_path_says_checks_on_model(tmp_path):
    from test_scratch_runs import _conclude

    result = _conclude(tmp_path, "cpu", model=str(tmp_path))
    assert result["verdict"] == f"checks on {tmp_path}: 1 pass, 1 fail" and result["unknown_models"] == [str(tmp_path)]


def _states(mlm) -> torch.Tensor:
    states, kept = mlm.encode(SENTENCES, 4)
    assert len(kept) == len(SENTENCES)
    return states


def _train(mlm, states: torch.Tensor, steps: int = 150) -> None:
    """Fit the tiny model's conditionals to `states` (every site masked in turn): a peaked, trained model."""
    model = mlm.model
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    n = states.shape[1]
    rows, sites = states.repeat_interleave(n, 0), torch.arange(n).repeat(len(states))
    for _ in range(steps):
        with torch.enable_grad():
            ids = torch.cat([torch.full((len(rows), 1), mlm.prefix), rows, torch.full((len(rows), 1), mlm.suffix)], 1)
            target = ids[torch.arange(len(rows)), sites + 1].clone()
            ids[torch.arange(len(rows)), sites + 1] = mlm.mask_id
            logits = model(input_ids=ids).logits[torch.arange(len(rows)), sites + 1]
            loss = torch.nn.functional.cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    mlm.refresh_weights()


def test_a_random_weight_model_is_near_uniform_and_a_trained_one_is_not(tmp_path):
    mlm = load_mlm(save_tiny(tmp_path / "tiny", seed=0), device="cpu", dtype=torch.float32)
    states = _states(mlm)
    support = int(mlm.support.sum())
    assert support == len(WORDS)
    random = sharpness(mlm, states)
    assert random.sites == states.numel() and random.log_support == pytest.approx(torch.log(torch.tensor(support)).item())
    assert random.chance == pytest.approx(1 / support)
    assert random.mean_entropy > random.log_support - ENTROPY_MARGIN and random.near_uniform
    assert "near uniform" in random.warning("tiny") and f"{ENTROPY_MARGIN:g} nats" in random.warning("tiny")

    _train(mlm, states)
    trained = sharpness(mlm, states)
    assert trained.mean_entropy < random.log_support - ENTROPY_MARGIN
    assert trained.top1_accuracy > CHANCE_FACTOR * trained.chance and not trained.near_uniform
    assert trained.warning("tiny") == ""


def test_a_page_on_a_near_uniform_model_warns_in_its_output_and_its_box(tmp_path, monkeypatch, capsys):
    from glauber_mlm.pages import run as run_module
    from test_verdict import check

    folder = save_tiny(tmp_path / "tiny", seed=0)
    import random

    texts = [" ".join(random.Random(k).choices(WORDS, k=20)) for k in range(40)]
    monkeypatch.setattr(run_module, "book_passages", lambda: texts)
    boxes = []
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display=True: boxes.append(value.data))
    profiles = {"cpu": dict(model=None, seed=0)}
    run = run_module.Run("99_test", "cpu", profiles, tmp_path / "out", model=str(folder), dtype="float32")
    run.load_mlm(run["model"])
    assert "near uniform" in capsys.readouterr().out
    run.conclude("a claim", {"x": "1"}, [check(True, name="x > 0")])
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["near_uniform"] and "near uniform" in result["near_uniform"][0]
    assert f"**Warning:** {result['near_uniform'][0]}" in boxes[-1]
