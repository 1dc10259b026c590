"""Forbidden-API rules of the elementwise chapters: autograd, neurons, activations, losses, the MLP
(see grader.catalog.rules)."""
from grader.catalog.rules.native import at_native as _at
from grader.catalog.spec import Forbidden

# ----------------------------------------------------------------------------- shared
# A family's kernels (Forbidden.family) less the backward ones, which compute a gradient, not the function.
_FORWARD = r"^(?!.*backward).*"
# Rationale: manual-backprop exercises are about deriving the gradient; autograd would compute it.
# Static: the gradient APIs, the engine, torch.func's transforms, requires_grad=True to a torch function (not
# Function, no_grad, vmap, requires_grad=False). At run time a tensor's .backward()/.requires_grad_(True) trip
# (a student's own backward never does), and the kernel counts the engine, which every backward pass goes
# through; a backward node's own computation, which asks for the engine's current task whenever an input
# needs its gradient, so a node called directly (x.grad_fn(dout), a walk over next_functions: the red
# team's route past the engine) is counted too; and a forward-mode level (torch.func.jvp, forward_ad).
_FUNC_TRANSFORMS = ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize")
_AUTOGRAD_FUNCTIONAL = ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")
_ENGINE = ("torch.autograd.variable.Variable._execution_engine", "torch._C._ImperativeEngine")
_DERIVATIVE_OPS = ("sigmoid_backward", "tanh_backward", "threshold_backward", "leaky_relu_backward", "elu_backward",
                   "gelu_backward", "_softmax_backward_data", "_log_softmax_backward_data", "mse_loss_backward",
                   "nll_loss_backward", "nll_loss2d_backward", "log_sigmoid_backward")
AUTOGRAD = Forbidden(
    name="autograd",
    rationale="this exercise is backprop by hand: compute the gradient from its formula with tensor operations "
              "(your own layer classes and their backward methods are fine), not with torch.autograd, "
              "torch.func, a tensor's .backward(), requires_grad=True or autograd's derivative kernels "
              "(torch.ops.aten.*_backward)",
    static=(*(f"torch.ops.aten.{k}" for k in _DERIVATIVE_OPS), "torch._softmax_backward_data",
            "torch._log_softmax_backward_data",
            "torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional", "torch.autograd.forward_ad",
            "torch.autograd.Variable._execution_engine", "torch._C._EngineBase", *_ENGINE, "kw:requires_grad",
            *(f"{m}.{f}" for m in ("torch.func", "functorch") for f in _FUNC_TRANSFORMS)),
    patch=("torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad", "torch.Tensor.requires_grad_",
           "torch.autograd.forward_ad.make_dual", *(f"torch.autograd.functional.{f}" for f in _AUTOGRAD_FUNCTIONAL),
           *(f"torch.func.{f}" for f in _FUNC_TRANSFORMS), *_ENGINE),
    native=("torch::autograd::Engine::execute", "torch::autograd::get_current_graph_task_exec_info",
            "torch::autograd::forward_ad::enter_dual_level",
            # autograd's own derivative formulas, which torch.ops.aten.sigmoid_backward & co. run without the
            # engine or a graph (the red team's route: every *_grad exercise at full marks)
            *_at(*(f"structured_{f}_backward_out::impl" for f in ("sigmoid", "tanh", "threshold", "leaky_relu",
                                                                   "elu")),
                 "structured_gelu_backward_out_cpu::impl", "structured_softmax_backward_cpu_out::impl",
                 "structured_log_softmax_backward_cpu_out::impl", "structured_nll_loss_backward_out_cpu::impl",
                 "mse_loss_backward", "mse_loss_backward_out", "nll_loss2d_backward_cpu", "nll_loss2d_backward_out_cpu",
                 "log_sigmoid_backward_cpu", "log_sigmoid_backward_cpu_out", "infinitely_differentiable_gelu_backward",
                 "gelu_backwards_nested", "mkldnn_gelu_backward", "mkldnn_relu_backward", "threshold_backwards_nested",
                 *(f"threshold_backward_sparse{k}" for k in ("", "_out", "_compressed", "_compressed_out")),
                 "_masked_softmax_backward_out", "masked_softmax_backward_cpu", "nested_softmax_backward",
                 "_sparse_softmax_backward_data_out", "_sparse_log_softmax_backward_data_out",
                 "softmax_backward_sparse_cpu", "log_softmax_backward_sparse_cpu",
                 "softmax_backward_sparse_input_preprocessing")),
    family=r"(^|_)(sigmoid|tanh|threshold|relu|leaky_relu|elu|gelu|softmax|mse_loss|nll_loss(2d)?)(_.*)?_backward",
    # every derivative formula PyTorch writes in Python is autograd's (embedding_dense_backward too)
    python=r"_backward(_data|_out)?$")

# ----------------------------------------------------------------------------- neurons
# Rationale: heaviside is one comparison; torch.heaviside would be the whole exercise.
HEAVISIDE = Forbidden(
    name="torch.heaviside", rationale="this exercise is the step function itself: build it from a comparison",
    static=("torch.heaviside",),
    patch=("torch.heaviside", "torch.Tensor.heaviside", "torch.Tensor.heaviside_"),
    aten=("aten::heaviside",), native=_at("structured_heaviside_out::impl"), family="heaviside")
# Rationale: sign is two comparisons; torch.sign/sgn would be the whole exercise.
SIGN = Forbidden(
    name="torch.sign", rationale="this exercise is the sign function itself: build it from comparisons",
    static=("torch.sign", "torch.sgn"),
    patch=("torch.sign", "torch.sgn", "torch.Tensor.sign", "torch.Tensor.sgn", "torch.Tensor.sign_",
           "torch.Tensor.sgn_"),
    aten=("aten::sign", "aten::sgn"),
    native=_at("structured_sign_out::impl", "structured_sgn_out::impl", "NestedTensor_sgn", "NestedTensor_sgn_",
               "_foreach_sign_out", "foreach_tensor_sign_slow", "foreach_tensor_sign_slow_",
               *(f"{f}_sparse{k}" for f in ("sign", "sgn") for k in ("", "_", "_out", "_csr", "_csr_", "_csr_out"))),
    family=rf"{_FORWARD}(^|_)(sign|sgn)(_|$)")

# ----------------------------------------------------------------------------- activations
# Rationale: the sigmoid is the exercise; torch.sigmoid (and its aliases) would skip the stable formula.
# F.glu is a times sigmoid(b): glu([1, z]) is the sigmoid itself (the red team's route).
_SIGMOID_APIS = ("torch.sigmoid", "torch.special.expit", "torch.nn.functional.sigmoid", "torch.nn.Sigmoid",
                 "torch.nn.functional.logsigmoid", "torch.nn.functional.glu", "torch.nn.GLU")
SIGMOID = Forbidden(
    name="torch.sigmoid", rationale="this exercise is the sigmoid itself: write it with torch.exp, stably",
    static=_SIGMOID_APIS, patch=(*_SIGMOID_APIS, "torch.Tensor.sigmoid", "torch.Tensor.sigmoid_"),
    aten=("aten::sigmoid", "aten::log_sigmoid", "aten::glu"),
    native=_at("structured_sigmoid_out::impl", "log_sigmoid", "log_sigmoid_out", "log_sigmoid_forward_cpu",
               "log_sigmoid_forward_out_cpu", "structured_glu_out::impl", "glu_jvp", "glu_jvp_out",
               "_foreach_sigmoid_out", "foreach_tensor_sigmoid_slow", "foreach_tensor_sigmoid_slow_", "mkldnn_sigmoid",
               "mkldnn_sigmoid_", "sigmoid_quantized_cpu"),
    family=rf"{_FORWARD}(^|_)(log_)?sigmoid(_|$)")
# Rationale: tanh is the exercise; torch.tanh would skip the stable formula.
TANH = Forbidden(
    name="torch.tanh", rationale="this exercise is tanh itself: write it with torch.exp (or a stable sigmoid), stably",
    static=("torch.tanh", "torch.nn.functional.tanh", "torch.nn.Tanh"),
    patch=("torch.tanh", "torch.nn.functional.tanh", "torch.Tensor.tanh", "torch.Tensor.tanh_", "torch.nn.Tanh"),
    aten=("aten::tanh",),
    # rnn_tanh_cell(z, 0, I, 0) is tanh(z): the recurrent kernels are tanh's too
    native=_at("structured_tanh_out::impl", "NestedTensor_tanh", "NestedTensor_tanh_", "_foreach_tanh_out",
               "foreach_tensor_tanh_slow", "foreach_tensor_tanh_slow_", "mkldnn_tanh", "mkldnn_tanh_",
               "quantized_rnn_tanh_cell", "rnn_tanh", "rnn_tanh_cell", "tanh_quantized_cpu",
               *(f"tanh_sparse{k}" for k in ("", "_", "_out", "_csr", "_csr_", "_csr_out"))),
    family=rf"{_FORWARD}(^|_)tanh(_|$)")
# Rationale: relu is the exercise; torch.relu and nn.ReLU would be the whole answer.
RELU = Forbidden(
    name="torch.relu", rationale="this exercise is relu itself: use torch.clamp, torch.maximum or torch.where",
    static=("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_", "torch.nn.ReLU"),
    patch=("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_",
           "torch.Tensor.relu", "torch.Tensor.relu_", "torch.nn.ReLU"),
    aten=("aten::relu",),
    # leaky_relu with slope 0, add_relu(z, 0) and rnn_relu_cell(z, 0, I, 0) are relu too
    native=_at("relu", "relu_", "relu_out", "NestedTensor_relu", "NestedTensor_relu_", "_add_relu_Scalar_out",
               "add_relu", "add_relu_", "add_relu_out", "leaky_relu_out_quantized_cpu", "leaky_relu_quantized_cpu",
               "leaky_relu_quantized_cpu_", "mkldnn_relu", "mkldnn_relu_", "quantized_rnn_relu_cell",
               "relu_quantized_cpu", "relu_quantized_cpu_", "relu_sparse", "relu_sparse_", "relu_sparse_csr",
               "relu_sparse_csr_", "rnn_relu", "rnn_relu_cell", "structured_leaky_relu_out::impl"),
    family=rf"{_FORWARD}(^|_)relu(_|$)")
# Rationale: leaky relu is the exercise; F.leaky_relu (and prelu/rrelu) would be the whole answer.
LEAKY_RELU = Forbidden(
    name="torch.nn.functional.leaky_relu", rationale="this exercise is leaky relu itself: use torch.where",
    static=("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
            "torch._C._nn.leaky_relu", "torch.nn.functional.rrelu", "torch.nn.functional.prelu"),
    patch=("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
           "torch._C._nn.leaky_relu", "torch.nn.functional.prelu"),
    aten=("aten::leaky_relu", "aten::rrelu", "aten::_prelu"),
    native=_at("structured_leaky_relu_out::impl", "rrelu", "prelu", "_prelu_kernel", "_prelu_kernel_quantized_cpu",
               "leaky_relu_out_quantized_cpu", "leaky_relu_quantized_cpu", "leaky_relu_quantized_cpu_", "mkldnn_prelu",
               "rrelu_", "rrelu_with_noise_cpu", "rrelu_with_noise_cpu_", "rrelu_with_noise_functional",
               "rrelu_with_noise_out_cpu"),
    family=rf"{_FORWARD}(^|_)(leaky_relu|rrelu|prelu)")
# Rationale: elu is the exercise; F.elu and its relatives celu/selu would be the whole answer.
_ELU_APIS = ("torch.nn.functional.elu", "torch.nn.functional.elu_", "torch.nn.ELU", "torch.nn.functional.celu",
             "torch.nn.functional.selu", "torch.celu", "torch.selu", "torch._C._nn.elu")
ELU = Forbidden(
    name="torch.nn.functional.elu",
    rationale="this exercise is elu itself: use torch.where and torch.expm1 or torch.exp",
    static=_ELU_APIS, patch=_ELU_APIS, aten=("aten::elu", "aten::celu", "aten::selu"),
    native=_at("structured_elu_out::impl", "celu", "celu_out", "selu", "celu_", "selu_"),
    family=rf"{_FORWARD}(^|_)(elu|celu|selu)(_|$)")
# Rationale: gelu is the exercise; F.gelu would skip z * Phi(z).
_GELU_APIS = ("torch.nn.functional.gelu", "torch.nn.GELU", "torch._C._nn.gelu")
GELU = Forbidden(
    name="torch.nn.functional.gelu", rationale="this exercise is gelu itself: write z * Phi(z) with torch.erf",
    static=_GELU_APIS, patch=_GELU_APIS, aten=("aten::gelu",),
    native=_at("structured_gelu_out_cpu::impl", "NestedTensor_gelu", "NestedTensor_gelu_", "gelu_quantized_cpu",
               "gelu_quantized_cpu_", "mkldnn_gelu"),
    family=rf"{_FORWARD}(^|_)gelu(_|$)")
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
    aten=("aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax", "aten::_masked_softmax"),
    native=_at("softmax", "softmax_out", "log_softmax", "log_softmax_out", "structured_softmax_cpu_out::impl",
               "structured_log_softmax_cpu_out::impl", "masked_softmax", "masked_softmax_cpu", "_masked_softmax_out",
               "NestedTensor_softmax_dropout", "_safe_softmax", "_sparse_log_softmax", "_sparse_log_softmax_out",
               "_sparse_softmax", "_sparse_softmax_out", "log_softmax_sparse_cpu", "mkldnn_softmax", "softmax_nested",
               "softmax_sparse_cpu", "softmax_sparse_input_preprocessing", "special_log_softmax", "special_softmax"),
    family=rf"{_FORWARD}(^|_)(log_)?softmax(_|$)")
# Rationale: logsumexp is the stable half of log_softmax; writing it is the exercise.
LOGSUMEXP = Forbidden(
    name="torch.logsumexp",
    rationale="log_softmax is z minus the stable log-sum-exp: write that part yourself with the max trick",
    static=("torch.logsumexp", "torch.special.logsumexp"),
    patch=("torch.logsumexp", "torch.special.logsumexp", "torch.Tensor.logsumexp"),
    aten=("aten::logsumexp",),
    native=_at("logsumexp", "logsumexp_out", "special_logsumexp", "special_logsumexp_out"), family="logsumexp")

# ----------------------------------------------------------------------------- losses
# Rationale: the loss is the exercise; PyTorch's loss function would compute all of it. The Huber and
# smooth-L1 losses are the mean squared error, scaled, below their threshold (delta=1e300: the red team's).
_MSE_APIS = ("torch.nn.functional.mse_loss", "torch.nn.MSELoss", "torch._C._nn.mse_loss",
             "torch.nn.functional.huber_loss", "torch.nn.HuberLoss", "torch._C._nn.huber_loss",
             "torch.nn.functional.smooth_l1_loss", "torch.nn.SmoothL1Loss", "torch._C._nn.smooth_l1_loss")
MSE = Forbidden(
    name="torch.nn.functional.mse_loss",
    rationale="this exercise is the mean squared error itself: square the differences and average them",
    static=_MSE_APIS, patch=_MSE_APIS, aten=("aten::mse_loss", "aten::huber_loss", "aten::smooth_l1_loss"),
    native=_at("structured_mse_loss_out::impl", "huber_loss", "huber_loss_out", "structured_smooth_l1_loss_out::impl"),
    family=rf"{_FORWARD}mse_loss")
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
    aten=("aten::nll_loss", "aten::cross_entropy"),
    native=_at("cross_entropy_loss_symint", "nll_loss_symint", "nll_loss_nd_symint", "nll_loss_out",
               "nll_loss2d_forward_cpu", "nll_loss2d_forward_out_cpu",
               "structured_nll_loss_forward_out_cpu::impl", "nll_loss2d_out", "nll_loss2d_symint"),
    # binary cross-entropy and the Poisson loss are other losses: BCE of a probability is only -log p
    family=r"^(?!.*(backward|binary|poisson)).*(^|_)(cross_entropy|nll_loss(2d|_nd)?)(_|$)")

# ----------------------------------------------------------------------------- mlp
# Rationale: the layer is the exercise; nn.Linear / F.linear compute it in PyTorch's (out, in) layout.
LINEAR = Forbidden(
    name="torch.nn.functional.linear",
    rationale="this exercise is the layer itself: X @ W + b with the course's (in, out) weights",
    static=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear", "torch.nn.functional.bilinear"),
    patch=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear"),
    native=_at("linear", "linear_out", "bilinear"))
# Rationale: the optimizer's update rule is the exercise; torch.optim would apply it for you. Its fused
# kernels are reachable as torch._fused_*_ without torch.optim (the red team's adam_step called
# torch._fused_adam_ by a built name): no correct answer calls them, so their entry is counted. Not
# as ATen operators: a rule's `aten` turns the operator watch on for the exercise, every operator
# crossing into Python, and train_xor's child spent 1.5 s where it spent 0.5.
_FUSED = ("_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_")
TORCH_OPTIM = Forbidden(
    name="torch.optim",
    rationale="this exercise is the update rule itself: write it with tensor operations, without torch.optim",
    static=("torch.optim", *(f"torch.{f}" for f in _FUSED)),
    patch=("torch.optim.SGD", "torch.optim.Adam", "torch.optim.AdamW", "torch.optim.RMSprop", "torch.optim.Adagrad",
           "torch.optim.sgd.sgd", "torch.optim.adam.adam", "torch.optim.adamw.adamw", *(f"torch.{f}" for f in _FUSED),
           # the update loops the functional forms call, by their modules' names (the red team's adam_step
           # called torch.optim.adam._single_tensor_adam by a built name)
           "torch.optim.rmsprop.rmsprop", "torch.optim.adagrad.adagrad",
           *(f"torch.optim.{m}.{kind}_{m}" for m in ("sgd", "adam", "rmsprop", "adagrad")
             for kind in ("_single_tensor", "_multi_tensor")),
           *(f"torch.optim.{m}._fused_{m}" for m in ("sgd", "adam", "adagrad"))),
    native=_at(*(f"{f}kernel_cpu_" for f in _FUSED)))
# Rationale: clipping by the global norm is the exercise; torch.nn.utils does it in one call.
CLIP = Forbidden(
    name="torch.nn.utils.clip_grad_norm_",
    rationale="this exercise is gradient clipping itself: compute the global norm and the scale yourself",
    static=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
            "torch.nn.utils.clip_grads_with_norm_", "torch.nn.utils.get_total_norm", "torch.nn.utils.clip_grad"),
    patch=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
           "torch.nn.utils.clip_grads_with_norm_", "torch.nn.utils.get_total_norm",
           # what clip_grad_norm_ itself calls, by their module's own names (the red team's route)
           "torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm",
           "torch.nn.utils.clip_grad._get_total_norm", "torch.nn.utils.clip_grad._clip_grads_with_norm_"),
    aten=("aten::_foreach_norm",))
# Rationale: xavier_uniform_ is the exercise itself (the bound is what is being learnt).
_XAVIER_APIS = ("torch.nn.init.xavier_uniform_", "torch.nn.init.xavier_normal_", "torch.nn.init.xavier_uniform",
                "torch.nn.init.xavier_normal")
XAVIER = Forbidden(
    name="torch.nn.init.xavier_uniform_",
    rationale="this exercise is Glorot's initialisation itself: compute the bound and draw with torch.rand",
    static=_XAVIER_APIS, patch=_XAVIER_APIS)
