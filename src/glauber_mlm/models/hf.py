"""Any Hugging Face masked LM as a `ConditionalModel`: conditional logits at chosen sites.

The chain state holds the n ordinary tokens only; the adapter adds the special frame
([CLS] … [SEP], <s> … </s>), puts the mask token at each row's site, runs the encoder, and
applies the MLM head to the hidden state at that one site (the head over all n positions
would be wasted work). Ids outside `support` (special and unused tokens) get logit −inf.
"""
from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from ..samplers.checkpoint import forget_identity
from ..validate import check_dtype, check_int, check_sites
from ..build.data import verify_model
from .encoder import hidden_states, lean_encoder, position_offset
from .roofline import shape_from_config, speculation_knee

EMBEDDED_MODELS = Path(__file__).resolve().parents[3] / "data" / "models"
DEFAULT_MODEL = EMBEDDED_MODELS / "minilm-mlm"
REBUILD_DEFAULT = "glauber-mlm build-data && glauber-mlm train-model"
ROBERTA_LIKE = {"roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "xlm-roberta-xl", "xmod"}
UNUSED = re.compile(r"^(\[unused\d+\]|<unused\d+>|madeupword\d+)$")
ATTENTION = ("sdpa", "eager")  # the attention implementations `load_mlm` accepts
BUFFER_KEYS = re.compile(r"(^|\.)(position_ids|token_type_ids)$")  # buffers, not weights: never "missing"


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def forward_dtype(device: torch.device, dtype: torch.dtype | str | None = None) -> torch.dtype:
    """The chains' forward dtype on `device`: `dtype` when given (a torch dtype or its name, `check_dtype`), else
    bf16 where `device` runs it natively and fp32 elsewhere. The one rule `load_mlm`, `Run` and the book use; a family
    that cannot run in it falls back to fp32 when loaded (`MLMAdapter.dtype` says which it runs in)."""
    dtype = check_dtype(dtype)
    if dtype is not None:
        return dtype
    return torch.bfloat16 if fast_bf16(device) else torch.float32


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matmuls run natively here: a CUDA GPU with bf16, or a CPU with AMX / AVX512-BF16."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def support_mask(tokenizer, vocab_size: int) -> torch.Tensor:
    """The ids a chain may visit: the model's vocabulary minus special, unused and padding-only ids."""
    support = torch.zeros(vocab_size, dtype=torch.bool)
    support[: min(len(tokenizer), vocab_size)] = True
    support[[i for i in tokenizer.all_special_ids if i is not None and i < vocab_size]] = False
    vocab = tokenizer.get_vocab()
    unused = [i for tok, i in vocab.items() if UNUSED.match(tok) and i < vocab_size]
    support[unused] = False
    return support


class PackedLinear(torch.nn.Module):
    """y = x Wᵀ + b with W pre-packed once in oneDNN's blocked layout (CPU, low precision).

    `F.linear` in bf16 on a CPU re-orders W into that layout on every call; packing once gives the
    same numbers (the same oneDNN kernel) without the per-call copy."""

    def __init__(self, linear: torch.nn.Linear, dtype: torch.dtype, rows_hint: int = 1024):
        super().__init__()
        weight = linear.weight.detach().to(dtype)
        self.in_features, self.out_features, self.dtype = weight.shape[1], weight.shape[0], dtype
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, rows_hint)
        self.bias = None if linear.bias is None else linear.bias.detach().to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        y = torch.ops.mkldnn._linear_pointwise(x.to(self.dtype).reshape(-1, self.in_features), self.packed, self.bias,
                                               "none", [], "")
        return y.reshape(*lead, self.out_features)


def _pack_linears(module: torch.nn.Module, dtype: torch.dtype) -> bool:
    """Replace every nn.Linear in `module` by a PackedLinear (CPU bf16 only); False where unsupported."""
    if dtype != torch.bfloat16 or not torch.backends.mkldnn.is_available() or not hasattr(
            torch.ops.mkldnn, "_reorder_linear_weight"):
        return False
    try:
        for parent in list(module.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(parent, name, PackedLinear(child, dtype))
    except (RuntimeError, AttributeError):
        return False
    return True


def _packed_vocab_projection(model: torch.nn.Module, vocab: int) -> torch.nn.Module:
    """`model` with its V × h output projection pre-packed in fp32 for oneDNN, every other weight shared (not copied);
    `model` itself where the family's projection is not a plain Linear or this build cannot pack."""
    projection = model.get_output_embeddings()
    if not isinstance(projection, torch.nn.Linear) or projection.out_features != vocab or not hasattr(
            torch.ops.mkldnn, "_reorder_linear_weight") or not torch.backends.mkldnn.is_available():
        return model
    shared = {id(t): t for t in (*model.parameters(), *model.buffers())}
    packed = copy.deepcopy(model, memo=shared)
    name = next(name for name, module in packed.named_modules() if module is packed.get_output_embeddings())
    parent, _, attr = name.rpartition(".")
    try:
        setattr(packed.get_submodule(parent), attr, PackedLinear(projection, torch.float32))
    except (RuntimeError, AttributeError):
        return model
    return packed


def _site_head(model) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The MLM head as a function of hidden states, for families whose head we know; None → full model."""
    kind = model.config.model_type
    if kind == "bert":
        return model.cls
    if kind in ROBERTA_LIKE:
        return model.lm_head
    if kind == "distilbert":
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    if kind == "modernbert":
        return lambda h: model.decoder(model.head(h))
    if kind == "albert":
        return model.predictions
    if kind == "mpnet":
        return model.lm_head
    if kind == "electra":  # ElectraForMaskedLM: the generator's head
        return lambda h: model.generator_lm_head(model.generator_predictions(h))
    if kind in {"deberta", "deberta-v2"}:  # the legacy head (config default) or the one tied to the embeddings
        if getattr(model.config, "legacy", True):
            return model.cls
        return lambda h: model.lm_predictions(h, model.deberta.embeddings.word_embeddings)
    return None


def vocab_rows(model) -> int:
    """The width of the MLM's logits: the output embeddings' rows, or `config.vocab_size` (= the input embeddings'
    rows) where the output embeddings are not the vocabulary projection (DeBERTa's non-legacy head multiplies by the
    word embeddings; its `get_output_embeddings()` is a hidden × hidden transform)."""
    out = model.get_output_embeddings()
    rows = getattr(getattr(out, "weight", None), "shape", (None,))[0]
    vocab = getattr(model.config, "vocab_size", None)
    if rows != vocab and vocab is not None and model.get_input_embeddings().weight.shape[0] == vocab:
        return vocab
    return rows


def max_tokens(model) -> int:
    """The most ordinary tokens a state may hold: the position table's size, less the frame (2) and, for families
    that number positions from `padding_idx + 1` (RoBERTa, MPNet, data2vec-text, Longformer, ESM, …), that offset.

    Read from the model's embeddings, not from a list of families; models without an absolute position
    table (rotary, relative) use `config.max_position_embeddings`."""
    embeddings = getattr(model.base_model, "embeddings", None)
    table = getattr(embeddings, "position_embeddings", None)
    positions = table.num_embeddings if isinstance(table, torch.nn.Embedding) else model.config.max_position_embeddings
    return positions - position_offset(embeddings) - 2


class MLMAdapter:
    """A masked LM with its tokenizer, exposing `logits(states, sites)` and text ↔ state helpers."""

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype, name: str):
        self.model, self.tokenizer, self.device, self.dtype, self.name = model, tokenizer, device, dtype, name
        config = model.config
        self.vocab_size = vocab_rows(model)
        self.support = support_mask(tokenizer, self.vocab_size).to(device)
        if not self.support.any():
            raise ValueError(
                f"{name}: the support is empty (every id of the {self.vocab_size}-token vocabulary is special, unused "
                "or beyond the tokenizer): the tokenizer does not belong to this model."
            )
        self.max_length = max_tokens(model)
        prefix = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        suffix = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if tokenizer.mask_token_id is None or prefix is None or suffix is None:
            raise ValueError(f"{name}: the tokenizer lacks a mask, start or end token, so it cannot be used as an MLM.")
        self.mask_id, self.prefix, self.suffix = tokenizer.mask_token_id, prefix, suffix
        self.head = _site_head(model)
        # BERT and RoBERTa-family encoders run their operations without transformers' per-call bookkeeping (`encoder`)
        self.lean = self.head is not None and lean_encoder(model)
        # low-precision forwards use a copy whose Linear weights are stored in that dtype, run under
        # autocast (LayerNorm, softmax and the residual stream stay fp32): no re-cast of fp32 weights per call
        self.cast_weights = True
        # "linear": Linear weights in the low dtype, the rest fp32 under autocast (default);
        # "all": the whole model in the low dtype without autocast (faster, residual stream rounded too)
        self.lowp_mode = "linear"
        # on a CPU, bf16 Linear weights are also pre-packed for oneDNN (same numbers, no per-call re-order)
        self.pack_weights = True
        # a forward of many rows runs in chunks whose largest activation (the feed-forward layer, or the full
        # head's logits for families without a site head) stays under this many bytes
        self.forward_bytes = 1 << 30
        width = getattr(config, "intermediate_size", None) or 4 * (getattr(config, "hidden_size", None) or 1024)
        self._token_bytes = 4 * max(width, self.vocab_size if self.head is None else 0)
        self._lowp: dict[tuple[torch.dtype, str, bool], torch.nn.Module] = {}

    @property
    def support(self) -> torch.Tensor:
        """bool (V,): the ids a chain may visit; assigning it (e.g. to restrict the vocabulary) also sets the ids
        whose logits are −inf."""
        return self._support

    @support.setter
    def support(self, support: torch.Tensor) -> None:
        self._support, self._off_support = support, ~support

    def weights_for(self, dtype: torch.dtype) -> torch.nn.Module:
        """The module that runs forwards in `dtype`: a cached copy of `model` built on first use.

        - low precision: Linear weights stored in `dtype` (on a CPU in bf16: pre-packed for oneDNN, `PackedLinear`);
        - float32 on a CPU: the same weights, shared with `model`, except the vocabulary projection, pre-packed for
          oneDNN. At the site the head multiplies a few rows by a V × h matrix streamed from memory at every step;
          packed, that product runs about 2.5× faster (the same product, summed in another order).
        `model` itself is never changed; call `refresh_weights()` after changing its weights.
        """
        if not self.cast_weights or (dtype == torch.float32 and (self.device.type != "cpu" or not self.pack_weights)):
            return self.model
        key = (dtype, self.lowp_mode, self.pack_weights)
        if key not in self._lowp:
            self._lowp[key] = (_packed_vocab_projection(self.model, self.vocab_size) if dtype == torch.float32
                               else self._low_precision_copy(dtype)).eval()
        return self._lowp[key]

    def _low_precision_copy(self, dtype: torch.dtype) -> torch.nn.Module:
        lowp = copy.deepcopy(self.model)
        if self.lowp_mode == "all":
            lowp = lowp.to(dtype)
        packed = self.device.type == "cpu" and self.pack_weights and _pack_linears(lowp, dtype)
        for module in lowp.modules() if not packed else ():
            if isinstance(module, torch.nn.Linear):
                module.weight = torch.nn.Parameter(module.weight.detach().to(dtype), requires_grad=False)
                if module.bias is not None:
                    module.bias = torch.nn.Parameter(module.bias.detach().to(dtype), requires_grad=False)
        return lowp

    def speculation_knee(self, n: int, dtype: torch.dtype | None = None) -> float:
        """A forward's fixed cost in rows: r rows of n tokens take about (knee + r) times the cost of one more row.

        From the config's shape, the dtype and the device type (`roofline.speculation_knee`), never timed, so the
        batch widths of `glauber(speculate=None)` (`sampling.speculation_width`), and with them the float rounding of
        its forwards, are the same on every run; 0 (no speculation) for a config without the usual width keys."""
        try:
            shape = shape_from_config(self.model.config.to_dict(), self.name)
        except ValueError:
            return 0.0
        return speculation_knee(shape, n, self.device.type, dtype or self.dtype)

    def refresh_weights(self) -> None:
        """Forget the low-precision weight copies (rebuilt from `model` on the next forward) and the model's cached
        identity (`checkpoint.module_identity`), after a change of `model`'s weights."""
        self._lowp.clear()
        forget_identity(self.model)

    def logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """ℓ_i(·|x_{-i}) at each row's site, float32 (B, V), −inf off the support.

        Rows go through the model in chunks (`forward_bytes`); the chunks depend only on B and n, so the same
        batch always gives the same numbers. Sites outside [0, n) are refused (`check_sites`): −1 would put the mask
        on the end-of-sequence token without any error from the model."""
        return self._logits(states, check_sites(sites, states.shape[0], states.shape[1]), dtype)

    def _logits(self, states: torch.Tensor, sites: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
        B = states.shape[0]
        rows_per_forward = max(1, self.forward_bytes // (self._token_bytes * (states.shape[1] + 2)))
        if B > rows_per_forward:
            return torch.cat([self._logits(states[k : k + rows_per_forward], sites[k : k + rows_per_forward], dtype)
                              for k in range(0, B, rows_per_forward)])
        rows, sites = torch.arange(B, device=self.device), sites.to(self.device)
        ids = torch.cat([
            torch.full((B, 1), self.prefix, device=self.device),
            states.to(self.device),
            torch.full((B, 1), self.suffix, device=self.device),
        ], 1)
        ids[rows, sites + 1] = self.mask_id
        return self._forward(ids, lambda hidden: hidden[rows, sites + 1], dtype)

    def _forward(self, ids: torch.Tensor, pick: Callable[[torch.Tensor], torch.Tensor],
                 dtype: torch.dtype | None) -> torch.Tensor:
        """The MLM head's logits at the positions `pick` selects from (B, L, ·) hidden states (or full logits, for a
        family without a site head) of framed ids (B, L), float32, −inf off the support."""
        dtype = dtype or self.dtype
        model = self.weights_for(dtype)
        autocast = dtype != torch.float32 and not (self.cast_weights and self.lowp_mode == "all")
        with torch.inference_mode(), torch.autocast(self.device.type, dtype=dtype, enabled=autocast):
            if self.head is None:
                out = pick(model(input_ids=ids).logits)
            else:
                hidden = (hidden_states(model.base_model, ids) if self.lean
                          else model.base_model(input_ids=ids).last_hidden_state)
                out = _site_head(model)(pick(hidden))
        return out.float().masked_fill(self._off_support, float("-inf"))

    def masked_logits(self, partial: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The denoiser's logits ℓ_i(· | z) at every site of partial states z (B, n), −1 marking a masked site: the
        mask token at every masked site at once, one forward per row; float32 (B, n, V), −inf off the support.

        Rows at decoded sites are the model's reading of its own token there (masked-diffusion samplers keep decoded
        tokens and ignore them). With one masked site this is `logits` at that site, up to float rounding."""
        partial = torch.as_tensor(partial)
        if partial.ndim != 2 or partial.dtype.is_floating_point or partial.dtype == torch.bool:
            raise ValueError(f"partial states must be a (B, n) integer tensor (−1 = masked), got {partial.dtype} of "
                             f"shape {tuple(partial.shape)}.")
        B, n = partial.shape
        rows_per_forward = max(1, self.forward_bytes // (self._token_bytes * (n + 2) * max(1, n)))
        if B > rows_per_forward:
            return torch.cat([self.masked_logits(partial[k : k + rows_per_forward], dtype)
                              for k in range(0, B, rows_per_forward)])
        partial = partial.to(self.device, torch.int64)
        ids = torch.cat([torch.full((B, 1), self.prefix, device=self.device),
                         torch.where(partial < 0, self.mask_id, partial),
                         torch.full((B, 1), self.suffix, device=self.device)], 1)
        return self._forward(ids, lambda hidden: hidden[:, 1 : n + 1], dtype)

    def encode(self, texts: list[str], length: int) -> tuple[torch.Tensor, list[int]]:
        """The first `length` tokens of each text with at least that many supported tokens: (states, kept indices)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got one string: pass [text].")
        length = check_int("length", length)
        if length < 1 or length > self.max_length:
            raise ValueError(f"length must lie in [1, {self.max_length}] for {self.name}, got {length}.")
        rows, kept, support = [], [], self.support.cpu()
        for k, ids in enumerate(self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]):
            ids = ids[:length]
            if len(ids) == length and support[ids].all():
                rows.append(ids)
                kept.append(k)
        states = torch.tensor(rows, dtype=torch.int64).view(len(rows), length)
        return states, kept

    def decode(self, states: torch.Tensor) -> list[str]:
        return self.tokenizer.batch_decode(states.tolist(), clean_up_tokenization_spaces=True)


def model_folder(name_or_path: str | Path | None) -> Path | None:
    """The local folder `load_mlm(name_or_path)` reads: the embedded default for None, a folder, or a folder of
    `EMBEDDED_MODELS` by its name ("minilm6-mlm"); None for a hub name."""
    if name_or_path is None:
        return DEFAULT_MODEL
    path = Path(name_or_path)
    if not path.is_dir() and (EMBEDDED_MODELS / str(name_or_path)).is_dir():
        return EMBEDDED_MODELS / str(name_or_path)
    return path if path.is_dir() else None


def _resolve(name_or_path: str | Path | None, allow_pickle: bool) -> str:
    """The folder or hub name to load (`model_folder`). Fails early on missing or pickle-only weights, and on an
    embedded model whose files differ from data/MANIFEST.json (`data.verify_model`)."""
    path = model_folder(name_or_path)
    if name_or_path is None and not (path / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"the embedded default model is missing ({path / 'model.safetensors'}); rebuild it with "
            f"`{REBUILD_DEFAULT}`, or name another model: load_mlm('bert-base-uncased') or load_mlm('/path/to/folder')."
        )
    if path is None:
        if Path(name_or_path).is_absolute() or str(name_or_path).startswith((".", "~")):
            raise FileNotFoundError(f"no model folder at {name_or_path}.")
        return str(name_or_path)
    if path.resolve().parent == EMBEDDED_MODELS.resolve():
        verify_model(path)
    if not any(path.glob("*.safetensors")):
        if any(path.glob("*.bin")) or any(path.glob("*.pt")):
            if not allow_pickle:
                raise ValueError(
                    f"{path} holds weights only in pickle format (.bin/.pt), which can run arbitrary code when "
                    "loaded: convert them to safetensors, or pass allow_pickle=True if you trust the file."
                )
        else:
            raise FileNotFoundError(f"{path} holds no model weights (*.safetensors).")
    return str(path)


def load_mlm(
    name_or_path: str | Path | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    allow_pickle: bool = False,
    trust_remote_code: bool = False,
    attn_implementation: str = "sdpa",
) -> MLMAdapter:
    """Load a Hugging Face masked LM (hub name, local folder or embedded model name; None: the embedded default).

    Weights load in fp32 from safetensors only (pickle needs `allow_pickle=True`); remote code runs
    only with `trust_remote_code=True`. `device`: "cpu" or "cuda[:index]"; default cuda when present, else cpu.
    `dtype`: the forward dtype used for sampling (`conditionals.check_dtype`: a torch dtype or its name, "bfloat16"
    as the CLI writes it); default `forward_dtype(device)`: bf16 where the hardware runs it natively, else fp32.
    Softmax and sampling run in float64; rectangle and influence estimates ask for fp32 forwards.
    Low-precision forwards use a cached copy of the Linear weights in that dtype (see `MLMAdapter.weights_for`).
    `attn_implementation`: "sdpa" (default, falls back to the family's default where unsupported) or "eager".

    Refused before loading any weights, with the reason and the fix: a dtype, attention implementation or device
    (meta, or a CUDA device this machine lacks) it cannot run with, and an embedded model whose files differ from
    data/MANIFEST.json (`data.verify_model`). Refused before any chain runs: a folder without tokenizer files, a
    checkpoint whose weights do not cover the model (missing layers or MLM head), a tokenizer whose vocabulary does
    not match the model's, an empty support, and weights whose fp32 logits are not finite. A family that cannot run
    in `dtype` (e.g. DeBERTa-v1 in bf16) falls back to fp32 with a warning naming the reason.
    """
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    dtype = check_dtype(dtype)
    if attn_implementation not in ATTENTION:
        raise ValueError(f"attn_implementation must be one of {', '.join(map(repr, ATTENTION))}, got "
                         f"{attn_implementation!r}: 'sdpa' (the default) or 'eager' (transformers' plain attention).")
    device = _check_device(device)
    source = _resolve(name_or_path, allow_pickle)
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except OSError as err:
        raise OSError(
            f"cannot resolve model {source!r}: not a local folder, and the hub could not be reached or has no such "
            "model. On a machine without hub access, pass a local folder (load_mlm('/path/to/folder')) or use the "
            f"embedded default (load_mlm()). Original error: {err}"
        ) from err
    archs = config.architectures or []
    if config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES or (
        archs and not any("MaskedLM" in a or "LMHead" in a for a in archs)
    ):
        raise ValueError(
            f"{source!r} has no masked-LM head (model_type={config.model_type!r}, architectures={archs}): "
            "a Glauber chain needs MLM conditionals; pick a *ForMaskedLM checkpoint such as bert-base-uncased."
        )
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    files = list(getattr(tokenizer, "vocab_files_names", {}).values())
    if Path(source).is_dir() and files and not any((Path(source) / f).is_file() for f in files):
        raise FileNotFoundError(
            f"{source} holds no tokenizer (none of {files}): without it the tokenizer has only its special tokens. "
            "Save the model's tokenizer beside the weights: tokenizer.save_pretrained(folder)."
        )
    kwargs = dict(dtype=torch.float32, use_safetensors=None if allow_pickle else True, trust_remote_code=trust_remote_code,
                  output_loading_info=True)
    try:
        try:  # fused scaled-dot-product attention where the family supports it (no padding mask is ever passed)
            model, info = AutoModelForMaskedLM.from_pretrained(source, attn_implementation=attn_implementation, **kwargs)
        except (ValueError, ImportError):
            model, info = AutoModelForMaskedLM.from_pretrained(source, **kwargs)
    except (SafetensorError, OSError) as err:
        hint = f" Rebuild it with `{REBUILD_DEFAULT}`." if name_or_path is None else ""
        raise OSError(f"could not read the weights of {source!r}: {err}.{hint}") from err
    missing = sorted(k for k in info["missing_keys"] if not BUFFER_KEYS.search(k))
    if missing:
        raise ValueError(
            f"{source!r} holds no weights for {len(missing)} parameters of {type(model).__name__} ({missing[:4]}"
            f"{' …' if len(missing) > 4 else ''}): they would be initialised at random and the conditionals would "
            "be noise. This is a checkpoint without the MLM head (an encoder saved without it, whose config may lack "
            "`architectures`) or a truncated file: use a complete *ForMaskedLM checkpoint."
        )
    V, T = vocab_rows(model), len(tokenizer)
    if T > V or V - T > max(128, V // 100):
        raise ValueError(
            f"{source!r}: the tokenizer has {T} tokens but the model's vocabulary has {V} rows: they do not belong "
            "together (only a model vocabulary padded by ≤ max(128, 1%) rows is accepted). Load the tokenizer saved "
            "with this model."
        )
    model.eval().to(device)
    dtype = forward_dtype(device, dtype)
    mlm = MLMAdapter(model, tokenizer, device, dtype, name=str(name_or_path or DEFAULT_MODEL.name))
    mlm.dtype = _working_dtype(mlm, dtype)
    return mlm


def _check_device(device: str | torch.device | None) -> torch.device:
    """`device` as a torch.device the weights can live on: a CPU or one of this machine's CUDA devices (None: the
    default); anything else is refused, naming the choices."""
    if device is None:
        return default_device()
    choices = "pass device='cpu', 'cuda' or 'cuda:<index>', or device=None for the default (cuda where present)."
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device {device!r} is not a device name: {choices}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device {str(device)!r} cannot hold a model's weights for sampling (only cpu and cuda are "
                         f"supported): {choices}")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(
            f"device {str(device)!r} was asked for, but this machine has {torch.cuda.device_count()} CUDA device(s): "
            f"{choices}"
        )
    return device


def _working_dtype(mlm: MLMAdapter, dtype: torch.dtype) -> torch.dtype:
    """`dtype` if one short forward in it gives finite logits on the support; else float32 with a warning
    (families that cannot run in it, e.g. DeBERTa-v1 in bf16). Refuses weights whose fp32 logits are not finite."""
    state = torch.nonzero(mlm.support).flatten()[:1].repeat(1, 2)
    sites = torch.zeros(1, dtype=torch.int64)

    def finite(dt: torch.dtype) -> bool:
        return bool(torch.isfinite(mlm.logits(state, sites, dtype=dt)[:, mlm.support]).all())

    if not finite(torch.float32):
        raise ValueError(f"{mlm.name}: the model gives NaN or infinite logits in float32: its weights are corrupt.")
    if dtype == torch.float32:
        return dtype
    try:
        reason = None if finite(dtype) else "its logits are not finite"
    except RuntimeError as err:
        reason = str(err).splitlines()[0]
    if reason is None:
        return dtype
    warnings.warn(f"{mlm.name} ({mlm.model.config.model_type}) cannot run in {dtype} ({reason}): using float32.",
                  stacklevel=3)
    mlm.refresh_weights()
    return torch.float32
