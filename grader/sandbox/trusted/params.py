"""Seeded weights of the transformer's parts, in the course's layout (Y = X @ W + b, W (in, out)).

The parent makes the cases' parameters with these (grader.catalog.inputs re-exports them), and
the capstone's training in the child draws its initial model with the same functions, so both
sides build the same model from the same seed."""
from __future__ import annotations

import math

import torch

F32 = torch.float32


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = F32, scale: float = 1.0) -> torch.Tensor:
    """Seeded standard-normal values, drawn in float64 so float32 and float64 cases agree."""
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def mha_params(gen, d_model, dtype=F32):
    s = 1.0 / math.sqrt(d_model)
    p = {f"W_{n}": randn(gen, d_model, d_model, dtype=dtype, scale=s) for n in "QKVO"}
    p.update({f"b_{n}": randn(gen, d_model, dtype=dtype, scale=0.1) for n in "QKVO"})
    return p


def ln_params(gen, d, dtype=F32):
    return 1.0 + randn(gen, d, dtype=dtype, scale=0.2), randn(gen, d, dtype=dtype, scale=0.2)


def ffn_params(gen, d, d_ff, dtype=F32):
    return {"W1": randn(gen, d, d_ff, dtype=dtype, scale=1 / math.sqrt(d)),
            "b1": randn(gen, d_ff, dtype=dtype, scale=0.1),
            "W2": randn(gen, d_ff, d, dtype=dtype, scale=1 / math.sqrt(d_ff)),
            "b2": randn(gen, d, dtype=dtype, scale=0.1)}


def layer_params(gen, d, d_ff, decoder=False, dtype=F32):
    p = {"attn": mha_params(gen, d, dtype)}
    if decoder:
        p["cross_attn"] = mha_params(gen, d, dtype)
    p["ff"] = ffn_params(gen, d, d_ff, dtype)
    for i in (1, 2, 3) if decoder else (1, 2):
        p[f"ln{i}_gamma"], p[f"ln{i}_beta"] = ln_params(gen, d, dtype)
    return p


def model_params(gen, v_src, v_tgt, d, d_ff, n_enc, n_dec, dtype=F32):
    p = {"src_embed": randn(gen, v_src, d, dtype=dtype), "tgt_embed": randn(gen, v_tgt, d, dtype=dtype),
         "encoder": [layer_params(gen, d, d_ff, False, dtype) for _ in range(n_enc)],
         "decoder": [layer_params(gen, d, d_ff, True, dtype) for _ in range(n_dec)]}
    p["enc_norm_gamma"], p["enc_norm_beta"] = ln_params(gen, d, dtype)
    p["dec_norm_gamma"], p["dec_norm_beta"] = ln_params(gen, d, dtype)
    p["W_out"] = randn(gen, d, v_tgt, dtype=dtype, scale=1 / math.sqrt(d))
    p["b_out"] = randn(gen, v_tgt, dtype=dtype, scale=0.1)
    return p
