"""Where a failing layer or model first diverges from the reference, named by sub-layer.

Two methods, both ending in one sentence for the student:
- layers (encoder_layer, decoder_layer), by ablation: the student's function is called again
  (a probe, in the sandbox) with sub-layers switched off (their output projections W_O, b_O or
  W2, b2 set to zero, so they output zeros). First, a sub-layer whose switching off leaves the
  output unchanged is not using its own weights; then the sub-layers are switched on one by
  one in data-flow order, each time compared with the reference on the same weights, and the
  first that disagrees is named. Works however the student wrote the layer.
- the whole model (transformer_forward), by tracing: the exercise's driver records what the
  student's code passes to encoder_layer and decoder_layer (the grader's own versions while
  this exercise is graded; grader.sandbox.trusted.tracing is the child side) and the localiser
  compares those intermediate tensors with the reference's, in data-flow order.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from grader.catalog.references import equations as M
from grader.catalog.references.float64 import to64
from grader.catalog.references.torch_modules import ref_decoder_layer, ref_encoder_layer
from grader.pipeline.compare import close, matches
from grader.sandbox.trusted.tracing import TRACE_ACCESSOR


def _close(a: Any, e: torch.Tensor, atol: float = 1e-4, rtol: float = 1e-3) -> bool:
    return isinstance(a, torch.Tensor) and close(a, e, atol, rtol)


# ----------------------------------------------------------------------------- layers: ablation
def _switch_off(params: dict, *sublayers: str) -> dict:
    """A copy of a layer dict whose named sub-layers output zeros (attn, cross_attn, ff)."""
    p = {k: (dict(v) if isinstance(v, dict) else v) for k, v in params.items()}
    for name in sublayers:
        if name == "ff":
            p["ff"]["W2"], p["ff"]["b2"] = torch.zeros_like(p["ff"]["W2"]), torch.zeros_like(p["ff"]["b2"])
        else:
            p[name]["W_O"], p[name]["b_O"] = torch.zeros_like(p[name]["W_O"]), torch.zeros_like(p[name]["b_O"])
    return p


ENCODER_STAGES = (
    ("add & norm", ("attn", "ff"),
     "with both sub-layers switched off (their outputs set to zero) your layer should return "
     "layer_norm(layer_norm(X, ln1), ln2), and it does not: add the sub-layer's output to its input "
     "first, then normalise (post-norm), with ln1 after the attention and ln2 after the FFN"),
    ("self-attention", ("ff",),
     "the add & norm path is right, but with only the self-attention switched on your layer differs: "
     "pass X as queries, keys and values, pass the mask on, and add the attention's output to X before ln1"),
    ("feed-forward", (),
     "the add & norm path and the self-attention agree with the reference, the FFN sub-layer does not: "
     "apply feed_forward to the output of the first add & norm, with params['ff'], then add & norm with ln2"),
)
DECODER_STAGES = (
    ("add & norm", ("attn", "cross_attn", "ff"),
     "with all three sub-layers switched off (their outputs set to zero) your layer should return "
     "ln3(ln2(ln1(Y))), and it does not: add each sub-layer's output to its input first, then normalise "
     "(post-norm), with ln1, ln2, ln3 in that order"),
    ("masked self-attention", ("cross_attn", "ff"),
     "the add & norm path is right, but with only the self-attention switched on your layer differs: "
     "queries, keys and values all come from Y, with causal_mask(T) (position t sees 0..t only)"),
    ("cross-attention", ("ff",),
     "the self-attention agrees with the reference, the cross-attention does not: its queries come from "
     "the decoder (the output of the first add & norm) and its keys and values from the encoder's memory, "
     "with params['cross_attn'] and no mask"),
    ("feed-forward", (),
     "both attentions agree with the reference, the FFN sub-layer does not: apply feed_forward to the "
     "output of the second add & norm, with params['ff'], then add & norm with ln3"),
)


def _ablation_localiser(function: str, stages, labels: dict[str, str], reference: Callable, params_at: int):
    """labels: params key of each sub-layer -> its name, in data-flow order."""

    def probe_with(probe, case, *off):
        args = list(case.args)
        args[params_at] = _switch_off(case.args[params_at], *off)
        return args, probe(function, *args, **case.kwargs)

    def localise(case, student_output, probe) -> str:
        try:
            # A sub-layer whose weights the layer never uses (another sub-layer's weights in their place).
            for key in labels:
                _, got = probe_with(probe, case, key)
                if _close(got, student_output, atol=1e-7, rtol=1e-6):
                    return (f"First diverging sub-layer: {labels[key]}. Your layer's output does not change when "
                            f"params['{key}'] is switched off: the {labels[key]} does not use its own weights.")
            # Switch sub-layers on one by one, in data-flow order.
            for name, off, advice in stages:
                if off:
                    args, got = probe_with(probe, case, *off)
                    if matches(got, reference(*args, **case.kwargs), ("output",), lambda dt: (1e-4, 1e-3)):
                        continue
                return f"First diverging sub-layer: {name}. Sub-layer by sub-layer, {advice}."
        except Exception:
            return ""
        return ""
    return localise


localise_encoder = _ablation_localiser("encoder_layer", ENCODER_STAGES,
                                       {"attn": "self-attention", "ff": "feed-forward"}, ref_encoder_layer, 1)
localise_decoder = _ablation_localiser("decoder_layer", DECODER_STAGES,
                                       {"attn": "masked self-attention", "cross_attn": "cross-attention",
                                        "ff": "feed-forward"}, ref_decoder_layer, 2)


# ----------------------------------------------------------------------------- model: tracing
def _embedding_problem(got, E, ids) -> str:
    for what, kw in (("the positional encoding is not added", dict(pe_times=0)),
                     ("the positional encoding is added twice", dict(pe_times=2)),
                     ("the embeddings are scaled by sqrt(d_model); the course adds them unscaled", dict(scale=True))):
        if _close(got, M.embed(E, ids, **kw)):
            return what
    return "it should be embed[ids] + positional_encoding(T, d_model)"


def _stack(calls, expected_in, expected_out, kind, where):
    """The first problem in a stack of layer calls, or ''."""
    n = len(expected_out)
    for i, call in enumerate(calls[:n]):
        want = expected_in if i == 0 else expected_out[i - 1]
        if not _close(call["in"], want):
            if i == 0:
                return ""          # the stack's input is checked by the caller
            return (f"{kind} layer {i + 1} does not receive the output of {kind} layer {i}: {where} is a "
                    f"chain, each layer transforming the previous layer's output")
    if len(calls) != n:
        return f"your code ran {len(calls)} {kind} layers; params['{kind}'] has {n}: run each of them once, in order"
    return ""


def localise_model(case, student_output, probe) -> str:
    if "capstone" in case.kwargs or len(case.args) < 4:
        return ""
    src, tgt, params, h = case.args[:4]
    trace = probe(TRACE_ACCESSOR)
    p, rec = to64(params), {}
    M.transformer_forward(src, tgt, p, h, record=rec)
    enc = [c for c in trace if c["fn"] == "encoder_layer"]
    dec = [c for c in trace if c["fn"] == "decoder_layer"]
    if not enc or not dec:
        return ("(The grader localises errors by watching your calls of encoder_layer and decoder_layer; "
                "your transformer_forward does not call both, so it cannot say where it diverges.)")
    say = "First diverging stage: {}."
    if not _close(enc[0]["in"], rec["enc_in"]):
        return say.format(f"the encoder's input (source embedding + positional encoding): "
                          f"{_embedding_problem(enc[0]['in'], p['src_embed'], src)}")
    problem = _stack(enc, rec["enc_in"], rec["enc_out"], "encoder", "the encoder")
    if problem:
        return say.format(f"the encoder stack: {problem}")
    if not _close(dec[0]["memory"], rec["memory"]):
        if _close(dec[0]["memory"], rec["enc_out"][-1]):
            return say.format("the final encoder norm: the decoder reads the last encoder layer's output "
                              "without the final layer_norm (enc_norm_gamma, enc_norm_beta) that nn.Transformer "
                              "applies")
        return say.format("the memory passed to the decoder: it should be layer_norm(last encoder layer's "
                          "output, enc_norm_gamma, enc_norm_beta)")
    if not _close(dec[0]["in"], rec["dec_in"]):
        return say.format(f"the decoder's input (target embedding + positional encoding): "
                          f"{_embedding_problem(dec[0]['in'], p['tgt_embed'], tgt)}")
    problem = _stack(dec, rec["dec_in"], rec["dec_out"], "decoder", "the decoder")
    if problem:
        return say.format(f"the decoder stack: {problem}")
    no_norm = rec["dec_out"][-1] @ p["W_out"] + p["b_out"]
    if _close(student_output, no_norm):
        return say.format("the final decoder norm: apply layer_norm (dec_norm_gamma, dec_norm_beta) to the "
                          "last decoder layer's output before the output layer")
    return say.format("the final decoder norm or the output layer: encoder and decoder stacks agree with the "
                      "reference; logits = layer_norm(Y, dec_norm_gamma, dec_norm_beta) @ W_out + b_out")
