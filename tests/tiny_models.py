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
