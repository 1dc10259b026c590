"""Every forbidden-API rule of the course, one constant each with its rationale: data that a spec
lists, checked statically (grader.pipeline.static: what names and imports prove) and at run time
(tripwires and the ATen dispatch-mode net, grader.sandbox.tripwires). ATen patterns are substrings
of operator names ("aten::lstm" matches aten::lstm_cell): no operator that correct tensor code
reaches contains them. `static` names are proof (they resolve through the imports); `z.relu()` is not (a
student's class may have a relu method): such a shortcut is in `patch` as a torch.Tensor method, where only a
tensor's call trips, and in `aten`. `native` names the C++ functions of libtorch whose entry proves the use (the
kernel counts them from outside the child: authoritative, grader.sandbox.native_watch); a rule lists a function only
when no correct answer reaches it. A rule's `rationale` is what the student reads: why, and what to do instead.
Not mapped to kernels (Python-level APIs whose kernels correct code uses too): torch.optim, clip_grad_norm_, the
xavier initialisers, F.multi_head_attention_forward and the nn.Transformer classes' Python paths.
The rules live in two modules, by the chapters that use them: elementwise (autograd, neurons, activations,
losses, the MLP) and layers (convolutions and pools, recurrent layers, embeddings, attention, the transformer).
Each rule named here also forbids PyTorch's own Python implementations of its computation
(grader.catalog.rules.python_kernels)."""
from grader.catalog.rules.python_kernels import with_implementations
from grader.catalog.spec import Forbidden
from grader.catalog.rules.elementwise import (
    AUTOGRAD, HEAVISIDE, SIGN, SIGMOID, TANH, RELU, LEAKY_RELU, ELU, GELU, SOFTMAX, LOGSUMEXP, MSE, CROSS_ENTROPY,
    LINEAR, TORCH_OPTIM, CLIP, XAVIER,
)
from grader.catalog.rules.layers import (
    CONVOLUTION, MAX_POOL, AVG_POOL, RECURRENT, LSTM_KERNELS, EMBEDDING, EMBEDDING_KERNELS, SDPA, MHA,
    TRANSFORMER_MODULES, LAYER_NORM,
)

__all__ = [
    "Forbidden",
    "AUTOGRAD", "HEAVISIDE", "SIGN", "SIGMOID", "TANH", "RELU", "LEAKY_RELU", "ELU", "GELU", "SOFTMAX", "LOGSUMEXP",
    "MSE", "CROSS_ENTROPY", "LINEAR", "TORCH_OPTIM", "CLIP", "XAVIER", "CONVOLUTION", "MAX_POOL", "AVG_POOL",
    "RECURRENT", "LSTM_KERNELS", "EMBEDDING", "EMBEDDING_KERNELS", "SDPA", "MHA", "TRANSFORMER_MODULES",
    "LAYER_NORM",
]

for _name in __all__[1:]:
    globals()[_name] = with_implementations(globals()[_name])
