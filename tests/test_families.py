"""Every masked-LM family a user is likely to bring, built tiny and offline: `load_mlm` gives its exact conditionals.

For each family a 2-layer, 32-wide random model is saved (safetensors) beside a tokenizer of the family's own kind
(WordPiece, byte-level BPE or Unigram/SentencePiece-style), trained with `tokenizers` on embedded passages. Checked:
`logits(states, sites)` equals a raw masked forward of an independently loaded `AutoModelForMaskedLM` (fp32, eager
attention) at that site, through the head-at-site path and through the full-model fallback; the support holds no
special id; the adapter's frame is the tokenizer's own; encode/decode round-trips; bf16 stays close to fp32; chains
run. Families that cannot be an MLM are refused with the reason. `families_table()` is the table in
book/run_it_yourself.md (checked below).
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest
import torch

from glauber_mlm import coupling_times, glauber, load_mlm, random_rectangles, rectangle_test
from glauber_mlm.models.passages import load_passages

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
POSITIONS = 64  # ordinary + frame tokens a model takes (RoBERTa-like tables get padding_idx + 1 more rows)
VOCAB = 700

# family → (tokenizer class, tokenizer kind, special tokens in vocabulary order, specials appended after training,
#           config overrides). The `kind` column is what book/run_it_yourself.md reports.
FAMILIES = {
    "bert": ("BertTokenizer", "WordPiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"], [], {}),
    "roberta": ("RobertaTokenizer", "byte-level BPE", ["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"],
                dict(type_vocab_size=1)),
    "distilbert": ("BertTokenizer", "WordPiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], [],
                   dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64)),
    "albert": ("AlbertTokenizer", "Unigram (SentencePiece)", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], [],
               dict(embedding_size=16)),
    "electra": ("BertTokenizer", "WordPiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], [],
                dict(embedding_size=32)),
    "deberta-v2": ("DebertaV2Tokenizer", "Unigram (SentencePiece)", ["[PAD]", "[UNK]", "[CLS]", "[SEP]"], ["[MASK]"],
                   # DeBERTa-v3's layout: relative attention only, no absolute positions
                   dict(relative_attention=True, position_biased_input=False, pos_att_type=["p2c", "c2p"],
                        max_relative_positions=-1, position_buckets=16, norm_rel_ebd="layer_norm", type_vocab_size=0)),
    "deberta-v2-tied": ("DebertaV2Tokenizer", "Unigram (SentencePiece)", ["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
                        ["[MASK]"],  # DeBERTa-v2's non-legacy MLM head, tied to the word embeddings (legacy=False)
                        dict(relative_attention=True, position_biased_input=False, pos_att_type=["p2c", "c2p"],
                             max_relative_positions=-1, position_buckets=16, norm_rel_ebd="layer_norm",
                             type_vocab_size=0, legacy=False)),
    "deberta": ("DebertaTokenizer", "byte-level BPE", ["[PAD]", "[CLS]", "[SEP]", "[UNK]"], ["[MASK]"],
                dict(relative_attention=True, position_biased_input=False, pos_att_type=["c2p", "p2c"],
                     max_relative_positions=-1, type_vocab_size=0)),
    "modernbert": ("TokenizersBackend", "byte-level BPE", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], [],
                   # 3 layers: the third is global, the others local with a window shorter than the test sequences
                   dict(num_hidden_layers=3, local_attention=8)),
    "xlm-roberta": ("XLMRobertaTokenizer", "Unigram (SentencePiece)", ["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"],
                    dict(type_vocab_size=1)),
    "mpnet": ("MPNetTokenizer", "WordPiece", ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"], [], {}),
    "camembert": ("CamembertTokenizer", "Unigram (SentencePiece)",
                  ["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>", "<unk>NOTUSED", "<s>", "</s>"], ["<mask>"],
                  dict(type_vocab_size=1)),
}
# families whose MLM head `hf._site_head` applies at the masked site only (the rest run the full model's head)
SITE_HEAD = {"bert", "roberta", "distilbert", "albert", "electra", "deberta-v2", "deberta-v2-tied", "deberta",
             "modernbert", "xlm-roberta", "mpnet", "camembert"}
MODEL_TYPE = {"deberta-v2-tied": "deberta-v2"}  # variants tested under another name; the rest are model_type
LABEL = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "albert": "ALBERT",
         "electra": "ELECTRA (generator, `ElectraForMaskedLM`)", "deberta-v2": "DeBERTa-v2 / v3",
         "deberta-v2-tied": "DeBERTa-v2 / v3, `legacy=False` head", "deberta": "DeBERTa (v1)",
         "modernbert": "ModernBERT", "xlm-roberta": "XLM-RoBERTa", "mpnet": "MPNet", "camembert": "CamemBERT"}
BOOK_PAGE = Path(__file__).resolve().parents[1] / "book" / "run_it_yourself.md"


@functools.cache
def embedded_texts() -> tuple[str, ...]:
    return tuple(r["text"] for r in load_passages("embedded"))


def corpus(lines: int = 300) -> list[str]:
    return list(embedded_texts()[:lines])


def passages(count: int = 8) -> list[str]:
    return list(embedded_texts()[-count:])  # not among the training lines


def train_tokenizer(family: str):
    """The family's tokenizer class, its vocabulary trained on embedded passages with its own normaliser and
    pre-tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    cls_name, kind, specials, appended, _ = FAMILIES[family]
    texts = corpus()
    if family == "modernbert":  # a generic fast tokenizer, as ModernBERT ships (OLMo-style byte-level BPE)
        from tokenizers import decoders, processors
        from transformers import PreTrainedTokenizerFast

        tok = Tokenizer(models.BPE(unk_token=None))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                           special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                       unk_token="[UNK]", mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]")
    cls = getattr(transformers, cls_name)
    blank = cls().backend_tokenizer  # the family's normaliser and pre-tokenizer, trained below on a fresh model
    if kind == "WordPiece":
        model, trainer = models.WordPiece(unk_token=specials[[s.upper() for s in specials].index("[UNK]")]), \
            trainers.WordPieceTrainer(vocab_size=VOCAB, special_tokens=specials)
    elif kind == "byte-level BPE":
        model, trainer = models.BPE(), trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        unk = next(s for s in specials if s.strip("<>[]").lower() == "unk")
        model, trainer = models.Unigram(), trainers.UnigramTrainer(vocab_size=VOCAB, special_tokens=specials,
                                                                   unk_token=unk)
    tok = Tokenizer(model)
    tok.normalizer, tok.pre_tokenizer = blank.normalizer, blank.pre_tokenizer
    tok.train_from_iterator(texts, trainer)
    trained = json.loads(tok.to_str())["model"]
    if kind == "WordPiece":
        vocab = dict(trained["vocab"])
        for s in appended:
            vocab[s] = len(vocab)
        return cls(vocab=vocab)
    if kind == "byte-level BPE":
        vocab = dict(trained["vocab"])
        for s in appended:
            vocab[s] = len(vocab)
        return cls(vocab=vocab, merges=[tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                                        for m in trained["merges"]])
    vocab = [tuple(p) for p in trained["vocab"]] + [(s, 0.0) for s in appended]
    return cls(vocab=vocab)


def save_family(folder: Path, family: str, positions: int = POSITIONS) -> Path:
    """A tiny random masked LM of `family` with its trained tokenizer, taking `positions` ordinary + frame tokens."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    torch.manual_seed(0)
    tok = train_tokenizer(family)
    T = len(tok)
    overrides = dict(FAMILIES[family][4])
    # ModernBERT pads its vocabulary (50368 rows for 50280 tokens): so does the tiny one; the extra rows leave the
    # support
    V = 64 * math.ceil(T / 64) if family == "modernbert" else T
    ids = dict(pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id or tok.bos_token_id,
               eos_token_id=tok.sep_token_id or tok.eos_token_id)
    if family == "modernbert":
        ids.update(cls_token_id=tok.cls_token_id, sep_token_id=tok.sep_token_id)
    offset = tok.pad_token_id + 1 if family in {"roberta", "xlm-roberta", "camembert", "mpnet"} else 0
    kwargs = {**SIZE, "max_position_embeddings": positions + offset, **ids, **overrides}
    config = AutoConfig.for_model(MODEL_TYPE.get(family, family), vocab_size=V, **kwargs)
    model = AutoModelForMaskedLM.from_config(config)
    with torch.no_grad():  # random biases, so that a head applied to the wrong hidden state cannot pass by luck
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    """(family name, folder, adapter, independently loaded reference model)."""
    from transformers import AutoModelForMaskedLM

    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    name = request.param
    if MODEL_TYPE.get(name, name) not in CONFIG_MAPPING_NAMES or (
            name != "modernbert" and not hasattr(transformers, FAMILIES[name][0])):
        pytest.skip(f"{name}: this transformers ({transformers.__version__}) has no such family or tokenizer class")
    folder = save_family(tmp_path_factory.mktemp(name), name)
    mlm = load_mlm(folder, device="cpu", dtype=torch.float32)
    reference = AutoModelForMaskedLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    return name, folder, mlm, reference


def random_states(mlm, B: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    support_ids = torch.nonzero(mlm.support).flatten()
    return support_ids[torch.randint(support_ids.numel(), (B, n), generator=g)], torch.randint(n, (B,), generator=g)


def frame(tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer itself puts before and after a text's tokens (read off its encoding of one word)."""
    bare = tokenizer(" word", add_special_tokens=False)["input_ids"]
    full = tokenizer(" word")["input_ids"]
    start = next(k for k in range(len(full)) if full[k : k + len(bare)] == bare)
    return full[:start], full[start + len(bare):]


def raw_masked_logits(reference, tokenizer, states: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
    """The reference model's logits at each row's site, the site masked with the tokenizer's mask token, the state
    framed as the tokenizer frames a text."""
    before, after = frame(tokenizer)
    ids = states.clone()
    ids[torch.arange(ids.shape[0]), sites] = tokenizer.mask_token_id
    B = ids.shape[0]
    ids = torch.cat([torch.tensor(before).repeat(B, 1), ids, torch.tensor(after).repeat(B, 1)], 1)
    with torch.no_grad():
        return reference(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[
            torch.arange(B), sites + len(before)]


@pytest.mark.parametrize("path", ["site", "full"])
def test_logits_equal_raw_masked_forward(family, path):
    name, _, mlm, reference = family
    if path == "site":
        assert (mlm.head is not None) == (name in SITE_HEAD), f"{name}: head-at-site path expected {name in SITE_HEAD}"
        if mlm.head is None:
            pytest.skip(f"{name} has no head-at-site path")
    head = mlm.head
    try:
        if path == "full":
            mlm.head = None
        texts = passages()
        real, _ = mlm.encode(texts, 16)
        states, sites = random_states(mlm, 6, 16)
        states = torch.cat([states, real[:4]])
        sites = torch.cat([sites, torch.tensor([0, 15, 7, 3])[: real[:4].shape[0]]])
        ours = mlm.logits(states, sites, dtype=torch.float32)
    finally:
        mlm.head = head
    ref = raw_masked_logits(reference, mlm.tokenizer, states, sites)
    s = mlm.support
    assert ours.shape == (states.shape[0], mlm.vocab_size) and ours.dtype == torch.float32
    assert torch.isinf(ours[:, ~s]).all() and torch.isfinite(ours[:, s]).all()
    err = (ours[:, s] - ref[:, s]).abs().max().item()
    assert err < 1e-4, f"{name} ({path}): max |Δlogit| = {err:.2e} against a raw masked forward"
    # the logits are not trivially flat: the site and its context matter
    assert ours[:, s].std(-1).min() > 1e-3


def test_head_paths_agree_at_every_site(family):
    """One state, every site: the site head and the full model give the same logits (fp32), batched."""
    name, _, mlm, _ = family
    if mlm.head is None:
        pytest.skip(f"{name} has no head-at-site path")
    states, _ = random_states(mlm, 1, 20, seed=1)
    states, sites = states.repeat(20, 1), torch.arange(20)
    site = mlm.logits(states, sites, dtype=torch.float32)
    head, mlm.head = mlm.head, None
    try:
        full = mlm.logits(states, sites, dtype=torch.float32)
    finally:
        mlm.head = head
    assert (site[:, mlm.support] - full[:, mlm.support]).abs().max() < 1e-4


def test_support_excludes_special_ids(family):
    name, _, mlm, _ = family
    tok = mlm.tokenizer
    special = set(tok.all_special_ids) | {tok.mask_token_id, tok.pad_token_id, mlm.prefix, mlm.suffix}
    special |= {i for t, i in tok.get_vocab().items() if "NOTUSED" in t or t.startswith("[unused")}
    special.discard(None)
    assert special and not mlm.support[sorted(special)].any(), name
    assert not mlm.support[len(tok):].any()  # rows of a padded model vocabulary
    assert mlm.support.sum() == len(tok) - len({i for i in special if i < len(tok)})


def test_frame_and_max_length(family):
    """The adapter frames a state as the tokenizer frames a text; a state of `max_length` tokens fits the model."""
    name, _, mlm, reference = family
    tok = mlm.tokenizer
    assert frame(tok) == ([mlm.prefix], [mlm.suffix]), name
    for text in passages(3):
        bare = tok(text, add_special_tokens=False)["input_ids"]
        assert tok(text)["input_ids"] == [mlm.prefix, *bare, mlm.suffix], name
    assert mlm.max_length >= POSITIONS - 2
    states, sites = random_states(mlm, 2, mlm.max_length, seed=2)
    ours = mlm.logits(states, sites, dtype=torch.float32)
    ref = raw_masked_logits(reference, tok, states, sites)
    assert (ours[:, mlm.support] - ref[:, mlm.support]).abs().max() < 1e-4
    with pytest.raises(ValueError, match="length must lie"):
        mlm.encode(passages(1), mlm.max_length + 1)


def test_encode_decode_roundtrip(family):
    name, _, mlm, _ = family
    texts = passages()
    states, kept = mlm.encode(texts, 12)
    assert len(kept) >= 6 and states.shape == (len(kept), 12)
    decoded = mlm.decode(states)
    for k, text, row in zip(kept, decoded, states.tolist()):
        again = mlm.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert again == row, f"{name}: {texts[k][:60]!r} → {text!r} re-encodes to other ids"
        # the decoded text is the passage's start, up to the tokenizer's normalisation (case, spaces)
        assert " ".join(text.lower().split())[:10].replace(" ", "") in texts[k].lower().replace(" ", "")


def test_chains_run(family):
    name, _, mlm, _ = family
    states, _ = mlm.encode(passages(), 8)
    x0 = states[:3]
    traj = glauber(mlm, x0, steps=6, temperature=1.0, seed=0)
    assert traj.final.shape == x0.shape and mlm.support[traj.final].all()
    y0 = torch.roll(x0, 1, 0)
    result = coupling_times(mlm, x0, y0, budget=6, temperature=2.0, seed=0)
    assert result.times.shape == (3,) and (result.times <= 6).all()
    test = rectangle_test(mlm, random_rectangles(mlm, x0, per_passage=2, top_k=4, seed=0))
    assert test.rho.shape == (6,) and torch.isfinite(test.rho).all()
    assert ((test.tv_i >= 0) & (test.tv_i <= 1)).all()


def test_causal_model_is_refused(tmp_path):
    """A GPT-2-style causal LM (no mask token, no MLM head) is refused before any chain runs, naming why."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = train_tokenizer("roberta")  # a byte-level BPE tokenizer; the model has no MLM head whatever the tokenizer
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2, n_positions=32)).save_pretrained(
        tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="no masked-LM head.*gpt2"):
        load_mlm(tmp_path, device="cpu", dtype=torch.float32)


def test_tokenizer_without_mask_token_is_refused(tmp_path):
    """An MLM folder whose tokenizer has no mask token (its saved config edited to drop it) is refused."""
    from transformers import AutoTokenizer

    folder = save_family(tmp_path / "m", "roberta")
    tok = AutoTokenizer.from_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["mask_token"] = None
    config_path.write_text(json.dumps(config))
    assert AutoTokenizer.from_pretrained(folder).mask_token_id is None, "the edited tokenizer still has a mask token"
    assert tok.mask_token_id is not None
    with pytest.raises(ValueError, match="lacks a mask"):
        load_mlm(folder, device="cpu", dtype=torch.float32)


def test_bf16_forward_is_close_to_fp32(family):
    """The low-precision path (Linear weights cast, or packed on a CPU) runs every family's site head; a family that
    cannot run in bf16 falls back to fp32 with a warning naming the reason (DeBERTa v1)."""
    import warnings

    name, folder, _, _ = family
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mlm = load_mlm(folder, device="cpu", dtype=torch.bfloat16)
    fell_back = [w for w in caught if "cannot run in torch.bfloat16" in str(w.message)]
    assert (mlm.dtype == torch.float32) == bool(fell_back) and (bool(fell_back) == (name == "deberta")), name
    states, sites = random_states(mlm, 6, 16, seed=3)
    lo = torch.softmax(mlm.logits(states, sites), -1)
    hi = torch.softmax(mlm.logits(states, sites, dtype=torch.float32), -1)
    assert 0.5 * (lo - hi).abs().sum(-1).max() < 0.02


def families_table() -> str:
    """The table of book/run_it_yourself.md, from what this file tests."""
    rows = ["| family | `model_type` | tokenizer | MLM head at the site only | tested offline |",
            "| --- | --- | --- | --- | --- |"]
    for family, (_, kind, *_rest) in FAMILIES.items():
        rows.append(f"| {LABEL[family]} | `{MODEL_TYPE.get(family, family)}` | {kind} | "
                    f"{'yes' if family in SITE_HEAD else 'no (full model)'} | yes |")
    rows.append("| GPT-2 and other causal LMs | `gpt2` | byte-level BPE | refused: no masked-LM head | yes |")
    rows.append("| any tokenizer without a mask token | | | refused: no mask token | yes |")
    return "\n".join(rows)


def test_book_table_is_what_these_tests_verify():
    assert families_table() in BOOK_PAGE.read_text(), (
        "book/run_it_yourself.md must hold the table this file tests; regenerate it with\n"
        "PYTHONPATH=src python -c 'import sys; sys.path.insert(0, \"tests\"); import test_families; "
        "print(test_families.families_table())'")
