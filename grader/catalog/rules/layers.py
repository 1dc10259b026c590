"""Forbidden-API rules of the layer chapters: convolutions and pools, recurrent layers, embeddings,
attention, the transformer (see grader.catalog.rules)."""
from grader.catalog.rules.native import at_native as _at
from grader.catalog.spec import Forbidden

# ----------------------------------------------------------------------------- cnn
# Rationale: the sliding dot product is the exercise; any library convolution computes it.
# The ATen names cover every kernel a convolution reaches (convolution, _convolution,
# mkldnn_convolution, thnn_conv2d, slow_conv*, conv_depthwise2d, ...); legitimate building
# blocks (im2col from F.unfold, unfold, as_strided, mm/bmm from einsum) contain none of them.
# NumPy's and SciPy's convolutions compute it as well, where neither the ATen net nor the kernel
# counters see (they watch libtorch): a red team's conv1d summed np.correlate over the channels.
_OTHER_LIBRARIES = ("numpy.convolve", "numpy.correlate", "scipy.signal.convolve", "scipy.signal.correlate",
                    "scipy.signal.convolve2d", "scipy.signal.correlate2d", "scipy.signal.fftconvolve",
                    "scipy.signal.oaconvolve", "scipy.ndimage.convolve", "scipy.ndimage.correlate",
                    "scipy.ndimage.convolve1d", "scipy.ndimage.correlate1d")
CONVOLUTION = Forbidden(
    name="library convolution",
    rationale="this exercise is the convolution itself: slide the kernel yourself (unfold, einsum, matmul or "
              "loops); F.conv1d/conv2d, nn.Conv* and torch.conv* do all of it",
    static=("torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
            "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d",
            "torch.nn.functional.conv_transpose3d", "torch.nn.functional.conv_tbc", "torch.conv1d", "torch.conv2d",
            "torch.conv3d", "torch.conv_transpose1d", "torch.conv_transpose2d", "torch.conv_tbc",
            "torch.convolution", "torch._convolution", "torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d",
            "torch.nn.ConvTranspose1d", "torch.nn.ConvTranspose2d", "torch.nn.LazyConv1d", "torch.nn.LazyConv2d",
            *_OTHER_LIBRARIES),
    patch=("torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
           "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d", "torch.conv1d",
           "torch.conv2d", "torch.conv3d", "torch.conv_transpose1d", "torch.conv_transpose2d", "torch.convolution",
           "torch._convolution", "torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d",
           # NumPy is loaded with torch; its C entry under np.correlate and np.convolve too
           "numpy.convolve", "numpy.correlate", "numpy._core.multiarray.correlate",
           "numpy._core.multiarray.correlate2"),
    aten=("convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "slow_conv", "conv_depthwise", "conv_transpose"),
    # the entries every conv* reaches, and the backend kernels torch.ops.aten can call directly
    native=_at("convolution", "_convolution", "conv_tbc", *(f"conv{k}{d}d_symint" for k in ("", "_transpose")
                                                            for d in (1, 2, 3)),
               *(f"conv{d}d_padding_symint" for d in (1, 2, 3)), "mkldnn_convolution", "thnn_conv2d",
               "slow_conv2d_forward_cpu", "slow_conv3d_forward_cpu", "slow_conv_dilated2d_cpu",
               "slow_conv_dilated3d_cpu", "slow_conv_transpose3d_cpu", "_convolution_out_symint", "conv_tbc_out",
               "convolution_out_symint", "mkldnn_convolution_out_symint", "slow_conv2d_forward_out_cpu",
               "slow_conv3d_forward_out_cpu", "slow_conv_dilated2d_out_symint", "slow_conv_dilated3d_out_symint",
               "slow_conv_transpose3d_out_cpu", "thnn_conv2d_out",
               "structured_slow_conv_transpose2d_structured_cpu::impl",
               # other backends' entries (MKL-DNN's fused ones: the red team's route), and the backward
               # kernels, whose input and weight gradients are convolutions themselves
               "_convolution_mode_symint", "_nnpack_spatial_convolution", "_nnpack_spatial_convolution_out_symint",
               "conv_depthwise3d_out_symint", "convolution_overrideable", "convolution_overrideable_out_symint",
               "mkldnn_convolution_pointwise", "mkldnn_convolution_pointwise_binary",
               "mkldnn_convolution_pointwise_binary_", "slow_conv3d", "slow_conv3d_out", "_convolution_double_backward",
               "_slow_conv2d_backward_output_mask_out_symint", "conv_tbc_backward", "convolution_backward",
               "convolution_backward_out_symint", "convolution_backward_overrideable",
               "convolution_backward_overrideable_out_symint", "slow_conv2d_backward_cpu",
               "slow_conv2d_backward_out_cpu"),
    family=r"^(?!.*reorder).*(^|_)(convolution|conv[123]d|conv_tbc|conv_transpose[123]d|conv_depthwise[23]d"
           r"|slow_conv[23]d|slow_conv_dilated[23]d|slow_conv_transpose[23]d|thnn_conv2d)(_|$)")
# Rationale: max pooling is the exercise; the library pools would do the windowing for you.
_MAX_POOL_APIS = ("torch.nn.functional.max_pool1d", "torch.nn.functional.max_pool2d",
                  "torch.nn.functional.max_pool3d", "torch.nn.functional.max_pool2d_with_indices",
                  "torch.nn.functional.adaptive_max_pool2d", "torch.nn.functional.fractional_max_pool2d",
                  "torch.max_pool1d", "torch.max_pool2d", "torch.max_pool3d", "torch.nn.MaxPool2d",
                  "torch.nn.AdaptiveMaxPool2d")
MAX_POOL = Forbidden(
    name="torch.nn.functional.max_pool2d",
    rationale="this exercise is max pooling itself: form the windows (unfold or loops) and take their max",
    static=_MAX_POOL_APIS, patch=_MAX_POOL_APIS, aten=("max_pool", "adaptive_max_pool", "fractional_max_pool"),
    native=_at("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool3d_with_indices_cpu",
               "max_pool3d_with_indices_out_cpu",
               "structured_max_pool2d_with_indices_out_cpu::impl", "adaptive_max_pool1d",
               "structured_adaptive_max_pool2d_out_cpu::impl", "structured_fractional_max_pool2d_out_cpu::impl",
               "mkldnn_max_pool2d", "mkldnn_max_pool2d_out", "mkldnn_max_pool3d", "mkldnn_max_pool3d_out",
               *(f"quantized_max_pool{d}d{k}" for d in (1, 2, 3) for k in ("", "_out")),
               "structured_adaptive_max_pool3d_out_cpu::impl", "structured_fractional_max_pool3d_out_cpu::impl"),
    family=r"^(?!.*backward).*(^|_)(adaptive_|fractional_)?max_pool[123]d(_|$)")
# Rationale: average pooling is the exercise; the library pools would do the windowing for you.
_AVG_POOL_APIS = ("torch.nn.functional.avg_pool1d", "torch.nn.functional.avg_pool2d",
                  "torch.nn.functional.avg_pool3d", "torch.nn.functional.adaptive_avg_pool2d",
                  "torch.nn.functional.lp_pool2d", "torch.avg_pool1d", "torch._C._nn.avg_pool2d",
                  "torch.nn.AvgPool2d", "torch.nn.AdaptiveAvgPool2d", "torch.nn.LPPool2d")
AVG_POOL = Forbidden(
    name="torch.nn.functional.avg_pool2d",
    rationale="this exercise is average pooling itself: form the windows (unfold or loops) and take their mean",
    static=_AVG_POOL_APIS, patch=_AVG_POOL_APIS, aten=("avg_pool", "adaptive_avg_pool"),
    native=_at("avg_pool1d", "structured_avg_pool2d_out_cpu::impl", "structured_avg_pool3d_out_cpu::impl",
               "adaptive_avg_pool1d", "adaptive_avg_pool2d_symint", "adaptive_avg_pool2d_cpu",
               "adaptive_avg_pool3d_cpu", "adaptive_avg_pool1d_out", "adaptive_avg_pool2d_out_cpu",
               "adaptive_avg_pool3d_out_cpu", "adaptive_avg_pool3d_symint", "avg_pool1d_out",
               "_adaptive_avg_pool2d_out_symint", "_adaptive_avg_pool3d_out_symint",
               "adaptive_avg_pool2d_quantized_cpu", "adaptive_avg_pool3d_out_quantized_cpu",
               "adaptive_avg_pool3d_quantized_cpu", "avg_pool2d_quantized_cpu",
               "avg_pool3d_quantized_cpu", "mkldnn_adaptive_avg_pool2d", "mkldnn_adaptive_avg_pool2d_out",
               "mkldnn_adaptive_avg_pool2d_out_stub", "mkldnn_avg_pool2d", "mkldnn_avg_pool2d_out",
               "mkldnn_avg_pool3d", "mkldnn_avg_pool3d_out"),
    family=r"^(?!.*backward).*(^|_)(adaptive_)?avg_pool[123]d(_|$)")

# ----------------------------------------------------------------------------- rnn, lstm, gru
_FUNCTIONAL = ("rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "lstm_cell", "gru", "gru_cell",
               "mkldnn_rnn_layer", "_cudnn_rnn", "miopen_rnn", "quantized_lstm", "quantized_gru",
               "quantized_lstm_cell", "quantized_gru_cell", "quantized_rnn_tanh_cell", "quantized_rnn_relu_cell")
_MODULES = ("RNNBase", "RNNCellBase", "RNN", "RNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell")
# PyTorch's LSTM again, for quantization: a float one built of Linear layers and activations (no
# recurrent kernel runs: the red team's route, full marks), and the dynamically quantized layers.
_QUANTIZATION_RECURRENT = (*(f"{m}.{c}" for m in ("torch.ao.nn.quantizable", "torch.nn.quantizable",
                                                  "torch.ao.nn.quantizable.modules.rnn")
                             for c in ("LSTM", "LSTMCell")),
                           "torch.ao.nn.quantizable.modules.rnn._LSTMLayer",
                           "torch.ao.nn.quantizable.modules.rnn._LSTMSingleLayer",
                           *(f"{m}.{c}" for m in ("torch.ao.nn.quantized.dynamic", "torch.nn.quantized.dynamic")
                             for c in ("LSTM", "LSTMCell", "GRU", "GRUCell", "RNNCell")))
# Rationale: the cells and loops are the exercise; PyTorch's recurrent layers and their functional
# kernels (reached through torch.*, torch._VF or torch.ops.aten) would compute the whole answer.
RECURRENT = Forbidden(
    name="torch recurrent layers",
    rationale="the recurrent cells and loops are the exercise: write the gates and the time loop with tensor "
              "operations, without torch.nn.RNN/LSTM/GRU(Cell) or their functional kernels (torch.lstm, "
              "torch.gru_cell, torch._VF...)",
    static=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES), "torch._VF",
            "torch._C._VariableFunctions", *(f"torch.{f}" for f in _FUNCTIONAL),
            *(f"torch.ops.aten.{f}" for f in _FUNCTIONAL), *_QUANTIZATION_RECURRENT),
    patch=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES),
           *(f"torch.{f}" for f in _FUNCTIONAL), *(f"torch._VF.{f}" for f in _FUNCTIONAL[:8]),
           *_QUANTIZATION_RECURRENT),
    native=_at(*_FUNCTIONAL[:8], "mkldnn_rnn_layer", "mkldnn_rnn_layer_out", "quantized_lstm_cell",
               "quantized_gru_cell", "quantized_rnn_tanh_cell", "quantized_rnn_relu_cell", "_thnn_fused_lstm_cell_out",
               "_thnn_fused_gru_cell_out"),
    family=r"^(?!.*backward)(.*(^|_)(lstm|gru|rnn_tanh|rnn_relu)(_cell)?(_|$)|.*_thnn_fused_(lstm|gru)_cell"
           r"|.*mkldnn_rnn_layer)",
)
# Rationale: the run-time net for a fused LSTM kernel reached by a route the tripwires cannot patch
# (getattr on torch._C._VariableFunctions, read-only). On CPU only a whole LSTM sequence reaches the
# dispatcher as one kernel (aten::mkldnn_rnn_layer); RNN, GRU and every cell decompose into matmuls
# first. So it is attached to lstm_forward only: elsewhere it could not fire, and a dispatch mode costs
# about a second per graded exercise (its first use imports torch._dynamo in the child).
LSTM_KERNELS = Forbidden(
    name="torch recurrent kernels",
    rationale="a fused LSTM kernel ran inside your code: write the gates and the time loop with tensor operations",
    aten=("aten::lstm", "aten::mkldnn_rnn", "aten::_cudnn_rnn", "aten::miopen_rnn", "aten::_thnn_fused_lstm",
          "aten::quantized_lstm", "aten::_lstm_mps"), python=r"(^|_)lstm(_|$)")

# ----------------------------------------------------------------------------- tokens
# Rationale: F.embedding is the lookup itself, and its backward kernel is embedding_backward itself.
EMBEDDING = Forbidden(
    name="torch.nn.functional.embedding",
    rationale="looking up rows of E (and scattering their gradients back) is the exercise: use indexing, "
              "index_select, index_add_ or a one-hot product, not F.embedding, nn.Embedding or their kernels",
    static=("torch.nn.functional.embedding", "torch.nn.functional.embedding_bag", "torch.embedding",
            "torch.embedding_bag", "torch._embedding_bag", "torch.nn.Embedding", "torch.nn.EmbeddingBag",
            "torch.nn.modules.sparse.Embedding", "torch.nn.modules.sparse.EmbeddingBag", "torch.ops.aten.embedding",
            "torch.ops.aten.embedding_dense_backward", "torch.ops.aten.embedding_backward",
            "torch.ops.aten._embedding_bag"),
    patch=("torch.nn.functional.embedding", "torch.nn.functional.embedding_bag", "torch.embedding",
           "torch.embedding_bag", "torch.nn.Embedding", "torch.nn.EmbeddingBag",
           "torch.nn.modules.sparse.Embedding", "torch.nn.modules.sparse.EmbeddingBag"),
    native=_at("embedding_symint", "embedding_out_symint", "embedding_bag", "_embedding_bag_cpu", "_embedding_bag_out",
               "_embedding_bag_forward_only_cpu", "_embedding_bag_forward_only_out", "embedding_backward_symint",
               "embedding_dense_backward_cpu", "embedding_dense_backward_out_symint", "NestedTensor_embedding"),
    family=r"^(?!.*(backward|loss|renorm)).*(^|_)embedding(_bag)?(_|$)", python=r"^embedding(_dense_backward)?$")
# Rationale: the run-time net for the embedding kernel reached through torch.ops.aten by a computed name.
# Attached to embedding_lookup, where the kernel is the whole answer (same dispatch-mode cost as above).
EMBEDDING_KERNELS = Forbidden(
    name="torch embedding kernels", rationale="an embedding kernel ran inside your code: index the rows of E yourself",
    aten=("aten::embedding", "aten::_embedding_bag"), python=r"^embedding(_dense_backward)?$")

# ----------------------------------------------------------------------------- attention
# Rationale: scaled_dot_product_attention is the exercise; PyTorch's fused kernel would skip it.
_SDPA_APIS = ("torch.nn.functional.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention")
SDPA = Forbidden(
    name="torch.nn.functional.scaled_dot_product_attention",
    rationale="this exercise is scaled dot-product attention itself: write the scores, mask, softmax and weighted "
              "sum with tensor operations",
    static=_SDPA_APIS, patch=_SDPA_APIS, aten=("scaled_dot_product",),
    native=_at("scaled_dot_product_attention", "_scaled_dot_product_attention_math",
               "_scaled_dot_product_flash_attention_cpu", "_scaled_dot_product_fused_attention_overrideable"),
    family=r"^(?!.*backward).*scaled_dot_product")
# Rationale: nn.MultiheadAttention and its functional form do the projections, head split and merge.
_MHA_APIS = ("torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention",
             "torch.nn.functional.multi_head_attention_forward", "torch._native_multi_head_attention",
             # the float one of quantization, built of Linear layers (no fused kernel runs)
             "torch.ao.nn.quantizable.MultiheadAttention", "torch.nn.quantizable.MultiheadAttention",
             "torch.ao.nn.quantizable.modules.activation.MultiheadAttention")
MHA = Forbidden(
    name="torch.nn.MultiheadAttention",
    rationale="multi-head attention is to be built from your own projections, head split and merge "
              "(nn.MultiheadAttention and F.multi_head_attention_forward do all of it)",
    static=_MHA_APIS, patch=_MHA_APIS,
    aten=("_native_multi_head_attention",),
    native=_at("native_multi_head_attention_cpu", "_native_multi_head_attention_out"))

# ----------------------------------------------------------------------------- transformer
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
    native=_at("transformer_encoder_layer_forward", "_transformer_encoder_layer_fwd_out"),
)
# Rationale: layer_norm is the exercise; only in its own exercise (a helper of the other
# functions may be the student's layer_norm, whose body is checked there, once).
LAYER_NORM = Forbidden(
    name="built-in layer normalisation",
    rationale="layer_norm is the exercise itself: compute the mean, the (biased) variance and the normalisation "
              "with tensor operations",
    static=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.native_layer_norm", "torch.nn.LayerNorm",
            "torch.nn.modules.normalization", "torch.nn.functional.group_norm", "torch.group_norm",
            "torch.nn.GroupNorm", "torch.nn.functional.batch_norm", "torch.batch_norm",
            "torch.nn.functional.instance_norm", "torch.instance_norm"),
    patch=("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.native_layer_norm", "torch.nn.LayerNorm",
           "torch.nn.modules.normalization.LayerNorm", "torch.nn.functional.group_norm", "torch.group_norm",
           "torch.nn.GroupNorm", "torch.nn.functional.batch_norm", "torch.batch_norm",
           "torch.nn.functional.instance_norm", "torch.instance_norm"),
    aten=("layer_norm", "group_norm", "batch_norm", "instance_norm"),
    native=_at("layer_norm_symint", "layer_norm_cpu", "group_norm", "native_group_norm", "native_group_norm_out_symint",
               "math_group_norm", "batch_norm", "batch_norm_cpu", "batch_norm_cpu_out", "_batch_norm_legit_cpu",
               "_batch_norm_legit_cpu_out", "_batch_norm_legit_no_stats_cpu", "_batch_norm_legit_no_stats_cpu_out",
               "_batch_norm_with_update_cpu", "_batch_norm_with_update_cpu_out", "_batch_norm_no_update",
               "_batch_norm_no_update_out", "_batch_norm_legit_no_training", "instance_norm",
               "math_native_layer_norm", "native_layer_norm_out_symint", "nested_layer_norm", "_batch_norm_impl_index",
               "_batch_norm_with_update_functional", "_batch_norm_with_update_mkldnn", "_mkldnn_batch_norm_legit",
               "_mkldnn_batch_norm_legit_no_stats", "_native_batch_norm_legit_functional",
               "_native_batch_norm_legit_no_training_out", "_select_batch_norm_backend", "batch_norm_gather_stats_out",
               "batch_norm_gather_stats_with_counts_out", "batch_norm_stats_out", "batch_norm_update_stats_cpu",
               "batch_norm_update_stats_out", "mkldnn_batch_norm", "quantized_batch_norm", "quantized_batch_norm_out"),
    family=r"^(?!.*backward).*(^|_)(layer|group|batch|instance)_norm(_|$)")
