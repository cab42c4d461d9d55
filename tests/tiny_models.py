"""Tiny randomly initialised masked LMs saved as Hugging Face folders, for adapter tests."""
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast, RobertaConfig, RobertaForMaskedLM

WORDS = "the a cat dog sat on mat ran fast slow big small red blue house tree sun moon and or".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]


def tokenizer(folder: Path) -> BertTokenizerFast:
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + WORDS) + "\n")
    return BertTokenizerFast(vocab=str(vocab))


def save_tiny(folder: Path, family: str = "bert", seed: int = 0, head: bool = True) -> Path:
    """A 2-layer, 32-wide model of `family` ('bert' or 'roberta') with the word-list tokenizer."""
    torch.manual_seed(seed)
    tok = tokenizer(folder)
    size = dict(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=40, pad_token_id=0)
    if family == "roberta":
        model = RobertaForMaskedLM(RobertaConfig(**size))
    elif head:
        model = BertForMaskedLM(BertConfig(**size))
    else:
        model = BertModel(BertConfig(**size))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def drop_weights(folder: Path, prefix: str) -> Path:
    """Rewrite the folder's safetensors without the tensors whose names start with `prefix` (a truncated checkpoint)."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    kept = {k: v for k, v in load_file(weights).items() if not k.startswith(prefix)}
    save_file(kept, weights, metadata={"format": "pt"})
    return folder


def save_family(folder: Path, model_type: str, pad_token_id: int = 0) -> Path:
    """A 1-layer, 32-wide masked LM of any family (`model_type` as in transformers' configs) with the word-list tokenizer."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    torch.manual_seed(0)
    tok = tokenizer(folder)
    config = AutoConfig.for_model(model_type, vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=4, intermediate_size=64, max_position_embeddings=40,
                                  pad_token_id=pad_token_id, **({"attention_window": 4} if model_type == "longformer" else {}))
    AutoModelForMaskedLM.from_config(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
