"""Forbidden-API rules of the transformer chapter, one per constant, each with its rationale
(the shared ones, such as nn.MultiheadAttention, are in grader.catalog.rules)."""
from grader.catalog.spec import Forbidden

# Rationale: these modules are the chapter's answer: a layer or a whole model in one call.
TRANSFORMER_MODULES = Forbidden(
    name="torch.nn.Transformer",
    rationale="the encoder, decoder and whole model are built here from your own sub-layers; PyTorch's "
              "Transformer classes (and their fused kernels) are the references, not building blocks",
    static=tuple(f"torch.nn.{c}" for c in ("Transformer", "TransformerEncoder", "TransformerDecoder",
                                           "TransformerEncoderLayer", "TransformerDecoderLayer"))
    + ("torch.nn.modules.transformer", "torch._transformer_encoder_layer_fwd"),
    patch=tuple(f"{m}.{c}" for m in ("torch.nn", "torch.nn.modules.transformer")
                for c in ("Transformer", "TransformerEncoder", "TransformerDecoder",
                          "TransformerEncoderLayer", "TransformerDecoderLayer"))
    + ("torch._transformer_encoder_layer_fwd",),
    # No legitimate tensor code reaches these fused operators.
    aten=("_transformer_encoder_layer_fwd", "_transformer_decoder_only_layer_fwd"),
)

# Rationale: layer_norm is the exercise; only in its own exercise (a helper of the other
# functions may be the student's layer_norm, whose body is checked here, once).
LAYER_NORM = Forbidden(
    name="built-in layer normalisation",
    rationale="layer_norm is the exercise itself: compute the mean, the (biased) variance and the "
              "normalisation with tensor operations",
    static=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.native_layer_norm", "torch.nn.LayerNorm",
            "torch.nn.modules.normalization", "torch.nn.functional.group_norm", "torch.group_norm",
            "torch.nn.GroupNorm", "torch.nn.functional.batch_norm", "torch.batch_norm",
            "torch.nn.functional.instance_norm", "torch.instance_norm"),
    patch=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.native_layer_norm", "torch.nn.LayerNorm",
           "torch.nn.modules.normalization.LayerNorm", "torch.nn.functional.group_norm", "torch.group_norm",
           "torch.nn.GroupNorm", "torch.nn.functional.batch_norm", "torch.batch_norm",
           "torch.nn.functional.instance_norm", "torch.instance_norm"),
    # Mean/var/sqrt code reaches aten::mean, var, sub, div, sqrt...; none of these names contain these.
    aten=("layer_norm", "group_norm", "batch_norm", "instance_norm"),
)
