"""Driver of train_xor: trains twice from the same seed, counting the calls of the student's own
building blocks (mlp_backward and a step must be used).

A building block that is a plain Python function is counted in itself: for the two trainings its
code is swapped for a trampoline that counts the call and runs a copy of the function (the same
code, globals, defaults), so a call counts wherever the training reaches the function from: the
module's name, a default argument (`step=adam_step`), a dict of optimizers, an alias. Replacing
the module's names alone missed all of those and failed a correct training; a profiler hook saw
them too, but on every call of the training (the operator watch's included): 2.7 s of CPU where the
training took 0.5. Anything else callable (a decorated or nested function, a C callable) is
counted by its module name, as before.
A call counts once it has returned: one that raised computed nothing for the training (the red
team's train_xor called the unfinished stubs inside try/except, then returned weights written
by hand).

The counts live in the child, beside the student's code, which can write to them (another red
team added to the counter it found in the module's globals): they are defence in depth. What
the parent proves is its own (grader.catalog.chapters.mlp.train_xor): the params solve XOR, run
by the grader's forward, and one seed gives one answer."""
from __future__ import annotations

import inspect
import types

TRAINING_FUNCTIONS = ("mlp_forward", "mlp_backward", "sgd_step", "momentum_step", "adam_step")
_TRAMPOLINE = "def counted(*args, **kwargs):\n    calls, name, run = {key}\n    out = run(*args, **kwargs)\n" \
              "    calls[name] += 1\n    return out\n"


def train_xor_driver(module, name, seed):
    calls = {f: 0 for f in TRAINING_FUNCTIONS}
    undo = []
    try:
        for f in TRAINING_FUNCTIONS:
            original = getattr(module, f, None)
            if callable(original):
                undo.append(_count(module, f, original, calls))
        fn = getattr(module, name)
        params = fn(seed)
        again = fn(seed)
    finally:
        for restore in reversed(undo):
            restore()
    return {"params": params, "again": again, "calls": calls}


def _count(module, f, original, calls):
    """Count the calls of `original`, the module's `f`; returns what puts everything back."""
    target = _unwrapped(original)
    if isinstance(target, types.FunctionType) and not target.__code__.co_freevars:
        run = types.FunctionType(target.__code__, target.__globals__, target.__name__, target.__defaults__)
        run.__kwdefaults__ = target.__kwdefaults__
        key = f"__grader_counted_{f}__"
        target.__globals__[key] = (calls, f, run)
        space: dict = {}
        exec(_TRAMPOLINE.format(key=key), space)        # its global lookups: the function's own globals
        code, target.__code__ = target.__code__, space["counted"].__code__

        def restore():
            target.__code__ = code
            target.__globals__.pop(key, None)
        return restore

    def counted(*a, **k):
        out = original(*a, **k)
        calls[f] += 1
        return out
    setattr(module, f, counted)
    return lambda: setattr(module, f, original)


def _unwrapped(fn):
    """The student's own function under decorators that keep it in __wrapped__."""
    try:
        return inspect.unwrap(fn)
    except ValueError:          # a cycle of __wrapped__
        return fn
