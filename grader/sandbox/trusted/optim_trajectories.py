"""Drivers of sgd_step, momentum_step and adam_step: the student's step is called once per
gradient of the case, each call fed the previous call's result, and every step's parameters
come back. `grads` holds one list of (dW, db) per step.

Each step's result is kept as it was when the step returned (`_as_returned`): a step that updates
in place (`W -= lr * dW; return params`) changes the tensors it returned before, and every step's
record would then show the last step's values, a wrong answer said of a right one. The in-place
change is what the grader says of it."""
from __future__ import annotations

import torch

_DEPTH = 8      # a step's result is a list of pairs of tensors; deeper than this is kept as it is


def _as_returned(value, depth=0):
    """`value` with each tensor in its lists, tuples and dicts copied (their values now)."""
    if depth > _DEPTH:
        return value
    if isinstance(value, torch.Tensor):
        return torch.Tensor.clone(torch.Tensor.detach(value))
    if type(value) in (list, tuple):
        return type(value)(_as_returned(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: _as_returned(v, depth + 1) for k, v in value.items()}
    return value


def _check_pair(value, function, pair):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        got = type(value).__name__ + (f" of {len(value)} items" if isinstance(value, (tuple, list)) else "")
        raise TypeError(f"{function} must return a pair {pair}, got a {got}")
    return value


def sgd_trajectory(module, name, params, grads, lr):
    """params after each of len(grads) calls of sgd_step, each fed the previous result."""
    fn = getattr(module, name)
    out = []
    for step_grads in grads:
        params = fn(params, step_grads, lr)
        out.append(_as_returned(params))
    return out


def momentum_trajectory(module, name, params, grads, velocity, lr, momentum):
    fn = getattr(module, name)
    ps, vs = [], []
    for step_grads in grads:
        params, velocity = _check_pair(fn(params, step_grads, velocity, lr, momentum),
                                       name, "(new_params, new_velocity)")
        ps.append(_as_returned(params))
        vs.append(_as_returned(velocity))
    return ps, vs


def adam_trajectory(module, name, params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    fn = getattr(module, name)
    ps = []
    for step_grads in grads:
        params, state = _check_pair(fn(params, step_grads, state, lr, betas=betas, eps=eps),
                                    name, "(new_params, new_state)")
        ps.append(_as_returned(params))
    return ps, state
