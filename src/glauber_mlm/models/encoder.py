"""A BERT or RoBERTa-family encoder's forward without transformers' per-call machinery: same operations, same bits.

`BertModel.forward` rebuilds position and token-type ids, attention-mask logic, output containers and module hooks on
every call. For the few short rows a Glauber step runs, that bookkeeping costs more than the arithmetic. `hidden_states`
runs the identical sequence of tensor operations on the model's own modules,

    h = LN(E_word[x] + E_type[0] + E_pos[p]);  per layer: a = SDPA(hW_q, hW_k, hW_v);  h = LN(aW_o + h);
    h = LN(act(hW_1)W_2 + h),

so its hidden states equal the library's bit for bit, in fp32 and under autocast (tested). `lean_encoder` says
whether a model has exactly this shape; any other model runs transformers' own forward.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

LEAN_FAMILIES = {"bert", "roberta", "xlm-roberta", "camembert"}  # the families tested bit for bit


def position_offset(embeddings) -> int:
    """The first position id of a sequence: padding_idx + 1 for embeddings that number positions after the padding
    id (RoBERTa, MPNet, data2vec-text, …), else 0. Read from the embeddings, not from a list of families."""
    padding_idx = getattr(embeddings, "padding_idx", None)
    return padding_idx + 1 if isinstance(padding_idx, int) else 0


def lean_encoder(model) -> bool:
    """Whether `hidden_states` reproduces `model.base_model`: a BERT, RoBERTa, XLM-RoBERTa or CamemBERT encoder with
    absolute positions, SDPA attention, no cross-attention, decoder use or feed-forward chunking, in eval mode."""
    config = model.config
    return (config.model_type in LEAN_FAMILIES and not model.training
            and getattr(config, "position_embedding_type", "absolute") == "absolute"
            and getattr(config, "_attn_implementation", None) == "sdpa"
            and not getattr(config, "is_decoder", False) and not getattr(config, "add_cross_attention", False)
            and not getattr(config, "chunk_size_feed_forward", 0))


def hidden_states(base_model, ids: torch.Tensor) -> torch.Tensor:
    """The last hidden states (B, L, h) of `base_model` (a BertModel, RobertaModel, … for which `lean_encoder` holds)
    on token ids (B, L) without padding: the operations of its forward, in its order."""
    B, L = ids.shape
    emb = base_model.embeddings
    start = position_offset(emb)  # a state never holds the padding id, so positions are start … start + L − 1
    h = emb.word_embeddings(ids) + emb.token_type_embeddings.weight[0]
    h = emb.LayerNorm(h + emb.position_embeddings.weight[start : start + L])
    for layer in base_model.encoder.layer:
        attention = layer.attention.self
        heads = (B, L, -1, attention.attention_head_size)
        q, k, v = (proj(h).view(heads).transpose(1, 2) for proj in (attention.query, attention.key, attention.value))
        a = F.scaled_dot_product_attention(q, k, v, scale=attention.scaling).transpose(1, 2).reshape(B, L, -1)
        h = layer.attention.output.LayerNorm(layer.attention.output.dense(a) + h)
        inner = layer.intermediate.intermediate_act_fn(layer.intermediate.dense(h))
        h = layer.output.LayerNorm(layer.output.dense(inner) + h)
    return h
