"""Forbidden Python functions tripped in place, and copies of their code (grader.sandbox.tripped_code):
the routes round a module's name for a function trip in the sandbox's children, correct code that
looks like PyTorch's does not, and no function of torch's own source passes for a copy of another."""
from __future__ import annotations

import glob
import importlib.util
import inspect
import marshal
import os
import types
import warnings
from dataclasses import asdict

import pytest
import torch

from grader.catalog import catalog, rules
from grader.pipeline.engine import tripwire_targets
from grader.sandbox import tripwires
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox
from grader.sandbox.tripped_code import MIN_COPY, _fingerprint

STUDENT = '''import importlib.util
import inspect
import types

import torch
import torch.nn.functional as F

XAVIER = "xavier_" + "uniform_"


def alias():
    import torch.nn.modules.activation as another
    return tuple(getattr(another, XAVIER)(torch.empty(3, 4)).shape)


def closure():
    f = getattr(torch.nn.init, "xavier_" + "uniform")      # the deprecated name, a wrapper
    while f.__name__ != XAVIER:         # down the closures, to the function a wrapper holds
        f = next(c.cell_contents for c in f.__closure__ if isinstance(c.cell_contents, types.FunctionType))
    return tuple(f(torch.empty(3, 4)).shape)


def base_class():
    cls = getattr(torch.nn, "Multihead" + "Attention")
    original = next(c for c in cls.__mro__ if c.__module__ == "torch.nn.modules.activation")
    return original(4, 2).embed_dim


def code_copy():
    f = getattr(torch.nn.init, XAVIER)
    code = next(k for k in f.__code__.co_consts if isinstance(k, types.CodeType))
    return tuple(types.FunctionType(code, f.__globals__)(torch.empty(3, 4), 1.0, None).shape)


def module_again():
    spec = importlib.util.spec_from_file_location("init_again", torch.nn.init.__file__)
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)
    return tuple(getattr(again, XAVIER)(torch.empty(3, 4)).shape)


class Act(torch.nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace          # the very body of nn.ReLU's __init__


def own_relu():
    return Act().inplace, torch.clamp(torch.tensor([-1.0, 2.0]), min=0).tolist()


def introspection():
    f = getattr(torch.nn.init, XAVIER)
    try:
        source = inspect.getsource(f).lstrip().startswith("def " + XAVIER)
    except OSError:
        source = None
    return str(inspect.signature(f)), source, f.__name__


def warned():
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.softmax(torch.ones(3))        # no dim: torch warns, naming the caller's line
    return [(w.filename.rsplit("/", 1)[-1], w.lineno) for w in caught]


def scripted():
    return tuple(torch.jit.script(getattr(torch.nn.init, XAVIER))(torch.empty(3, 4)).shape)
'''
# A copy made by the module's top level: its hit counts with every call, not only as the import's.
COPIES_AT_IMPORT = '''import ast
import inspect

import torch


def _recompiled(module, name):
    tree = ast.parse(inspect.getsource(module))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace = dict(vars(module))
    exec(compile(ast.Module([node], []), "<not torch>", "exec"), namespace)
    return namespace[name]


COPIED = _recompiled(torch.nn.init, "xavier_" + "uniform_")


def copied_at_import():
    return tuple(COPIED(torch.empty(3, 4)).shape)
'''
# A notebook's last cell that checks the answer against PyTorch's own function: said, not charged.
CHECKED_AT_IMPORT = '''import torch


def glorot(fan_in, fan_out):
    bound = (6 / (fan_in + fan_out)) ** 0.5
    return (torch.rand(fan_in, fan_out) * 2 - 1) * bound


CHECK = torch.nn.init.xavier_uniform_(torch.empty(3, 4)).abs().max() <= glorot(3, 4).abs().max() + 1
'''
ROUTES = {          # function -> (rule, its value, the hits' vias)
    "alias": (rules.XAVIER, (3, 4), {"torch.nn.init.xavier_uniform_"}),
    "closure": (rules.XAVIER, (3, 4), {"torch.nn.init.xavier_uniform_"}),
    "base_class": (rules.MHA, 4, {"torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention"}),
    "code_copy": (rules.XAVIER, (3, 4), {"torch.nn.init.xavier_uniform_"}),
    "copied_at_import": (rules.XAVIER, (3, 4), {"a copy of torch.nn.init.xavier_uniform_"}),
    "module_again": (rules.XAVIER, (3, 4), {"a copy of torch.nn.init.xavier_uniform_",
                                            "a copy of torch.nn.init.xavier_normal_"}),
}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(tripwires=tripwire_targets(catalog().values())) as sb:
        yield sb


@pytest.fixture(scope="module")
def workdir():
    folder = make_workdir()
    copy_submission({"m": STUDENT, "copies": COPIES_AT_IMPORT, "checked": CHECKED_AT_IMPORT}, folder)
    yield folder
    remove_workdir(folder)


def _call(sandbox: Sandbox, workdir: str, rule, function: str, module: str = "m"):
    module = "copies" if function == "copied_at_import" else module
    session = sandbox.open(workdir, module, forbidden=[asdict(rule)], import_timeout=60)
    try:
        assert session.ready.kind == "ok", session.ready
        return session.ready, session.call(function, (3, 4) if module == "checked" else (), {}, timeout=60)
    finally:
        session.close()


@pytest.mark.parametrize("function", sorted(ROUTES))
def test_every_route_to_a_forbidden_python_function_trips(sandbox, workdir, function):
    """Another module's name for it, the original a decorator's closure holds, the original class
    under its tripwire, a function made from its code, its source compiled again (at import: the hit
    counts all the same), its module run again: each trips the rule, and the function still works."""
    rule, value, vias = ROUTES[function]
    ready, outcome = _call(sandbox, workdir, rule, function)
    assert outcome.kind == "ok" and outcome.value == value, outcome
    assert outcome.hits and {h["rule"] for h in outcome.hits} == {rule.name}, outcome.hits
    tripped = {h["via"] for h in outcome.hits if not h["via"].startswith("aten::")}    # not the operator net's
    assert tripped & vias and tripped <= vias | set(rule.patch), outcome.hits
    if function == "copied_at_import":
        assert [(h["file"], h["line"]) for h in outcome.hits] == [("copies.py", next(
            i for i, line in enumerate(COPIES_AT_IMPORT.splitlines(), 1) if "exec(compile(" in line))]
        assert not ready.hits       # counted with the calls, not only said as the top level's
    else:
        assert all(h["file"] == "m.py" for h in outcome.hits)


def test_correct_code_like_torchs_and_introspection_trip_nothing(sandbox, workdir):
    """A module whose __init__ is nn.ReLU's very body: no hit. A forbidden function called by the
    module's top level (a notebook's check of its answer) is said, not charged. A warning torch raises
    inside a tripped function names the student's line, not the trampoline's. Its signature is
    its own; its source (which TorchScript compiles from, to run it where no trampoline is) is read
    where the exercise allows it, and is not there where the exercise forbids it."""
    _, relu = _call(sandbox, workdir, rules.RELU, "own_relu")
    assert relu.kind == "ok" and relu.value == (False, [0.0, 2.0]) and not relu.hits, relu
    signature = str(inspect.signature(torch.nn.init.xavier_uniform_))
    for rule, source in ((rules.RELU, True), (rules.XAVIER, None)):
        _, seen = _call(sandbox, workdir, rule, "introspection")
        assert seen.kind == "ok" and not seen.hits and seen.value == (signature, source, "xavier_uniform_"), seen
    ready, checked = _call(sandbox, workdir, rules.XAVIER, "glorot", module="checked")
    assert [h["via"] for h in ready.hits] == ["torch.nn.init.xavier_uniform_"] and not checked.hits, (ready, checked)
    _, warned = _call(sandbox, workdir, rules.RELU, "warned")
    line = next(i for i, text in enumerate(STUDENT.splitlines(), 1) if "F.softmax(torch.ones(3))" in text)
    assert warned.kind == "ok" and warned.value == [("m.py", line)], warned
    _, allowed = _call(sandbox, workdir, rules.RELU, "scripted")
    assert allowed.kind == "ok" and allowed.value == (3, 4) and not allowed.hits, allowed
    _, forbidden = _call(sandbox, workdir, rules.XAVIER, "scripted")
    assert forbidden.kind == "error" and "source" in forbidden.error["message"], forbidden


def _armed_with(target) -> list[types.FunctionType]:
    """The functions the zygote trips for a target: itself or its class's own __init__, and the
    functions their closures hold, down."""
    found, todo = [], [target, vars(target).get("__init__") if isinstance(target, type) else None]
    while todo:
        f = todo.pop()
        if isinstance(f, types.FunctionType) and all(f is not g for g in found):
            found.append(f)
            for cell in f.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:
                    pass
    return found


def _module_code(path: str) -> types.CodeType | None:
    """The code the import system runs for the module at `path`: its bytecode cache where it has one
    (read, not compiled: a tenth of the time), else its source compiled; None if neither works."""
    cached = importlib.util.cache_from_source(path)
    try:
        with open(cached, "rb") as f:
            data = f.read()
        if data[:4] == importlib.util.MAGIC_NUMBER:
            return marshal.loads(data[16:])
    except (OSError, ValueError, EOFError):
        pass
    try:
        with open(path, encoding="utf-8") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(f.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return None


def test_no_function_of_torch_passes_for_a_copy_of_another():
    """The copies matched are those of a forbidden function's own body: over every module of torch's
    source (and the course's solutions), each function watched for copies matches only itself."""
    watched = {}
    for _, dotted in tripwire_targets(catalog().values()):
        try:
            owner, attr = tripwires._resolve(dotted)
            target = getattr(owner, attr)
        except (LookupError, AttributeError):
            continue
        for f in _armed_with(target):
            code = f.__code__
            if len(code.co_code) >= MIN_COPY and not code.co_freevars:
                own = (os.path.realpath(code.co_filename), code.co_qualname)
                watched.setdefault(_fingerprint(code), set()).add(own)
    assert len(watched) >= 30 and any(q == "multi_head_attention_forward" for w in watched.values() for _, q in w)
    root = os.path.dirname(torch.__file__)
    files = glob.glob(os.path.join(root, "**", "*.py"), recursive=True) + glob.glob("solutions/*.py")
    foreign, seen = [], 0
    for path in files:
        stack = [_module_code(path)]
        while stack:
            code = stack.pop()
            if code is None:
                continue
            seen += 1
            own = watched.get(_fingerprint(code))
            if own is not None and (os.path.realpath(path), code.co_qualname) not in own:
                foreign.append((path, code.co_qualname))
            stack.extend(k for k in code.co_consts if isinstance(k, types.CodeType))
    assert seen > 50_000 and not foreign, foreign
