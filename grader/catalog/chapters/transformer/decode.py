"""transformer.greedy_decode: its reference, its cases and its spec.

Token ids are compared exactly, so every case is built so that no decision is a near-tie:
the best token beats the second best by at least MARGIN at every step (float32 and float64
then always agree). To make <eos> appear where a case needs it, the grader decodes the random
model plainly first and then names as eos_id a token it writes where the case wants one:
in every sequence at different steps (padding, then an early stop), in some sequences only,
or nowhere (max_len is reached). Before its first eos, a sequence is the same either way.
"""
from __future__ import annotations

import torch

from grader.catalog.chapters.transformer.layers import LAYERS_FORBIDDEN
from grader.catalog.inputs import model_params, randint
from grader.catalog.references import equations as M
from grader.catalog.references.equations import variant
from grader.catalog.references.float64 import to64
from grader.catalog.references.torch_modules import reference_logits
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64
MARGIN = 1e-3


def ref_greedy_decode(src_ids, params, num_heads, bos_id, eos_id, max_len):
    """The reference model (nn.Transformer with the student's weights) decoded greedily.

    Decoding step by step with nn.Transformer costs one model call per token; the course's
    equations in float64 decode the same tokens cheaply, and one teacher-forced call of the
    reference model on the result confirms them: with a causal decoder, the logits at position
    t given the whole sequence are the logits of decoding step t. If any token disagrees, the
    reference model decodes step by step after all."""
    p64 = to64(params)
    tokens = M.greedy_decode(src_ids, p64, num_heads, bos_id, eos_id, max_len,
                             forward=lambda s, t: M.transformer_forward(s, t, p64, num_heads))
    reference = reference_logits(params, num_heads)
    if tokens.shape[1] > 1:
        predicted = reference(src_ids, tokens[:, :-1]).argmax(-1)                 # (B, L - 1)
        written = torch.cumsum((tokens[:, 1:-1] == eos_id).int(), dim=1) > 0       # eos among columns 1..t
        padded = torch.cat([torch.zeros_like(written[:, :1]), written], dim=1)      # column t + 1 is padding
        if not bool(((predicted == tokens[:, 1:]) | padded).all()):
            tokens = M.greedy_decode(src_ids, params, num_heads, bos_id, eos_id, max_len, forward=reference)
    return tokens


def _trajectory(logits_fn, src, bos, max_len):
    """Plain greedy decoding (no eos): the tokens (B, max_len) and, per step, the margin between
    the best and the second-best token (B, max_len - 1)."""
    ys = torch.full((src.shape[0], 1), bos, dtype=torch.int64)
    margins = [torch.zeros(src.shape[0], 0, dtype=F64)]
    for _ in range(max_len - 1):
        top = logits_fn(src, ys)[:, -1].topk(2, dim=-1)
        margins.append((top.values[:, 0] - top.values[:, 1]).unsqueeze(1))
        ys = torch.cat([ys, top.indices[:, :1]], dim=1)
    return ys, torch.cat(margins, 1)


def _first(tokens, eos):
    """The column of each sequence's first eos (1, 2, ...), 0 for never."""
    hit = torch.cat([tokens[:, 1:] == eos, torch.ones(tokens.shape[0], 1, dtype=torch.bool)], dim=1)
    first = hit.int().argmax(1) + 1
    return torch.where(first < tokens.shape[1], first, torch.zeros_like(first))


def _wanted(stops, want: str, max_len: int) -> bool:
    finished = stops > 0
    if want == "none":
        return not bool(finished.any())
    if want == "some":
        return bool(finished.any()) and not bool(finished.all())
    # "all": every sequence stops early (L < max_len), at different steps when there are several
    return bool(finished.all()) and 2 <= int(stops.max()) < max_len - 1 and \
        (len(stops) == 1 or len(set(stops.tolist())) > 1)


def _varied(tokens) -> bool:
    """Sequences that tell decoding mistakes apart: not all alike, not one token repeated."""
    rows = {tuple(r) for r in tokens.tolist()}
    return (len(rows) > 1 or tokens.shape[0] == 1) and all(len(set(r)) >= 2 for r in rows)


def greedy_case(gen, name, *, B, S, V, d, h, layers, max_len, want, bos=0, dtype=F32, note=""):
    """A seeded case whose reference decoding shows `want`: every sequence stops at eos ("all"),
    some do ("some"), none does ("none"). eos_id is picked among the tokens the model writes.
    Never raises (hidden cases come from any seed): after 60 draws it settles for the first
    tie-free one, with an eos_id the model never writes."""
    fallback = None
    for _ in range(60):
        params = model_params(gen, V, V, d, 2 * d, layers, layers, dtype)
        params["W_out"] *= 3.0                 # decisive logits: fewer near-ties, livelier sequences
        params["b_out"][bos] -= 30.0           # the model never writes <bos> itself
        src = randint(gen, 0, V, B, S)
        p64 = to64(params)
        tokens, margins = _trajectory(lambda s, t, p64=p64: M.transformer_forward(s, t, p64, h), src, bos, max_len)
        tied = bool((margins < MARGIN).any())
        if fallback is None or (fallback[3] and not tied):
            fallback = (params, src, tokens, tied)
        if tied or (max_len > 3 and not _varied(tokens[:, 1:])):
            continue
        fits = [(int(_first(tokens, e).max()), e) for e in range(V)
                if e != bos and _wanted(_first(tokens, e), want, max_len)]
        if fits:
            eos = max(fits)[1]            # the latest stop: the longest sequences
            return Case(name, (src, params, h, bos, eos, max_len), note=note)
    params, src, tokens, _ = fallback
    unused = [e for e in range(V) if e != bos and not bool((tokens[:, 1:] == e).any())]
    return Case(name, (src, params, h, bos, (unused or [bos])[-1], max_len), note=note)


def greedy_cases(gen):
    return [
        greedy_case(gen, "eos at different steps, then an early stop", B=4, S=5, V=8, d=16, h=2, layers=1,
                    max_len=10, want="all", note="finished sequences are padded with eos; L < max_len"),
        greedy_case(gen, "max_len reached, no eos", B=2, S=4, V=8, d=16, h=4, layers=1, max_len=6, want="none"),
        greedy_case(gen, "some finish, the rest reach max_len", B=3, S=6, V=10, d=16, h=2, layers=2,
                    max_len=7, want="some", bos=9, note="bos_id=9"),
        greedy_case(gen, "one sequence, float64 weights", B=1, S=5, V=9, d=32, h=4, layers=2, max_len=12,
                    want="all", dtype=F64),
        greedy_case(gen, "max_len=1: only <bos>", B=2, S=3, V=6, d=8, h=2, layers=1, max_len=1, want="none"),
    ]


# ----------------------------------------------------------------------------- greedy_decode
GREEDY_DECODE_SPEC = ExerciseSpec(
    id="transformer.greedy_decode", points=2, cases=greedy_cases, reference=ref_greedy_decode,
    reference_source="nn.Transformer with your weights (and the grader's embedding, positional encoding and "
                     "output layer), decoded greedily in float64",
    outputs=("tokens",), exact=True, forbidden=LAYERS_FORBIDDEN, heatmaps=("tokens",),
    depends=substitutes("multi_head_attention", "causal_mask", "positional_encoding", "layer_norm",
                          "add_and_norm", "feed_forward", "encoder_layer", "decoder_layer", "transformer_forward"),
    mistakes=(
        KnownMistake("argmax of the whole sequence", "the next token is the argmax of the last position's "
                     "logits, logits[:, -1].argmax(-1), not of the logits of every position at once",
                     variant(M.greedy_decode, pick="whole")),
        KnownMistake("argmax of the first position", "take the logits of the last position (logits[:, -1]): "
                     "position 0 only ever predicts the token after <bos>", variant(M.greedy_decode, pick="first")),
        KnownMistake("no eos padding", "once a sequence has produced eos_id, append eos_id to it at every later "
                     "step, whatever the model predicts", variant(M.greedy_decode, pad=False)),
        KnownMistake("stops at the first eos in the batch", "stop when every sequence has produced eos_id "
                     "(finished.all()), not as soon as one has", variant(M.greedy_decode, stop="any")),
        KnownMistake("never stops early", "stop as soon as every sequence has produced eos_id, before max_len",
                     variant(M.greedy_decode, stop="never")),
    ),
)
