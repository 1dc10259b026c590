"""Trusted code that runs inside the sandbox for curriculum part 1 (neurons ... cnn).

Two kinds of functions live here, both imported by the child before it is confined:
- substitutes (`ExerciseSpec.depends`): the grader's own version of a function the graded one
  may call, so that one bug is charged once (perceptron_fit is graded with this heaviside);
- drivers (`ExerciseSpec.driver`): `driver(student_module, function_name, *args, **kwargs)`
  calls the student's function several times (optimizer trajectories, many seeded draws).

Only plain tensor operations are used here: a substitute runs under the graded exercise's
forbidden-API tripwires (the conv1d exercise forbids every convolution kernel, so the
substitute conv2d is an unfold and a matmul). Nothing here knows an expected answer.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


# ----------------------------------------------------------------------------- substitutes
def heaviside(z):
    return (z >= 0).to(z.dtype)


def sign(z):
    return (z > 0).to(z.dtype) - (z < 0).to(z.dtype)


STEPS = {"heaviside": heaviside, "sign": sign}


def perceptron_forward(X, W, b, step=heaviside):
    return step(X @ W + b)


def perceptron_update(W, b, x, y, lr):
    err = y - heaviside(x @ W + b)                       # (k,)
    return W + lr * torch.outer(x, err), b + lr * err


def sigmoid(z):
    e = torch.exp(-z.abs())                               # never overflows
    return torch.where(z >= 0, 1 / (1 + e), e / (1 + e))


def tanh(z):
    e = torch.exp(-2 * z.abs())
    return torch.sign(z) * (1 - e) / (1 + e)


def elu(z, alpha=1.0):
    return torch.where(z > 0, z, alpha * torch.expm1(torch.clamp(z, max=0)))


def softmax(z, dim=-1):
    e = torch.exp(z - z.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def linear_forward(X, W, b):
    return X @ W + b


def linear_backward(X, W, dY):
    return dY @ W.T, X.T @ dY, dY.sum(0)


def mlp_forward(X, params):
    for i, (W, b) in enumerate(params):
        X = X @ W + b
        if i < len(params) - 1:
            X = torch.clamp(X, min=0)
    return X


def conv2d(X, K, b=None, stride=1, padding=0):
    N, C, H, Wd = X.shape
    C_out, _, kh, kw = K.shape
    H_out = (H + 2 * padding - kh) // stride + 1
    W_out = (Wd + 2 * padding - kw) // stride + 1
    cols = F.unfold(X, (kh, kw), padding=padding, stride=stride)     # (N, C*kh*kw, L)
    Y = (K.reshape(C_out, -1) @ cols).reshape(N, C_out, H_out, W_out)
    return Y if b is None else Y + b.reshape(1, -1, 1, 1)


# ---------------------------------------------------------------------------------- drivers
# grader/sandbox/wire.py cannot encode two kinds of valid tensors (it calls `t.view(torch.uint8)`,
# which needs dim >= 1 and stride(-1) == 1, and `contiguous()` keeps the odd strides of size-1
# dims): a 0-d tensor (a loss) and e.g. an einsum result of shape (N, C, 1, 1) with strides
# (2, 1, 2, 2). Either would crash the child and cost a correct student the case. So every part-1
# exercise runs through a driver whose result passes through wire_safe: a 0-d tensor t travels as
# the pair (ZERO_D, t.reshape(1)), which the parent's judge turns back (grader.catalog._part1_common),
# and odd strides are made plain (same values, same shape).
ZERO_D = "0-d tensor"


def wire_safe(x):
    if isinstance(x, torch.Tensor):
        if x.dim() == 0:
            return (ZERO_D, x.reshape(1))
        if x.stride(-1) != 1:
            return x.clone(memory_format=torch.contiguous_format)
        return x
    if isinstance(x, tuple):
        return tuple(wire_safe(v) for v in x)
    if isinstance(x, list):
        return [wire_safe(v) for v in x]
    if isinstance(x, dict):
        return {k: wire_safe(v) for k, v in x.items()}
    return x


def safe_call(module, name, *args, **kwargs):
    """A plain call of the student's function, its result made sendable (see wire_safe)."""
    return wire_safe(getattr(module, name)(*args, **kwargs))


def _check_pair(value, function, pair):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        got = type(value).__name__ + (f" of {len(value)} items" if isinstance(value, (tuple, list)) else "")
        raise TypeError(f"{function} must return a pair {pair}, got a {got}")
    return value


def perceptron_forward_driver(module, name, X, W, b, step=None):
    """step is a name ("heaviside", "sign"); None means: rely on the student's default."""
    fn = getattr(module, name)
    return wire_safe(fn(X, W, b) if step is None else fn(X, W, b, step=STEPS[step]))


# In the trajectory drivers, `grads` holds one list of (dW, db) per step (the reference's
# signature then reads like the student's function, with the steps' gradients in a list).
def sgd_trajectory(module, name, params, grads, lr):
    """params after each of len(grads) calls of sgd_step, each fed the previous result."""
    fn = getattr(module, name)
    out = []
    for step_grads in grads:
        params = fn(params, step_grads, lr)
        out.append(params)
    return wire_safe(out)


def momentum_trajectory(module, name, params, grads, velocity, lr, momentum):
    fn = getattr(module, name)
    ps, vs = [], []
    for step_grads in grads:
        params, velocity = _check_pair(fn(params, step_grads, velocity, lr, momentum),
                                       name, "(new_params, new_velocity)")
        ps.append(params)
        vs.append(velocity)
    return wire_safe((ps, vs))


def adam_trajectory(module, name, params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    fn = getattr(module, name)
    ps = []
    for step_grads in grads:
        params, state = _check_pair(fn(params, step_grads, state, lr, betas=betas, eps=eps),
                                    name, "(new_params, new_state)")
        ps.append(params)
    return wire_safe((ps, state))


def glorot_draws(module, name, fan_in, fan_out, generator):
    """`generator` is a list of seeds: one draw per seed (each from its own torch.Generator),
    the first seed again, and one draw with generator=None. Stacked to
    (len(seeds), fan_in, fan_out) when the shapes allow."""
    seeds = generator
    fn = getattr(module, name)
    draws = [fn(fan_in, fan_out, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    again = fn(fan_in, fan_out, generator=torch.Generator().manual_seed(int(seeds[0])))
    default = fn(fan_in, fan_out)
    if all(isinstance(d, torch.Tensor) and d.shape == draws[0].shape and d.dtype == draws[0].dtype for d in draws):
        draws = torch.stack(draws)
    return wire_safe({"draws": draws, "again": again, "default": default})


TRAINING_FUNCTIONS = ("mlp_forward", "mlp_backward", "sgd_step", "momentum_step", "adam_step")


def train_xor_driver(module, name, seed):
    """Trains twice from the same seed, counting calls of the student's own building blocks."""
    calls = {f: 0 for f in TRAINING_FUNCTIONS}
    saved = {}
    for f in TRAINING_FUNCTIONS:
        original = getattr(module, f, None)
        if callable(original):
            saved[f] = original

            def counted(*a, _f=f, _original=original, **k):
                calls[_f] += 1
                return _original(*a, **k)
            setattr(module, f, counted)
    try:
        fn = getattr(module, name)
        params = fn(seed)
        again = fn(seed)
    finally:
        for f, original in saved.items():
            setattr(module, f, original)
    return wire_safe({"params": params, "again": again, "calls": calls})
