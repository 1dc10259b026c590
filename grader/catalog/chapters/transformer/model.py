"""transformer.transformer_forward: the whole model, compared with nn.Transformer holding the
student's weights; one more case, the capstone, trains the student's model in the sandbox and
checks that it learns (grader.sandbox.trusted.capstone_training, grader.catalog.judges.capstone)."""
from __future__ import annotations

import torch

from grader.catalog.chapters.transformer.layers import LAYERS_FORBIDDEN
from grader.catalog.inputs import model_params, randint
from grader.catalog.judges import capstone as capstone_judge
from grader.catalog.probes.sublayers import localise_model
from grader.catalog.references import equations as M
from grader.catalog.references.equations import variant
from grader.catalog.references.torch_modules import ref_transformer_forward, reference_logits
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, Verdict, substitutes
from grader.pipeline.compare import compare_outputs
from grader.pipeline.feedback import comparisons_message
from grader.sandbox.trusted.capstone_training import task

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


def judge_model(case, value, ref, tol) -> Verdict:
    """The capstone's verdict for its case; the usual comparison for every other case.
    (A spec's judge replaces the comparison for all its cases.)"""
    if "capstone" in case.kwargs:
        return capstone_judge.verdict(case.kwargs["capstone"], value, ref)
    comps = compare_outputs(value, ref, ("logits",), tol)
    if not all(c.ok for c in comps) and ref.dtype == torch.float64:
        # The contract's positional_encoding returns float32, which the reference adds as the course's
        # code does; a float64 model may compute the encoding in float64 itself: right as well.
        exact = reference_logits(case.args[2], case.args[3], pe64=True)(case.args[0], case.args[1])
        also = compare_outputs(value, exact.to(ref.dtype), ("logits",), tol)
        comps = also if all(c.ok for c in also) else comps
    return Verdict(all(c.ok for c in comps), comparisons_message(comps), comps)


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
