"""Starting passages of exactly n tokens from distinct documents, and independent starting pairs."""
import pytest
import torch

from glauber_mlm import load_mlm
from glauber_mlm.models.passages import passage_pairs, sample_passages
from tiny_models import WORDS, save_tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_mlm(save_tiny(tmp_path_factory.mktemp("bert")), device="cpu", dtype=torch.float32)


def rows(docs: int = 12, per_doc: int = 3, seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for d in range(docs):
        for k in range(per_doc):
            words = [WORDS[w] for w in torch.randint(len(WORDS), (6 + k,), generator=g)]
            out.append({"id": f"doc{d}#{k}", "doc_id": f"doc{d}", "text": " ".join(words)})
    out.append({"id": "short", "doc_id": "short", "text": "the cat"})
    out.append({"id": "unknown", "doc_id": "unknown", "text": "zebra " + " ".join(WORDS[:8])})  # [UNK]: off support
    return out


def test_sample_passages_are_exact_length_supported_and_from_distinct_documents(tiny):
    states, ids = sample_passages(tiny, rows(), length=5, count=10, seed=1)
    assert states.shape == (10, 5)
    assert tiny.support[states].all()
    assert "short" not in ids and "unknown" not in ids
    assert len({i.split("#")[0] for i in ids}) == 10
    assert len({tuple(s) for s in states.tolist()}) == 10
    again, ids2 = sample_passages(tiny, rows(), length=5, count=10, seed=1)
    assert torch.equal(states, again) and ids == ids2
    assert sample_passages(tiny, rows(), length=5, count=10, seed=2)[1] != ids


def test_pairs_start_apart_and_never_share_a_passage(tiny):
    x0, y0, ids = passage_pairs(tiny, rows(), length=6, pairs=5, seed=0)
    assert x0.shape == y0.shape == (5, 6)
    assert (x0 != y0).any(1).all()
    flat = [i for pair in ids for i in pair]
    assert len(set(flat)) == 10
    decoded = tiny.decode(x0)
    assert all(len(t.split()) == 6 for t in decoded)


def test_too_few_documents_is_a_clear_error(tiny):
    with pytest.raises(ValueError, match="only 12 passages from distinct documents"):
        passage_pairs(tiny, rows(), length=5, pairs=7)
    with pytest.raises(ValueError, match="length must lie"):
        sample_passages(tiny, rows(), length=10_000, count=2)
