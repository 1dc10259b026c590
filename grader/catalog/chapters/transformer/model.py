"""transformer.transformer_forward: the whole model, compared with nn.Transformer holding the
student's weights; one more case, the capstone, trains the student's model in the sandbox and
checks that it learns (grader.sandbox.trusted.capstone_training, grader.catalog.judges.capstone)."""
from __future__ import annotations

import torch

from grader.catalog.chapters.attention import POSITIONAL_ENCODING
from grader.catalog.chapters.transformer.layers import LAYERS_FORBIDDEN
from grader.catalog.inputs import model_params, randint
from grader.catalog.judges import capstone as capstone_judge
from grader.catalog.probes.sublayers import localise_model
from grader.catalog.references import equations as M
from grader.catalog.references.equations import variant
from grader.catalog.references.float64 import to64
from grader.catalog.references.torch_modules import ref_transformer_forward, reference_logits
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, Verdict, substitutes
from grader.pipeline.compare import compare_outputs
from grader.pipeline.feedback import comparisons_message
from grader.sandbox.trusted.capstone_training import task
from grader.sandbox.trusted.positional_encoding import encoding64
from grader.sandbox.trusted.tracing import TRACE_ACCESSOR

F32, F64 = torch.float32, torch.float64


# ----------------------------------------------------------------------------- transformer_forward
def model_cases(gen):
    def case(name, B, S, T, v_src, v_tgt, d, h, n_enc, n_dec, dtype=F32):
        p = model_params(gen, v_src, v_tgt, d, 2 * d, n_enc, n_dec, dtype)
        return Case(name, (randint(gen, 0, v_src, B, S), randint(gen, 0, v_tgt, B, T), p, h))
    return [
        case("1 + 1 layers, d_model=16, 2 heads", 2, 5, 4, 11, 9, 16, 2, 1, 1),
        case("2 + 2 layers, 4 heads", 2, 7, 6, 13, 10, 16, 4, 2, 2),
        case("T_tgt=1: only <bos>", 3, 4, 1, 7, 7, 8, 2, 1, 1),
        case("float64, 2 encoder and 1 decoder layers", 2, 6, 5, 9, 12, 32, 4, 2, 1, F64),
        Case("capstone: learns to reverse sequences", (),
             {"capstone": task(int(randint(gen, 0, 1 << 30, 1)))},
             note="trains your transformer_forward with Adam (autograd through it) and checks it learns"),
    ]


MODEL_TOLERANCE = {F32: (5e-5, 2e-4), F64: (1e-9, 1e-8)}


def ref_model(src_ids=None, tgt_ids=None, params=None, num_heads=None, capstone=None):
    if capstone is not None:
        return capstone_judge.reference(capstone)
    return ref_transformer_forward(src_ids, tgt_ids, params, num_heads)


def judge_model(case, value, ref, tol, probe=None) -> Verdict:
    """The capstone's verdict for its case; the usual comparison for every other case.
    (A spec's judge replaces the comparison for all its cases.)"""
    if "capstone" in case.kwargs:
        return capstone_judge.verdict(case.kwargs["capstone"], value, ref)
    comps = compare_outputs(value, ref, ("logits",), tol)
    if not all(c.ok for c in comps) and ref.dtype == torch.float64:
        src, tgt, params, heads = case.args[:4]
        for encodings in _other_encodings(case, probe):
            other = reference_logits(params, heads, pe64=True, encodings=encodings)(src, tgt)
            also = compare_outputs(value, other.to(ref.dtype), ("logits",), tol)
            if all(c.ok for c in also):
                comps = also
                break
    return Verdict(all(c.ok for c in comps), comparisons_message(comps), comps)


def _other_encodings(case, probe):
    """The positional encodings a right float64 model may add besides positional_encoding's float32
    result, which the reference adds as the course's code does: the encoding in float64 (None: a
    model that computes it itself), and the encoding this model did add where it is one that
    positional_encoding's own exercise accepts and the same for every sequence of the batch (its
    own positional_encoding written another way: the Annotated Transformer's and d2l's float32
    arithmetic rounds otherwise). That one is read from the inputs of its first encoder_layer and
    decoder_layer calls (grader.sandbox.trusted.tracing): their embedding part is the parent's own,
    and the model's output is then held to float64's tolerance with that encoding."""
    yield None
    try:        # what the child sent is data: whatever it is, a verdict comes of it, never a grader fault
        added = _added_encodings(case, probe) if probe is not None else None
    except Exception:
        added = None
    if added is not None:
        yield added


def _added_encodings(case, probe):
    src, tgt, params = case.args[:3]
    if src.shape[0] < 2:
        return None
    trace = probe(TRACE_ACCESSOR)
    firsts = [next((c for c in trace or () if isinstance(c, dict) and c.get("fn") == fn), None)
              for fn in ("encoder_layer", "decoder_layer")]
    p, added = to64(params), []
    for first, table, ids in zip(firsts, (p["src_embed"], p["tgt_embed"]), (src, tgt)):
        x = first.get("in") if first else None
        if not isinstance(x, torch.Tensor) or x.dtype != F64 or tuple(x.shape) != (*ids.shape, table.shape[1]):
            return None
        pe = x - table[ids]
        if not torch.allclose(pe, pe[:1].expand_as(pe), rtol=0, atol=1e-12) or not _accepted_encoding(pe[0]):
            return None
        added.append(pe[0])
    return tuple(added)


def _accepted_encoding(pe) -> bool:
    atol, rtol = POSITIONAL_ENCODING.tol(F32)
    return torch.allclose(pe, encoding64(*pe.shape), rtol=rtol, atol=atol)


TRANSFORMER_FORWARD_SPEC = ExerciseSpec(
    id="transformer.transformer_forward", points=5, cases=model_cases, reference=ref_model,
    reference_source="torch.nn.Transformer(batch_first=True, dropout=0) with your weights, behind the grader's "
                     "embedding + positional encoding and before its output layer, in float64",
    outputs=("logits",), tolerance=MODEL_TOLERANCE, forbidden=LAYERS_FORBIDDEN,
    depends=substitutes("multi_head_attention", "causal_mask", "positional_encoding", "layer_norm",
                          "add_and_norm", "feed_forward", "encoder_layer", "decoder_layer"),
    driver="grader.sandbox.trusted.capstone_training:driver", judge=judge_model, localise=localise_model,
    call_timeout=30.0,             # the capstone trains for a few seconds
    mistakes=(
        KnownMistake("positional encoding not added", "add positional_encoding(T, d_model) to the embeddings "
                     "of both stacks' inputs: attention alone cannot tell positions apart",
                     variant(M.transformer_forward, pe_times=0)),
        KnownMistake("positional encoding added twice", "add the positional encoding once, to the embeddings; "
                     "encoder_layer and decoder_layer do not add it again", variant(M.transformer_forward, pe_times=2)),
        KnownMistake("final encoder and decoder norms missing", "nn.Transformer applies a final layer_norm after "
                     "each stack: enc_norm_gamma/beta on the memory, dec_norm_gamma/beta before W_out",
                     variant(M.transformer_forward, enc_norm=False, dec_norm=False)),
        KnownMistake("final encoder norm missing", "normalise the last encoder layer's output with enc_norm_gamma "
                     "and enc_norm_beta: that is the memory", variant(M.transformer_forward, enc_norm=False)),
        KnownMistake("final decoder norm missing", "normalise the last decoder layer's output with dec_norm_gamma "
                     "and dec_norm_beta before the output layer", variant(M.transformer_forward, dec_norm=False)),
        KnownMistake("embeddings scaled by sqrt(d_model)", "the course (and this reference) adds the positional "
                     "encoding to the unscaled embeddings", variant(M.transformer_forward, scale_embed=True)),
        KnownMistake("layers not chained", "each layer transforms the previous layer's output; you gave every "
                     "layer the embeddings", variant(M.transformer_forward, chain=False)),
    ),
)
