"""Drivers of sgd_step, momentum_step and adam_step: the student's step is called once per
gradient of the case, each call fed the previous call's result, and every step's parameters
come back. `grads` holds one list of (dW, db) per step."""
from __future__ import annotations


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
        out.append(params)
    return out


def momentum_trajectory(module, name, params, grads, velocity, lr, momentum):
    fn = getattr(module, name)
    ps, vs = [], []
    for step_grads in grads:
        params, velocity = _check_pair(fn(params, step_grads, velocity, lr, momentum),
                                       name, "(new_params, new_velocity)")
        ps.append(params)
        vs.append(velocity)
    return ps, vs


def adam_trajectory(module, name, params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    fn = getattr(module, name)
    ps = []
    for step_grads in grads:
        params, state = _check_pair(fn(params, step_grads, state, lr, betas=betas, eps=eps),
                                    name, "(new_params, new_state)")
        ps.append(params)
    return ps, state
