"""Issue 10 §2–3: wrong numbers and exhausted memory are refused up front, naming the cause and the fix."""
import json
import warnings

import pytest
import torch

import glauber_mlm.validate as validate
import glauber_mlm.models.hf as hf
from glauber_mlm import (Rectangles, coupling_times, exact, glauber, influence_matrix, load_mlm, log_conditionals,
                         maximal_coupling, random_rectangles, rectangle_test)
from glauber_mlm.rng import sample_categorical
from tiny_models import drop_weights, save_family, save_tiny

POTTS = exact.potts_chain(4, q=3)
INIT = torch.zeros(2, 4, dtype=torch.long)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp("bert")), device="cpu", dtype=torch.float32)


# ------------------------------------------------------------------ probability rows
def test_nan_or_zero_probabilities_are_refused_not_drawn_as_the_last_id():
    u = torch.full((2,), 0.5, dtype=torch.float64)
    with pytest.raises(ValueError, match="non-finite"):
        sample_categorical(torch.tensor([[0.5, float("nan"), 0.5], [0.2, 0.3, 0.5]]), u)
    with pytest.raises(ValueError, match="sum to zero"):
        sample_categorical(torch.tensor([[0.0, 0.0, 0.0], [0.2, 0.3, 0.5]]), u)
    with pytest.raises(ValueError, match="non-finite"):
        maximal_coupling(torch.tensor([[float("inf"), 1.0]]), torch.tensor([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="sum to zero"):
        maximal_coupling(torch.tensor([[0.5, 0.5]]), torch.tensor([[0.0, 0.0]]))


def test_a_temperature_so_small_that_float32_would_overflow_gives_the_greedy_law():
    """ℓ/τ at τ = 1e-44 overflows float32, not float64, where the chain's law is computed: the law is the argmax."""
    logits = POTTS.logits(INIT, torch.zeros(INIT.shape[0], dtype=torch.long))
    greedy = glauber(POTTS, INIT, steps=1, temperature=1e-44, scan="systematic")
    assert torch.equal(greedy.final[:, 0], logits.argmax(-1))
    pair = coupling_times(POTTS, INIT, INIT + 1, budget=1, temperature=1e-44, scan="systematic")
    assert pair.forward_rows == 2 * INIT.shape[0]


class NaNModel:
    vocab_size, max_length, device = 3, 4, torch.device("cpu")
    support = torch.ones(3, dtype=torch.bool)

    def logits(self, states, sites, dtype=None):
        return torch.full((states.shape[0], 3), float("nan"))


def test_nan_logits_and_empty_support_are_refused():
    with pytest.raises(ValueError, match="NaN logits from the model"):
        glauber(NaNModel(), INIT, steps=1)
    empty = NaNModel()
    empty.support = torch.zeros(3, dtype=torch.bool)
    with pytest.raises(ValueError, match="support is empty"):
        glauber(empty, INIT, steps=1)


# ------------------------------------------------------------------ load_mlm
def test_checkpoint_without_its_mlm_head_weights_is_refused(tmp_path):
    with pytest.raises(ValueError, match="holds no weights for .*cls.predictions"):
        load_mlm(drop_weights(save_tiny(tmp_path / "a"), "cls."), device="cpu")
    with pytest.raises(ValueError, match="holds no weights for .*encoder.layer.1"):
        load_mlm(drop_weights(save_tiny(tmp_path / "b"), "bert.encoder.layer.1."), device="cpu")


def test_headless_checkpoint_whose_config_lacks_architectures_is_refused(tmp_path):
    folder = save_tiny(tmp_path, head=False)
    config = json.loads((folder / "config.json").read_text())
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="without the MLM head"):
        load_mlm(folder, device="cpu")


def test_folder_without_tokenizer_is_refused(tmp_path):
    folder = save_tiny(tmp_path)
    for name in ("vocab.txt", "tokenizer.json"):
        (folder / name).unlink()
    with pytest.raises(FileNotFoundError, match="holds no tokenizer"):
        load_mlm(folder, device="cpu")


def test_tokenizer_of_another_vocabulary_size_is_refused(tmp_path):
    folder = save_tiny(tmp_path)
    (folder / "tokenizer.json").unlink()
    (folder / "vocab.txt").write_text((folder / "vocab.txt").read_text() + "".join(f"extra{k}\n" for k in range(5)))
    with pytest.raises(ValueError, match="tokenizer has 32 tokens but the model's vocabulary has 27"):
        load_mlm(folder, device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_asked_for_where_none_exists_is_refused_before_loading(tmp_path):
    folder = save_tiny(tmp_path)
    (folder / "model.safetensors").write_bytes(b"never read")  # refused before the weights are opened
    with pytest.raises(ValueError, match="0 CUDA device"):
        load_mlm(folder, device="cuda")


@pytest.mark.parametrize("family, expected", [("bert", 38), ("mpnet", 36), ("data2vec-text", 37), ("esm", 37),
                                              ("longformer", 37)])
def test_max_length_follows_the_model_s_position_ids(tmp_path, family, expected):
    """Families numbering positions from padding_idx + 1 lose those slots; MPNet's padding_idx is 1 whatever the config."""
    mlm = load_mlm(save_family(tmp_path, family), device="cpu", dtype=torch.float32)
    assert mlm.max_length == expected
    word = torch.nonzero(mlm.support).flatten()[0]
    glauber(mlm, word.repeat(1, mlm.max_length), steps=2)  # the longest state runs
    with pytest.raises(ValueError, match="longer than the model takes"):
        glauber(mlm, word.repeat(1, mlm.max_length + 1), steps=1)


def test_deberta_v1_in_bf16_falls_back_to_fp32_with_the_reason(tmp_path):
    with pytest.warns(UserWarning, match=r"cannot run in torch.bfloat16 \(value cannot be converted"):
        mlm = load_mlm(save_family(tmp_path, "deberta"), device="cpu", dtype=torch.bfloat16)
    assert mlm.dtype == torch.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_mlm(save_family(tmp_path / "v2", "deberta-v2"), device="cpu", dtype=torch.bfloat16).dtype \
            == torch.bfloat16


# ------------------------------------------------------------------ states with frame or special tokens
@pytest.mark.parametrize("special", ["frame", "[MASK]", "[PAD]"])
def test_states_with_frame_or_special_tokens_are_refused(tiny, special):
    if special == "frame":
        states = tiny.tokenizer(["the cat sat on the mat"], return_tensors="pt")["input_ids"]  # [CLS] … [SEP]
    else:
        states, _ = tiny.encode(["the cat sat on the mat"], 5)
        states[0, 2] = tiny.tokenizer.convert_tokens_to_ids(special)
    with pytest.raises(ValueError, match=r"outside the model's support.*add_special_tokens=False"):
        glauber(tiny, states, steps=1)
    with pytest.raises(ValueError, match="outside the model's support"):
        coupling_times(tiny, states, states, budget=1)


# ------------------------------------------------------------------ argument types and ranges
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(steps=5.0), TypeError, "steps must be an integer"),
    (dict(steps=True), TypeError, "steps must be an integer"),
    (dict(steps=-1), ValueError, "steps must be an integer ≥ 0"),
    (dict(record_every=0), ValueError, "record_every must be an integer ≥ 1"),
    (dict(record_every=2.5), TypeError, "record_every must be an integer"),
    (dict(seed=0.5), TypeError, "seed must be an integer"),
    (dict(seed=torch.tensor([0.5, 1.5])), TypeError, "seed must be an int or one integer per chain"),
    (dict(seed=[True, False]), TypeError, "seed must be an int or one integer per chain"),
    (dict(speculate=2.0), TypeError, "speculate must be an integer"),
    (dict(temperature=True), TypeError, "temperature must be a positive float"),
])
def test_glauber_argument_types_and_ranges(kwargs, error, message):
    args = dict(steps=3) | kwargs
    with pytest.raises(error, match=message):
        glauber(POTTS, INIT, **args)


def test_coupling_budget_and_sites_are_checked():
    with pytest.raises(TypeError, match="budget must be an integer"):
        coupling_times(POTTS, INIT, INIT + 1, budget=True)
    with pytest.raises(ValueError, match=r"sites must lie in \[0, 4\)"):
        log_conditionals(POTTS, INIT, torch.tensor([0, 4]), torch.ones(2))
    with pytest.raises(ValueError, match=r"sites must lie in \[0, 4\)"):
        log_conditionals(POTTS, INIT, torch.tensor([-1, 0]), torch.ones(2))
    with pytest.raises(TypeError, match="sites must hold integer positions"):
        log_conditionals(POTTS, INIT, torch.tensor([0.7, 1.0]), torch.ones(2))


def test_rectangle_and_influence_arguments_are_checked(tiny):
    rect = dict(contexts=torch.zeros(1, 4, dtype=torch.long), i=[0], j=[1], a=[0], a2=[1], b=[0], b2=[2])
    with pytest.raises(TypeError, match="field i must hold integers"):
        rectangle_test(POTTS, Rectangles(**rect | dict(i=[0.7])))
    with pytest.raises(ValueError, match=r"i must lie in \[0, 4\)"):
        rectangle_test(POTTS, Rectangles(**rect | dict(i=[-1])))
    with pytest.raises(ValueError, match="chunk must be an integer ≥ 1"):
        rectangle_test(POTTS, Rectangles(**rect), chunk=0)
    states, _ = tiny.encode(["the cat sat on the mat"], 5)
    supported = int(tiny.support.sum())
    with pytest.raises(ValueError, match=rf"top_k must be an integer in \[2, {supported}\]"):
        random_rectangles(tiny, states, 1, top_k=supported + 1)
    with pytest.raises(ValueError, match=rf"top_k must be an integer in \[1, {supported - 1}\]"):
        influence_matrix(tiny, states, [1.0], top_k=tiny.vocab_size)
    with pytest.raises(TypeError, match="replacements must be an integer"):
        influence_matrix(POTTS, INIT[:1], [1.0], replacements=1.5, top_k=2)


# ------------------------------------------------------------------ memory
def test_a_run_that_cannot_fit_in_memory_is_refused_before_it_starts():
    """10^4 chains × 10^7 recorded steps would keep ~3 TB of states: refused at once, naming record_every."""
    with pytest.raises(MemoryError, match="record_every"):
        glauber(POTTS, torch.zeros(10_000, 4, dtype=torch.long), steps=10**7)


def test_memory_estimate_against_available_memory(monkeypatch):
    monkeypatch.setattr(validate, "available_memory", lambda device: 200_000)
    init = torch.zeros(100, 4, dtype=torch.long)
    with pytest.raises(MemoryError, match=r"keep fewer states with record_every > 1"):
        glauber(POTTS, init, steps=100)  # 101 recorded states of 100 × 4 int64: 323 kB
    assert glauber(POTTS, init, steps=100, record_every=50).states.shape == (3, 100, 4)
    with pytest.raises(MemoryError, match="split the pairs into several calls"):
        coupling_times(POTTS, torch.zeros(1000, 4, dtype=torch.long), torch.ones(1000, 4, dtype=torch.long), budget=5)


def test_large_batches_go_through_the_model_in_chunks(tiny, monkeypatch):
    states = torch.nonzero(tiny.support).flatten()[torch.randint(20, (40, 8), generator=torch.Generator().manual_seed(0))]
    sites = torch.arange(40) % 8
    whole = tiny.logits(states, sites)
    calls = []
    assert tiny.lean  # a BERT: its encoder runs through `encoder.hidden_states`, once per forward
    encode = hf.hidden_states
    monkeypatch.setattr(hf, "hidden_states", lambda *a: calls.append(1) or encode(*a))
    monkeypatch.setattr(tiny, "forward_bytes", tiny._token_bytes * 10 * 16)  # 16 rows of 10 positions per forward
    chunked = tiny.logits(states, sites)
    assert len(calls) == 3
    assert torch.allclose(whole, chunked, atol=1e-5)


# ------------------------------------------------------------------ what the batch guarantees
def test_same_inputs_and_batch_give_the_same_trajectory_on_a_neural_model(tiny):
    init = torch.nonzero(tiny.support).flatten()[torch.randint(20, (4, 6), generator=torch.Generator().manual_seed(1))]
    a = glauber(tiny, init, 30, temperature=torch.tensor([0.3, 1.0, 2.0, 5.0]), seed=9, record_every=3)
    b = glauber(tiny, init, 30, temperature=torch.tensor([0.3, 1.0, 2.0, 5.0]), seed=9, record_every=3)
    assert torch.equal(a.states, b.states) and torch.equal(a.sites, b.sites)
