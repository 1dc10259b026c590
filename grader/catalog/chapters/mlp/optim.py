"""The mlp chapter's optimizers: sgd_step, momentum_step, adam_step (clip_grad_norm: clip.py).

The steps are compared as trajectories: a driver in the sandbox (grader.sandbox.trusted.
optim_trajectories) calls the student's step once per gradient of the case, feeding each result
into the next call, and the parameters after every step are compared with torch.optim's, run in
float64 with the same hyperparameters. `grads` in a case is one list of (dW, db) per step;
`params[k]` in the feedback is the parameter list after step k + 1."""
from __future__ import annotations

import torch
from torch.optim.adam import _single_tensor_adam
from torch.optim.optimizer import _get_scalar_dtype
from torch.optim.sgd import sgd as sgd_functional

from grader.catalog.inputs import layer_list as layers
from grader.catalog.inputs import zeros_like_layers as zeros_like
from grader.catalog.rules import TORCH_OPTIM
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake
from grader.trees import tree_map

F32, F64 = torch.float32, torch.float64
TRAJECTORIES = "grader.sandbox.trusted.optim_trajectories"


def _torch_run(params, grads, update, read_state=None):
    """Run one of torch.optim's update functions in float64 over the gradient sequence; parameters
    (and the optimizer's per-tensor state, through `read_state(state, i)`) after every step, in the
    inputs' dtype. `update(flat params, flat grads, state)` is one optimizer step on every tensor."""
    dtype = params[0][0].dtype
    leaves = [[t.detach().double().clone() for t in layer] for layer in params]
    flat = [t for layer in leaves for t in layer]
    state, traj, states = {}, [], []
    with torch.no_grad():
        for step_grads in grads:
            update(flat, [g.detach().double().clone() for layer in step_grads for g in layer], state)
            traj.append([tuple(t.detach().clone().to(dtype) for t in layer) for layer in leaves])
            if read_state is not None:
                per_tensor = iter([_to(read_state(state, i), dtype) for i in range(len(flat))])
                states.append([tuple(next(per_tensor) for _ in layer) for layer in leaves])
    return traj, states


# The path torch.optim.SGD and torch.optim.Adam take for CPU tensors (foreach and fused are off on
# CPU), called with the arguments their step() passes and their state initialised as they initialise
# it: the same operations, bitwise the same results (tests/test_catalog_mlp_references.py compares
# them with the optimizer objects). Not the objects themselves: constructing an Optimizer imports
# torch._dynamo (about a second of the grading process, holding the GIL), and so does the functional
# torch.optim.adam.adam, wrapped for dynamo; torch.optim.sgd.sgd is not.
def _sgd_update(lr, momentum=0):
    def update(flat, flat_grads, state):
        buffers = state.setdefault("momentum_buffer", [None] * len(flat)) if momentum != 0 else []
        sgd_functional(flat, flat_grads, buffers, has_sparse_grad=False, foreach=False, fused=False,
                       weight_decay=0, momentum=momentum, lr=lr, dampening=0, nesterov=False, maximize=False)
    return update


def _adam_update(lr, betas, eps):
    beta1, beta2 = betas

    def update(flat, flat_grads, state):
        if not state:
            state["step"] = [torch.tensor(0.0, dtype=_get_scalar_dtype()) for _ in flat]
            state["exp_avg"] = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in flat]
            state["exp_avg_sq"] = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in flat]
        _single_tensor_adam(flat, flat_grads, state["exp_avg"], state["exp_avg_sq"], [], state["step"], None, None,
                            amsgrad=False, has_complex=False, beta1=beta1, beta2=beta2, lr=lr, weight_decay=0,
                            eps=eps, maximize=False, capturable=False, differentiable=False,
                            decoupled_weight_decay=False)
    return update


def _to(x, dtype):
    return tree_map(lambda t: t.detach().clone().to(dtype), x)


def _manual_run(params, grads, step):
    """A mistake's trajectory: step(p, g, slot, k) -> (new p, new slot) for every tensor, in float64."""
    dtype = params[0][0].dtype
    ps = [[t.double() for t in layer] for layer in params]
    slots = [[None for _ in layer] for layer in params]
    traj, states = [], []
    for k, step_grads in enumerate(grads, start=1):
        for i, layer in enumerate(step_grads):
            for j, g in enumerate(layer):
                ps[i][j], slots[i][j] = step(ps[i][j], g.double(), slots[i][j], k)
        traj.append([tuple(t.to(dtype) for t in layer) for layer in ps])
        states.append([tuple(_to(s, dtype) for s in layer) for layer in slots])
    return traj, states


# ---------------------------------------------------------------------------------- SGD
def ref_sgd_step(params, grads, lr):
    """torch.optim.SGD(lr=lr), one step per gradient."""
    return _torch_run(params, grads, _sgd_update(lr))[0]


def sgd_cases(gen):
    two = [2, 4, 3]
    return [
        Case("2 layers, 3 steps", (layers(gen, two), [layers(gen, two) for _ in range(3)], 0.1),
             note="params[k] is after step k+1"),
        Case("1 layer, 1 step", (layers(gen, [3, 2]), [layers(gen, [3, 2])], 0.5)),
        Case("3 layers, 4 steps", (layers(gen, [4, 5, 3, 2]), [layers(gen, [4, 5, 3, 2]) for _ in range(4)], 0.01)),
        Case("float64, 3 steps", (layers(gen, two, F64), [layers(gen, two, F64) for _ in range(3)], 0.2)),
    ]


def _sgd_mistake(sign=1.0, use_lr=True, bias=True):
    def fn(params, grads, lr):
        def step(p, g, slot, k):
            is_bias = p.dim() == 1
            if is_bias and not bias:
                return p, slot
            return p - sign * (lr if use_lr else 1.0) * g, slot
        return _manual_run(params, grads, step)[0]
    return fn


SGD_STEP = ExerciseSpec(
    id="mlp.sgd_step",
    points=1,
    cases=sgd_cases,
    reference=ref_sgd_step,
    reference_source="torch.optim.SGD(lr=lr) in float64, one step per gradient",
    outputs=("params",),
    forbidden=(TORCH_OPTIM,),
    driver=f"{TRAJECTORIES}:sgd_trajectory",
    mistakes=(
        KnownMistake("gradient ascent (sign flipped)", "move against the gradient: W - lr * dW",
                     _sgd_mistake(sign=-1.0)),
        KnownMistake("learning rate ignored", "scale the step by lr: W - lr * dW", _sgd_mistake(use_lr=False)),
        KnownMistake("biases not updated", "every parameter moves, the biases too: b - lr * db",
                     _sgd_mistake(bias=False)),
    ),
)


# ------------------------------------------------------------------------------ momentum
def ref_momentum_step(params, grads, velocity, lr, momentum):
    """torch.optim.SGD(lr, momentum) trajectory and its momentum buffers after every step."""
    return _torch_run(params, grads, _sgd_update(lr, momentum), lambda st, i: st["momentum_buffer"][i])


def momentum_cases(gen):
    two, three = [3, 4, 2], [4, 3, 3, 2]
    p, p1, p3, p64 = layers(gen, two), layers(gen, [2, 3]), layers(gen, three), layers(gen, two, F64)
    return [
        Case("2 layers, 4 steps, momentum 0.9", (p, [layers(gen, two) for _ in range(4)], zeros_like(p), 0.1, 0.9),
             note="params[k] and velocity[k] are after step k+1"),
        Case("1 layer, 1 step", (p1, [layers(gen, [2, 3])], zeros_like(p1), 0.5, 0.5)),
        Case("3 layers, 3 steps, momentum 0.5",
             (p3, [layers(gen, three) for _ in range(3)], zeros_like(p3), 0.05, 0.5)),
        Case("float64, 5 steps", (p64, [layers(gen, two, F64) for _ in range(5)], zeros_like(p64), 0.2, 0.8)),
    ]


def _momentum_mistake(kind):
    def fn(params, grads, velocity, lr, momentum):
        def step(p, g, v, k):
            v = torch.zeros_like(p) if v is None else v
            if kind == "dampening":
                v = momentum * v + (1 - momentum) * g
            elif kind == "lr inside":
                v = momentum * v + lr * g
                return p - v, v
            elif kind == "negated":
                v = momentum * v - g
                return p + lr * v, v
            elif kind == "not carried":
                v = g
            return p - lr * v, v
        return _manual_run(params, grads, step)
    return fn


MOMENTUM_STEP = ExerciseSpec(
    id="mlp.momentum_step",
    points=2,
    cases=momentum_cases,
    reference=ref_momentum_step,
    reference_source="torch.optim.SGD(lr=lr, momentum=momentum) in float64 (its momentum_buffer is the velocity)",
    outputs=("params", "velocity"),
    forbidden=(TORCH_OPTIM,),
    driver=f"{TRAJECTORIES}:momentum_trajectory",
    mistakes=(
        KnownMistake("momentum with dampening", "PyTorch's momentum adds the raw gradient, v = momentum * v + g, "
                     "not (1 - momentum) * g", _momentum_mistake("dampening")),
        KnownMistake("lr inside the velocity", "keep lr out of the velocity: v = momentum * v + g, then "
                     "p = p - lr * v (the parameters agree, the returned velocity does not)",
                     _momentum_mistake("lr inside")),
        KnownMistake("velocity with the opposite sign", "the velocity accumulates +g: v = momentum * v + g and "
                     "p = p - lr * v", _momentum_mistake("negated")),
        KnownMistake("velocity not carried over", "add momentum times the previous velocity: v = momentum * v + g "
                     "(the velocity you are given, not zeros)", _momentum_mistake("not carried")),
    ),
)


# ----------------------------------------------------------------------------------- Adam
def ref_adam_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    """torch.optim.Adam trajectory, and the final exp_avg, exp_avg_sq and step as m, v, t."""
    traj, states = _torch_run(params, grads, _adam_update(lr, tuple(betas), eps),
                              lambda st, i: (st["exp_avg"][i], st["exp_avg_sq"][i]))
    last = states[-1]
    return traj, {"m": [tuple(mv[0] for mv in layer) for layer in last],
                  "v": [tuple(mv[1] for mv in layer) for layer in last], "t": state["t"] + len(grads)}


def adam_cases(gen):
    two = [3, 4, 2]
    p = layers(gen, two)
    s0 = lambda params: {"m": zeros_like(params), "v": zeros_like(params), "t": 0}  # noqa: E731
    p_tiny, p1, p64 = layers(gen, two), layers(gen, [2, 3]), layers(gen, two, F64)
    return [
        Case("2 layers, 4 steps, defaults", (p, [layers(gen, two) for _ in range(4)], s0(p), 0.01),
             note="params[k] is after step k+1; state is the final one"),
        Case("betas (0.8, 0.99), 3 steps", (p1, [layers(gen, [2, 3]) for _ in range(3)], s0(p1), 0.05),
             {"betas": (0.8, 0.99)}),
        Case("tiny gradients, eps 1e-3", (p_tiny, [layers(gen, two, scale=1e-3) for _ in range(3)], s0(p_tiny), 0.01),
             {"eps": 1e-3}, note="gradients of order 1e-3: where eps sits matters", atol=1e-9, rtol=1e-4),
        Case("float64, 5 steps", (p64, [layers(gen, two, F64) for _ in range(5)], s0(p64), 0.02)),
    ]


def _adam_mistake(kind):
    def fn(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
        b1, b2 = (betas[1], betas[0]) if kind == "betas swapped" else betas

        def step(p, g, slot, k):
            m, v = slot if slot is not None else (torch.zeros_like(p), torch.zeros_like(p))
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            t = k - 1 if kind == "t late" else k
            m_hat, v_hat = (m, v) if kind == "no correction" else (m / (1 - b1 ** t), v / (1 - b2 ** t))
            denom = torch.sqrt(v_hat) + eps
            if kind == "eps inside":
                denom = torch.sqrt(v_hat + eps)
            elif kind == "eps on raw v":                       # sqrt((v + eps) / (1 - beta2^t))
                denom = torch.sqrt((v + eps) / (1 - b2 ** t))
            elif kind == "eps on sqrt v":                      # Kingma & Ba's "efficient" form, TensorFlow's:
                denom = (torch.sqrt(v) + eps) / (1 - b2 ** t) ** 0.5   # lr_t * m / (sqrt(v) + eps)
            return p - lr * m_hat / denom, (m, v)
        traj, slots = _manual_run(params, grads, step)
        last = slots[-1]
        return traj, {"m": [tuple(s[0] for s in layer) for layer in last],
                      "v": [tuple(s[1] for s in layer) for layer in last], "t": state["t"] + len(grads)}
    return fn


ADAM_STEP = ExerciseSpec(
    id="mlp.adam_step",
    points=3,
    cases=adam_cases,
    reference=ref_adam_step,
    reference_source="torch.optim.Adam(lr, betas, eps) in float64 (exp_avg, exp_avg_sq and step are m, v and t)",
    outputs=("params", "state"),
    forbidden=(TORCH_OPTIM,),
    driver=f"{TRAJECTORIES}:adam_trajectory",
    mistakes=(
        KnownMistake("no bias correction", "divide m by (1 - beta1^t) and v by (1 - beta2^t): both start at 0, "
                     "so without the correction the first steps are far too small", _adam_mistake("no correction")),
        KnownMistake("eps inside the square root", "add eps after the square root: sqrt(v_hat) + eps, "
                     "as torch.optim.Adam does", _adam_mistake("eps inside")),
        KnownMistake("betas swapped", "beta1 (0.9) averages the gradients into m; beta2 (0.999) averages "
                     "their squares into v", _adam_mistake("betas swapped")),
        KnownMistake("bias correction with the old t", "increment t first: the first step uses t = 1, "
                     "so that 1 - beta^t is not 0", _adam_mistake("t late")),
        # Two precision habits of textbooks: eps added to the raw v inside the root, and the paper's
        # "efficient" update lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps) (Kingma & Ba,
        # end of section 2; TensorFlow's Adam), whose eps is PyTorch's eps / sqrt(1 - beta2^t).
        KnownMistake("eps added to v before the bias correction", "add eps after the square root of the "
                     "corrected v: m_hat / (sqrt(v_hat) + eps); inside sqrt((v + eps) / (1 - beta2^t)) it is "
                     "divided by 1 - beta2^t, 1000 times larger at the first step", _adam_mistake("eps on raw v")),
        KnownMistake("eps added to sqrt(v), not sqrt(v_hat)", "the update lr * sqrt(1 - beta2^t) / (1 - beta1^t) "
                     "* m / (sqrt(v) + eps) adds eps to the uncorrected sqrt(v): as PyTorch writes it, its eps is "
                     "eps / sqrt(1 - beta2^t), 30 times larger at first; compute m_hat / (sqrt(v_hat) + eps), "
                     "as torch.optim.Adam does", _adam_mistake("eps on sqrt v")),
    ),
)
