"""Forbidden Python functions tripped in their own objects, and copies of their code watched.

The attribute tripwires (grader.sandbox.tripwires) put a recording wrapper where a module names a
forbidden callable. Every other route to a Python function went round them: the wrapper's closure
holds the original (`f.__closure__[0].cell_contents`), another module imported it under its own
name (`torch.nn.modules.activation` holds `xavier_uniform_`, `torch.optim.adamw` holds `adam`), a
class's base is the original class (`nn.MultiheadAttention.__bases__[0]`), and a copy of the code
runs untripped (`types.FunctionType(f.__code__, ...)`, `importlib.reload`, the library's source
compiled again). For a function with no kernel of its own (F.multi_head_attention_forward,
xavier_uniform_, clip_grad_norm_, torch.optim's loops) nothing else would see it.

So the zygote trips each forbidden Python function in place (`arm`), and the `__init__` of each
forbidden class: its `__code__` becomes a trampoline that records the hit, then runs the original
code in a function made for that one call. Every reference to the function, however it was reached,
is the tripped one. The original code is reachable only through the trampoline's constants (read
through `__code__`), and no function object of it outlives a call. A warning raised inside still
names the caller's line, and inspect.getsource() still finds the source (`_SKIPPED`, `_twin`).

An audit hook (sys.addaudithook: Python code cannot remove one) watches the two ways code becomes a
function or runs: `function.__new__` (types.FunctionType) and `exec` (exec, eval, and every module the
import system runs, with the code nested in it). The original code of an armed function, or a copy
of it (the same names, variables and constants, compiled anywhere under any name), records a hit for
the function's rules as it is made, not when it is called; that hit counts even when the module's
top level made it (grader.sandbox.child): a correct submission has no use for a copy of a function
its exercise forbids. Only bodies of at least MIN_COPY bytes of bytecode, without a closure, are
matched as copies: a decorator's wrapper and a one-line body are shared by many functions (every
torch function matched only itself over torch's own source; tests/test_tripped_code.py), and the
short ones' kernels are counted anyway.

Defence in depth, like the other in-process nets: native code can undo all of it.
"""
from __future__ import annotations

import inspect
import sys
import types
import warnings
from typing import Any, Callable

MIN_COPY = 100          # bytes of bytecode below which a body is too plain to prove a copy
_COPY = "a copy of {}"  # how a copy's hit names what it copied

_trampolines: set[int] = set()       # their ids (a code object holding a dict has no hash)
# id(function) -> (it, what its calls call, its closed code, the trips it was armed with, its twin)
_armed: dict[int, tuple[Any, list, types.CodeType, list, Any]] = {}
_closed: dict[int, list[tuple[Any, types.CodeType]]] = {}   # id(trip) -> [(a twin, its closed code)]
_FORBIDDEN_HERE = "<forbidden in this exercise>"    # the closed code's file: no source
# The tripped function's own file name. Python's warnings attribute a warning `stacklevel` frames up,
# skipping frames of a file whose name holds "importlib" and "_bootstrap" (the import system's): a
# warning from inside the function (F.softmax without dim) then names the student's line, not the
# trampoline's.
_SKIPPED = "<a tripwire: skipped as importlib._bootstrap's frames are>"
_originals: dict[int, tuple[types.CodeType, list]] = {}      # id(original code) -> (code, its trips)
_copies: dict[tuple, list[tuple[tuple, list, str]]] = {}     # shape -> [(fingerprint, trips, its name)]
_guarded = False


def arm(function: Any, trip: Callable[[bool, str | None], None], name: str | None = None) -> bool:
    """Trip `function` (a plain Python function) in place: each call, and each copy of its code made
    from now on, calls `trip(lasting, via)` (lasting: a copy's hit, which counts even at import; via:
    what the hit names, None for the target `trip` stands for). A function already armed gains this
    trip too. So do the functions its closure holds, each under its own `name`: a decorator's wrapper
    holds the original it wraps (`clip_grad_norm_`'s `_no_grad`, torch.optim's dynamo guard, the
    deprecated `xavier_uniform`), boolean_dispatch the two functions it chooses between
    (`max_pool2d`), each the same computation. False if it cannot be armed (not a plain function)."""
    if not isinstance(function, types.FunctionType):
        return False
    entry = _armed.get(id(function))
    if entry is None:
        code = function.__code__
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            signature = None
        trips: list = []
        tramp = _trampoline(code, function, trips)
        hidden = tramp.replace(co_filename=_SKIPPED)
        try:
            function.__code__ = hidden
        except (TypeError, ValueError):
            return False
        if signature is not None:
            function.__signature__ = signature
        twin = _twin(function, tramp) if "__wrapped__" not in vars(function) else None
        closed = tramp.replace(co_filename=_FORBIDDEN_HERE)
        _trampolines.update((id(tramp), id(hidden), id(closed)))
        entry = _armed[id(function)] = (function, trips, closed, [], twin)
        _originals[id(code)] = (code, trips)
        if len(code.co_code) >= MIN_COPY and not code.co_freevars:
            _copies.setdefault(_shape(code), []).append((_fingerprint(code), trips, _name(function)))
    if trip in entry[3]:
        return True
    entry[3].append(trip)
    entry[1].append(trip if name is None else lambda lasting, via: trip(lasting, via or name))
    if entry[4] is not None:
        _closed.setdefault(id(trip), []).append((entry[4], entry[2]))
    for cell in function.__closure__ or ():
        try:
            held = cell.cell_contents
        except ValueError:      # an empty cell
            continue
        if isinstance(held, types.FunctionType):
            arm(held, trip, _name(held))
    return True


def _twin(function: types.FunctionType, tramp: types.CodeType) -> types.FunctionType:
    """The tripped function's `__wrapped__`: the same trampoline, under the original's file and first
    line, where inspect.getsource() and TorchScript (which unwrap) find the original source, while the
    function's own code is under a file name warnings skip (_SKIPPED). Calling it trips the same."""
    twin = types.FunctionType(tramp, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    twin.__kwdefaults__ = function.__kwdefaults__
    twin.__qualname__, twin.__module__, twin.__doc__ = function.__qualname__, function.__module__, function.__doc__
    twin.__annotations__ = function.__annotations__
    function.__wrapped__ = twin
    return twin


def _name(function: types.FunctionType) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def forbid(trip: Callable[[bool, str | None], None]) -> None:
    """In a child whose exercise forbids what `trip` records: the functions armed with it lose their
    source. TorchScript compiles a function from its source (torch.jit.script, or a scripted function
    that calls it) and runs it in C++, where no trampoline is; now it cannot (it says it has no
    source), as it could not compile the wrapper a module's name led to. Where nothing forbids them,
    inspect.getsource() and TorchScript read the original source as before (through `_twin`)."""
    for twin, closed in _closed.get(id(trip), ()):
        twin.__code__ = closed


def guard() -> None:
    """The audit hook, once a process (the zygote: its children inherit it)."""
    global _guarded
    if not _guarded:
        sys.addaudithook(_audit)
        _guarded = True


def _audit(event: str, args: tuple) -> None:
    if event == "function.__new__":
        if args and isinstance(args[0], types.CodeType) and id(sys._getframe(1).f_code) not in _trampolines:
            _made(args[0])
    elif event == "exec":
        if args and isinstance(args[0], types.CodeType):
            _made(args[0])


def _made(code: types.CodeType) -> None:
    """`code` (and the code nested in it) is about to run or become a function: trip for what it copies."""
    stack = [code]
    while stack:
        c = stack.pop()
        original = _originals.get(id(c))
        if original is not None and original[0] is c:
            _trip(original[1], None)
        else:
            for fingerprint, trips, name in _copies.get(_shape(c), ()):
                if fingerprint == _fingerprint(c):
                    _trip(trips, _COPY.format(name))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _trip(trips: list, via: str | None) -> None:
    for trip in trips:
        trip(True, via)


def _shape(code: types.CodeType) -> tuple:
    return code.co_argcount, code.co_kwonlyargcount, code.co_nlocals, len(code.co_names)


def _fingerprint(code: types.CodeType) -> tuple:
    """What a copy keeps whatever its name, file, lines and docstring, and whichever compiler made it
    (the same source compiled from its AST reads a method as LOAD_METHOD where the wheel's bytecode
    has LOAD_ATTR): the names it reads, its variables, and its constants but the first (the docstring,
    or None) and its nested code."""
    return (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount,
            tuple(k for k in code.co_consts[1:] if not isinstance(k, types.CodeType)))


# The trampoline's body, for a function whose closure has `n` cells: a code object must have as many
# free variables as its function has cells, so it names them in a branch that never runs (`a` is
# always a tuple). The quoted names are placeholders for the constants `_trampoline` puts in.
_BODY = '''
def outer():
    {cells}
    def tripped(*a, **k):
        if a is None:
            {uses}
        "TRIP"(False, None)
        f = "MAKE"("CODE", "GLOBALS", "NAME", "DEFAULTS", "CLOSURE")
        f.__kwdefaults__ = "KWDEFAULTS"
        return f(*a, **k)
    return tripped
'''
_templates: dict[int, types.CodeType] = {}


def _trampoline(code: types.CodeType, function: types.FunctionType, trips: list) -> types.CodeType:
    n = len(code.co_freevars)
    template = _templates.get(n)
    if template is None:
        names = [f"c{i}" for i in range(n)]
        source = _BODY.format(cells=" = ".join(names + ["None"]) if n else "pass",
                              uses=", ".join(names) if n else "pass")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # "'str' object is not callable": the placeholders
            outer = compile(source, "<tripped>", "exec", dont_inherit=True)
        outer = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
        template = _templates[n] = next(c for c in outer.co_consts if isinstance(c, types.CodeType))

    def trip(lasting: bool, via: str | None) -> None:
        for each in trips:
            each(lasting, via)
    filled = {"TRIP": trip, "MAKE": types.FunctionType, "CODE": code, "GLOBALS": function.__globals__,
              "NAME": function.__name__, "DEFAULTS": function.__defaults__, "CLOSURE": function.__closure__,
              "KWDEFAULTS": function.__kwdefaults__}
    consts = tuple(filled[c] if isinstance(c, str) and c in filled else c for c in template.co_consts)
    # Its file, name and first line are the original's, for the twin (_twin): inspect.getsource() finds
    # the function's own source there. The function's own copy is under another file name (_SKIPPED).
    return template.replace(co_consts=consts, co_filename=code.co_filename, co_name=code.co_name,
                            co_qualname=code.co_qualname, co_firstlineno=code.co_firstlineno)
