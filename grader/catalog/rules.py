"""Every forbidden-API rule of the course, one constant each with its rationale: data that a spec
lists, checked statically (grader.pipeline.static: what names and imports prove) and at run time
(tripwires and the ATen dispatch-mode net, grader.sandbox.tripwires). ATen patterns are substrings
of operator names ("aten::lstm" matches aten::lstm_cell): no operator that correct tensor code
reaches contains them. `static` names are proof (they resolve through the imports); `z.relu()` is not (a
student's class may have a relu method): such a shortcut is in `patch` as a torch.Tensor method, where only a
tensor's call trips, and in `aten`. A rule's `rationale` is what the student reads: why, and what to do instead."""
from grader.catalog.spec import Forbidden

# ----------------------------------------------------------------------------- shared
# Rationale: manual-backprop exercises are about deriving the gradient; autograd would compute it.
# Static: the gradient APIs, the engine, torch.func's transforms, requires_grad=True to a torch function (not
# Function, no_grad, vmap, requires_grad=False). At run time a tensor's .backward()/.requires_grad_(True) trip
# (a student's own backward never does), and so does the engine, which every backward pass goes through.
_FUNC_TRANSFORMS = ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize")
_AUTOGRAD_FUNCTIONAL = ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")
_ENGINE = ("torch.autograd.variable.Variable._execution_engine", "torch._C._ImperativeEngine")
AUTOGRAD = Forbidden(
    name="autograd",
    rationale="this exercise is backprop by hand: compute the gradient from its formula with tensor operations "
              "(your own layer classes and their backward methods are fine), not with torch.autograd, "
              "torch.func, a tensor's .backward() or requires_grad=True",
    static=("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional", "torch.autograd.forward_ad",
            "torch.autograd.Variable._execution_engine", "torch._C._EngineBase", *_ENGINE, "kw:requires_grad",
            *(f"{m}.{f}" for m in ("torch.func", "functorch") for f in _FUNC_TRANSFORMS)),
    patch=("torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad", "torch.Tensor.requires_grad_",
           "torch.autograd.forward_ad.make_dual", *(f"torch.autograd.functional.{f}" for f in _AUTOGRAD_FUNCTIONAL),
           *(f"torch.func.{f}" for f in _FUNC_TRANSFORMS), *_ENGINE))

# ----------------------------------------------------------------------------- neurons
# Rationale: heaviside is one comparison; torch.heaviside would be the whole exercise.
HEAVISIDE = Forbidden(
    name="torch.heaviside", rationale="this exercise is the step function itself: build it from a comparison",
    static=("torch.heaviside",),
    patch=("torch.heaviside", "torch.Tensor.heaviside", "torch.Tensor.heaviside_"),
    aten=("aten::heaviside",))
# Rationale: sign is two comparisons; torch.sign/sgn would be the whole exercise.
SIGN = Forbidden(
    name="torch.sign", rationale="this exercise is the sign function itself: build it from comparisons",
    static=("torch.sign", "torch.sgn"),
    patch=("torch.sign", "torch.sgn", "torch.Tensor.sign", "torch.Tensor.sgn", "torch.Tensor.sign_",
           "torch.Tensor.sgn_"),
    aten=("aten::sign", "aten::sgn"))

# ----------------------------------------------------------------------------- activations
# Rationale: the sigmoid is the exercise; torch.sigmoid (and its aliases) would skip the stable formula.
SIGMOID = Forbidden(
    name="torch.sigmoid", rationale="this exercise is the sigmoid itself: write it with torch.exp, stably",
    static=("torch.sigmoid", "torch.special.expit", "torch.nn.functional.sigmoid", "torch.nn.Sigmoid",
            "torch.nn.functional.logsigmoid"),
    patch=("torch.sigmoid", "torch.special.expit", "torch.nn.functional.sigmoid", "torch.Tensor.sigmoid",
           "torch.Tensor.sigmoid_", "torch.nn.Sigmoid", "torch.nn.functional.logsigmoid"),
    aten=("aten::sigmoid", "aten::log_sigmoid"))
# Rationale: tanh is the exercise; torch.tanh would skip the stable formula.
TANH = Forbidden(
    name="torch.tanh", rationale="this exercise is tanh itself: write it with torch.exp (or a stable sigmoid), stably",
    static=("torch.tanh", "torch.nn.functional.tanh", "torch.nn.Tanh"),
    patch=("torch.tanh", "torch.nn.functional.tanh", "torch.Tensor.tanh", "torch.Tensor.tanh_", "torch.nn.Tanh"),
    aten=("aten::tanh",))
# Rationale: relu is the exercise; torch.relu and nn.ReLU would be the whole answer.
RELU = Forbidden(
    name="torch.relu", rationale="this exercise is relu itself: use torch.clamp, torch.maximum or torch.where",
    static=("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_", "torch.nn.ReLU"),
    patch=("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_",
           "torch.Tensor.relu", "torch.Tensor.relu_", "torch.nn.ReLU"),
    aten=("aten::relu",))
# Rationale: leaky relu is the exercise; F.leaky_relu (and prelu/rrelu) would be the whole answer.
LEAKY_RELU = Forbidden(
    name="torch.nn.functional.leaky_relu", rationale="this exercise is leaky relu itself: use torch.where",
    static=("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
            "torch._C._nn.leaky_relu", "torch.nn.functional.rrelu", "torch.nn.functional.prelu"),
    patch=("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
           "torch._C._nn.leaky_relu", "torch.nn.functional.prelu"),
    aten=("aten::leaky_relu", "aten::rrelu", "aten::_prelu"))
# Rationale: elu is the exercise; F.elu and its relatives celu/selu would be the whole answer.
_ELU_APIS = ("torch.nn.functional.elu", "torch.nn.functional.elu_", "torch.nn.ELU", "torch.nn.functional.celu",
             "torch.nn.functional.selu", "torch.celu", "torch.selu", "torch._C._nn.elu")
ELU = Forbidden(
    name="torch.nn.functional.elu",
    rationale="this exercise is elu itself: use torch.where and torch.expm1 or torch.exp",
    static=_ELU_APIS, patch=_ELU_APIS, aten=("aten::elu", "aten::celu", "aten::selu"))
# Rationale: gelu is the exercise; F.gelu would skip z * Phi(z).
_GELU_APIS = ("torch.nn.functional.gelu", "torch.nn.GELU", "torch._C._nn.gelu")
GELU = Forbidden(
    name="torch.nn.functional.gelu", rationale="this exercise is gelu itself: write z * Phi(z) with torch.erf",
    static=_GELU_APIS, patch=_GELU_APIS, aten=("aten::gelu",))
# Rationale: softmax and log_softmax are each other's shortcut (softmax = exp(log_softmax)), so one
# rule covers both; the max trick and the normalisation are the exercise.
SOFTMAX = Forbidden(
    name="torch.softmax",
    rationale="this exercise is the stable softmax itself: subtract the max, exponentiate, normalise "
              "(torch.softmax, torch.log_softmax and their functional forms do all of it)",
    static=("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.nn.Softmax",
            "torch._softmax", "torch.log_softmax", "torch.nn.functional.log_softmax",
            "torch.special.log_softmax", "torch.nn.LogSoftmax", "torch._log_softmax"),
    patch=("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax",
           "torch.nn.Softmax", "torch._softmax", "torch.log_softmax", "torch.nn.functional.log_softmax",
           "torch.special.log_softmax", "torch.Tensor.log_softmax", "torch.nn.LogSoftmax", "torch._log_softmax"),
    aten=("aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax"))
# Rationale: logsumexp is the stable half of log_softmax; writing it is the exercise.
LOGSUMEXP = Forbidden(
    name="torch.logsumexp",
    rationale="log_softmax is z minus the stable log-sum-exp: write that part yourself with the max trick",
    static=("torch.logsumexp", "torch.special.logsumexp"),
    patch=("torch.logsumexp", "torch.special.logsumexp", "torch.Tensor.logsumexp"),
    aten=("aten::logsumexp",))

# ----------------------------------------------------------------------------- losses
# Rationale: the loss is the exercise; PyTorch's loss function would compute all of it.
_MSE_APIS = ("torch.nn.functional.mse_loss", "torch.nn.MSELoss", "torch._C._nn.mse_loss")
MSE = Forbidden(
    name="torch.nn.functional.mse_loss",
    rationale="this exercise is the mean squared error itself: square the differences and average them",
    static=_MSE_APIS, patch=_MSE_APIS, aten=("aten::mse_loss",))
# Rationale: cross_entropy = log_softmax + picking the targets + mean; F.cross_entropy and
# F.nll_loss do the picking and the mean, which are the exercise.
_CROSS_ENTROPY_APIS = ("torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss",
                       "torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss", "torch._C._nn.cross_entropy_loss",
                       "torch._C._nn.nll_loss", "torch._C._nn.nll_loss_nd")
CROSS_ENTROPY = Forbidden(
    name="torch.nn.functional.cross_entropy",
    rationale="this exercise is the cross-entropy itself: take the log-probabilities of the target classes and "
              "average them (torch.log_softmax is allowed; F.cross_entropy and F.nll_loss are not)",
    static=_CROSS_ENTROPY_APIS, patch=_CROSS_ENTROPY_APIS,
    aten=("aten::nll_loss", "aten::cross_entropy"))

# ----------------------------------------------------------------------------- mlp
# Rationale: the layer is the exercise; nn.Linear / F.linear compute it in PyTorch's (out, in) layout.
LINEAR = Forbidden(
    name="torch.nn.functional.linear",
    rationale="this exercise is the layer itself: X @ W + b with the course's (in, out) weights",
    static=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear", "torch.nn.functional.bilinear"),
    patch=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear"))
# Rationale: the optimizer's update rule is the exercise; torch.optim would apply it for you.
TORCH_OPTIM = Forbidden(
    name="torch.optim",
    rationale="this exercise is the update rule itself: write it with tensor operations, without torch.optim",
    static=("torch.optim",),
    patch=("torch.optim.SGD", "torch.optim.Adam", "torch.optim.AdamW", "torch.optim.RMSprop", "torch.optim.Adagrad",
           "torch.optim.sgd.sgd", "torch.optim.adam.adam", "torch.optim.adamw.adamw"))
# Rationale: clipping by the global norm is the exercise; torch.nn.utils does it in one call.
CLIP = Forbidden(
    name="torch.nn.utils.clip_grad_norm_",
    rationale="this exercise is gradient clipping itself: compute the global norm and the scale yourself",
    static=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
            "torch.nn.utils.clip_grads_with_norm_", "torch.nn.utils.get_total_norm", "torch.nn.utils.clip_grad"),
    patch=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
           "torch.nn.utils.clip_grads_with_norm_", "torch.nn.utils.get_total_norm",
           "torch.nn.utils.clip_grad.clip_grad_norm_"),
    aten=("aten::_foreach_norm",))
# Rationale: xavier_uniform_ is the exercise itself (the bound is what is being learnt).
_XAVIER_APIS = ("torch.nn.init.xavier_uniform_", "torch.nn.init.xavier_normal_", "torch.nn.init.xavier_uniform",
                "torch.nn.init.xavier_normal")
XAVIER = Forbidden(
    name="torch.nn.init.xavier_uniform_",
    rationale="this exercise is Glorot's initialisation itself: compute the bound and draw with torch.rand",
    static=_XAVIER_APIS, patch=_XAVIER_APIS)

# ----------------------------------------------------------------------------- cnn
# Rationale: the sliding dot product is the exercise; any library convolution computes it.
# The ATen names cover every kernel a convolution reaches (convolution, _convolution,
# mkldnn_convolution, thnn_conv2d, slow_conv*, conv_depthwise2d, ...); legitimate building
# blocks (im2col from F.unfold, unfold, as_strided, mm/bmm from einsum) contain none of them.
CONVOLUTION = Forbidden(
    name="library convolution",
    rationale="this exercise is the convolution itself: slide the kernel yourself (unfold, einsum, matmul or "
              "loops); F.conv1d/conv2d, nn.Conv* and torch.conv* do all of it",
    static=("torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
            "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d",
            "torch.nn.functional.conv_transpose3d", "torch.nn.functional.conv_tbc", "torch.conv1d", "torch.conv2d",
            "torch.conv3d", "torch.conv_transpose1d", "torch.conv_transpose2d", "torch.conv_tbc",
            "torch.convolution", "torch._convolution", "torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d",
            "torch.nn.ConvTranspose1d", "torch.nn.ConvTranspose2d", "torch.nn.LazyConv1d", "torch.nn.LazyConv2d"),
    patch=("torch.nn.functional.conv1d", "torch.nn.functional.conv2d", "torch.nn.functional.conv3d",
           "torch.nn.functional.conv_transpose1d", "torch.nn.functional.conv_transpose2d", "torch.conv1d",
           "torch.conv2d", "torch.conv3d", "torch.conv_transpose1d", "torch.conv_transpose2d", "torch.convolution",
           "torch._convolution", "torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d"),
    aten=("convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "slow_conv", "conv_depthwise", "conv_transpose"))
# Rationale: max pooling is the exercise; the library pools would do the windowing for you.
_MAX_POOL_APIS = ("torch.nn.functional.max_pool1d", "torch.nn.functional.max_pool2d",
                  "torch.nn.functional.max_pool3d", "torch.nn.functional.max_pool2d_with_indices",
                  "torch.nn.functional.adaptive_max_pool2d", "torch.nn.functional.fractional_max_pool2d",
                  "torch.max_pool1d", "torch.max_pool2d", "torch.max_pool3d", "torch.nn.MaxPool2d",
                  "torch.nn.AdaptiveMaxPool2d")
MAX_POOL = Forbidden(
    name="torch.nn.functional.max_pool2d",
    rationale="this exercise is max pooling itself: form the windows (unfold or loops) and take their max",
    static=_MAX_POOL_APIS, patch=_MAX_POOL_APIS, aten=("max_pool", "adaptive_max_pool", "fractional_max_pool"))
# Rationale: average pooling is the exercise; the library pools would do the windowing for you.
_AVG_POOL_APIS = ("torch.nn.functional.avg_pool1d", "torch.nn.functional.avg_pool2d",
                  "torch.nn.functional.avg_pool3d", "torch.nn.functional.adaptive_avg_pool2d",
                  "torch.nn.functional.lp_pool2d", "torch.avg_pool1d", "torch._C._nn.avg_pool2d",
                  "torch.nn.AvgPool2d", "torch.nn.AdaptiveAvgPool2d", "torch.nn.LPPool2d")
AVG_POOL = Forbidden(
    name="torch.nn.functional.avg_pool2d",
    rationale="this exercise is average pooling itself: form the windows (unfold or loops) and take their mean",
    static=_AVG_POOL_APIS, patch=_AVG_POOL_APIS, aten=("avg_pool", "adaptive_avg_pool"))

# ----------------------------------------------------------------------------- rnn, lstm, gru
_FUNCTIONAL = ("rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "lstm_cell", "gru", "gru_cell",
               "mkldnn_rnn_layer", "_cudnn_rnn", "miopen_rnn", "quantized_lstm", "quantized_gru",
               "quantized_lstm_cell", "quantized_gru_cell", "quantized_rnn_tanh_cell", "quantized_rnn_relu_cell")
_MODULES = ("RNNBase", "RNNCellBase", "RNN", "RNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell")
# Rationale: the cells and loops are the exercise; PyTorch's recurrent layers and their functional
# kernels (reached through torch.*, torch._VF or torch.ops.aten) would compute the whole answer.
RECURRENT = Forbidden(
    name="torch recurrent layers",
    rationale="the recurrent cells and loops are the exercise: write the gates and the time loop with tensor "
              "operations, without torch.nn.RNN/LSTM/GRU(Cell) or their functional kernels (torch.lstm, "
              "torch.gru_cell, torch._VF...)",
    static=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES), "torch._VF",
            "torch._C._VariableFunctions", *(f"torch.{f}" for f in _FUNCTIONAL),
            *(f"torch.ops.aten.{f}" for f in _FUNCTIONAL)),
    patch=(*(f"torch.nn.{m}" for m in _MODULES), *(f"torch.nn.modules.rnn.{m}" for m in _MODULES),
           *(f"torch.{f}" for f in _FUNCTIONAL), *(f"torch._VF.{f}" for f in _FUNCTIONAL[:8])),
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
          "aten::quantized_lstm", "aten::_lstm_mps"))

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
           "torch.nn.modules.sparse.Embedding", "torch.nn.modules.sparse.EmbeddingBag"))
# Rationale: the run-time net for the embedding kernel reached through torch.ops.aten by a computed name.
# Attached to embedding_lookup, where the kernel is the whole answer (same dispatch-mode cost as above).
EMBEDDING_KERNELS = Forbidden(
    name="torch embedding kernels", rationale="an embedding kernel ran inside your code: index the rows of E yourself",
    aten=("aten::embedding", "aten::_embedding_bag"))

# ----------------------------------------------------------------------------- attention
# Rationale: scaled_dot_product_attention is the exercise; PyTorch's fused kernel would skip it.
_SDPA_APIS = ("torch.nn.functional.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention")
SDPA = Forbidden(
    name="torch.nn.functional.scaled_dot_product_attention",
    rationale="this exercise is scaled dot-product attention itself: write the scores, mask, softmax and weighted "
              "sum with tensor operations",
    static=_SDPA_APIS, patch=_SDPA_APIS,
    aten=("scaled_dot_product",))
# Rationale: nn.MultiheadAttention and its functional form do the projections, head split and merge.
_MHA_APIS = ("torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention",
             "torch.nn.functional.multi_head_attention_forward", "torch._native_multi_head_attention")
MHA = Forbidden(
    name="torch.nn.MultiheadAttention",
    rationale="multi-head attention is to be built from your own projections, head split and merge "
              "(nn.MultiheadAttention and F.multi_head_attention_forward do all of it)",
    static=_MHA_APIS, patch=_MHA_APIS,
    aten=("_native_multi_head_attention",))

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
    aten=("layer_norm", "group_norm", "batch_norm", "instance_norm"))
