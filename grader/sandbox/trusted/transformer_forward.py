"""Substitute for transformer_forward, used while greedy_decode is graded: embedding plus
positional encoding, the encoder and decoder stacks with their final norms, the output layer."""
from __future__ import annotations

from grader.sandbox.trusted.decoder_layer import decoder_layer
from grader.sandbox.trusted.encoder_layer import encoder_layer
from grader.sandbox.trusted.layer_norm import layer_norm
from grader.sandbox.trusted.positional_encoding import positional_encoding


def embed(E, ids):
    return E[ids] + positional_encoding(ids.shape[1], E.shape[1]).to(E.dtype)


def transformer_forward(src_ids, tgt_ids, params, num_heads):
    p = params
    X = embed(p["src_embed"], src_ids)
    for layer in p["encoder"]:
        X = encoder_layer(X, layer, num_heads)
    memory = layer_norm(X, p["enc_norm_gamma"], p["enc_norm_beta"])
    Y = embed(p["tgt_embed"], tgt_ids)
    for layer in p["decoder"]:
        Y = decoder_layer(Y, memory, layer, num_heads)
    Y = layer_norm(Y, p["dec_norm_gamma"], p["dec_norm_beta"])
    return Y @ p["W_out"] + p["b_out"]
