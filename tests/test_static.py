"""Static forbidden-API scan: aliases resolved, helpers followed, docstrings ignored; only names that
resolve to the forbidden object are proof (a method of a value of unknown type is not)."""
import pytest

import grader.catalog.rules as rules_module
from grader.catalog.rules import AUTOGRAD, HEAVISIDE, RECURRENT, RELU, SDPA, SIGMOID, SIGN, SOFTMAX, TANH
from grader.catalog.spec import Forbidden
from grader.pipeline.static import forbidden_hits
from grader.pipeline.where import function_line
from grader.results import FailureKind


def test_alias_and_helper_are_followed():
    src = ("import torch.nn.functional as F\n"
           "def helper(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n"
           "def scaled_dot_product_attention(Q, K, V, mask=None):\n    return helper(Q, K, V)\n")
    (hit,) = forbidden_hits(src, "scaled_dot_product_attention", (SDPA,))
    assert hit.what == "torch.nn.functional.scaled_dot_product_attention" and hit.line == 3


def test_from_import_and_getattr_literal():
    src = ("from torch.nn.functional import scaled_dot_product_attention as fast\n"
           "import torch\n"
           "def a(Q, K, V):\n    return fast(Q, K, V)\n"
           "def b(Q, K, V):\n    return getattr(torch.nn.functional, 'scaled_dot_product_attention')(Q, K, V)\n")
    assert forbidden_hits(src, "a", (SDPA,))
    assert forbidden_hits(src, "b", (SDPA,))


def test_a_syntax_error_elsewhere_leaves_the_scan_on_for_what_the_salvage_keeps():
    """A syntax error anywhere in the module turned the static scan off for all of it (a red team's
    finding): the salvage's code, which the child grades then, is scanned."""
    src = ("import torch.nn.functional as F\n"
           "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
           "    return F.scaled_dot_product_attention(Q, K, V)\n\n"
           "def causal_mask(T):\n    return T +\n")
    (hit,) = forbidden_hits(src, "scaled_dot_product_attention", (SDPA,))
    assert hit.what == "torch.nn.functional.scaled_dot_product_attention" and hit.line == 3


def test_docstrings_and_other_functions_do_not_count():
    src = ('def f(Q):\n    """Do not use torch.nn.functional.scaled_dot_product_attention."""\n    return Q\n'
           "import torch\ndef g(Q):\n    return torch.nn.functional.scaled_dot_product_attention(Q, Q, Q)\n")
    assert forbidden_hits(src, "f", (SDPA,)) == []


def test_autograd_names_that_resolve_are_proven():
    src = ("import torch\nfrom torch.func import vjp as pullback\nimport torch.autograd as ag\n"
           "def a(x):\n    return torch.autograd.grad(x.sum(), x)\n"
           "def b(x):\n    return pullback(lambda t: t, x)\n"
           "def c(x):\n    return ag.functional.jacobian(lambda t: t, x)\n"
           "def d(n):\n    return torch.zeros(n, requires_grad=True)\n"
           "def e(x):\n    return getattr(torch.autograd, 'grad')(x.sum(), x)\n")
    whats = {f: [h.what for h in forbidden_hits(src, f, (AUTOGRAD,))] for f in "abcde"}
    assert whats == {"a": ["torch.autograd.grad"], "b": ["torch.func.vjp"],
                     "c": ["torch.autograd.functional.jacobian", "torch.autograd.functional"],
                     "d": ["requires_grad=True"], "e": ["getattr(..., 'grad')"]}, whats


def test_methods_of_values_of_unknown_type_prove_nothing():
    """`layer.backward(...)`, `x.requires_grad_()`, `v.relu()` may be the student's own methods (an
    OO layer, a micrograd Value): the static scan leaves them to the run-time tripwires."""
    src = ("import torch\n"
           "class Linear:\n    def backward(self, dY):\n        return dY @ self.W.T\n"
           "class Value:\n    def relu(self):\n        return Value(torch.clamp(self.data, min=0))\n"
           "def grad(x, layer):\n    x = x.detach().requires_grad_()\n    (x * x).sum().backward()\n"
           "    layer.backward(x)\n    getattr(layer, 'backward')(x)\n    return Value(x).relu(), x.grad\n")
    assert forbidden_hits(src, "grad", (AUTOGRAD, RELU, SIGMOID, TANH, SOFTMAX, SIGN, HEAVISIDE)) == []


def test_turning_autograd_off_or_reading_it_is_not_using_it():
    src = ("import torch\n"
           "def f(x, flag):\n    if x.requires_grad:\n        x = x.detach()\n"
           "    with torch.no_grad(), torch.autograd.no_grad(), torch.autograd.set_grad_enabled(False):\n"
           "        y = torch.zeros(3, requires_grad=False) + torch.ones(3, requires_grad=None)\n"
           "    x.requires_grad = False\n    x.requires_grad_(False)\n"
           "    return (Value(y, requires_grad=True), torch.func.vmap(torch.sin)(y),\n"
           "            torch.zeros(3, requires_grad=flag))\n")
    assert forbidden_hits(src, "f", (AUTOGRAD,)) == []


def test_getattr_is_proof_only_when_its_object_resolves():
    src = ("import torch\nimport torch.nn.functional as F\n"
           "def a(z):\n    return getattr(torch, 'relu')(z)\n"
           "def b(z):\n    return getattr(F, 'relu')(z)\n"
           "def c(z, unit):\n    return getattr(unit, 'relu')(z), getattr(z, 'relu')()\n")
    assert [h.what for h in forbidden_hits(src, "a", (RELU,))] == ["getattr(..., 'relu')"]
    assert [h.what for h in forbidden_hits(src, "b", (RELU,))] == ["getattr(..., 'relu')"]
    assert forbidden_hits(src, "c", (RELU,)) == []


def test_a_function_import_counts_only_in_that_function():
    """`from torch import relu` inside one function does not make the module's own relu torch's."""
    src = ("import torch\n"
           "def relu(z):\n    return torch.clamp(z, min=0)\n"
           "def mlp(X):\n    return relu(X)\n"
           "def shortcut(X):\n    from torch import relu\n    return relu(X)\n")
    assert forbidden_hits(src, "mlp", (RELU,)) == []
    assert [h.what for h in forbidden_hits(src, "shortcut", (RELU,))] == ["torch.relu"]


def test_every_rule_pattern_is_a_name_or_a_keyword():
    """No rule may match bare attribute names again: a pattern is a dotted name or kw:NAME."""
    rules = [r for r in vars(rules_module).values() if isinstance(r, Forbidden)]
    assert len(rules) > 20
    for rule in rules:
        for p in rule.static:
            assert p.startswith("kw:") or ":" not in p, (rule.name, p)
    with pytest.raises(ValueError, match="neither a dotted name nor kw:NAME"):
        forbidden_hits("def f(z):\n    return z.relu()\n", "f", (Forbidden("x", "y", static=("attr:relu",)),))


def test_importing_solutions_is_always_forbidden_where_reachable():
    src = "def f():\n    import solutions.attention\n    return 1\ndef g():\n    return 2\n"
    assert forbidden_hits(src, "f", ())
    assert forbidden_hits(src, "g", ()) == []
    assert forbidden_hits("from grader.catalog import attention\ndef g():\n    return 2\n", "g", ())


def test_function_line_even_with_a_syntax_error():
    assert function_line("x = 1\ndef f():\n    return (\n", "f") == 2


def test_helpers_the_grader_replaces_are_not_followed():
    """rnn_bptt is graded with the grader's rnn_forward/rnn_cell in place of the student's: a forbidden
    API in the student's cell never runs there (rnn_cell's own exercise charges it, once)."""
    src = ("import torch\n"
           "def rnn_cell(x, h, W_x, W_h, b):\n    return torch.rnn_tanh_cell(x, h, W_x.T, W_h.T, b, b)\n"
           "def rnn_forward(X, h0, W_x, W_h, b):\n    return rnn_cell(X[:, 0], h0, W_x, W_h, b)\n"
           "def rnn_bptt(X, h0, W_x, W_h, b, dH):\n    return rnn_forward(X, h0, W_x, W_h, b)\n")
    assert forbidden_hits(src, "rnn_bptt", (RECURRENT,))
    assert forbidden_hits(src, "rnn_bptt", (RECURRENT,), replaced=("rnn_cell", "rnn_forward")) == []
    assert forbidden_hits(src, "rnn_cell", (RECURRENT,), replaced=("rnn_cell",))


DEAD = ("import torch\nimport torch.nn.functional as F\nDEBUG = False\nCHECK: bool = 0\nFAST = True\n"
        "def _reference(z):\n    return F.softmax(z, -1)\n"
        "def after_return(z):\n    e = torch.exp(z - z.max(-1, keepdim=True).values)\n"
        "    return e / e.sum(-1, keepdim=True)\n    return F.softmax(z, -1)\n"
        "def under_flags(z):\n    out = torch.exp(z) / torch.exp(z).sum(-1, keepdim=True)\n"
        "    if DEBUG:\n        assert torch.allclose(out, torch.softmax(z, -1))\n"
        "    if CHECK and z.numel():\n        print(_reference(z))\n"
        "    if not FAST or False:\n        out = F.softmax(z, -1)\n"
        "    for row in z:\n        if row.numel():\n            continue\n            F.softmax(row, 0)\n"
        "    return out if FAST else F.softmax(z, -1)\n"
        "def live(z):\n    if DEBUG or z.numel():\n        return F.softmax(z, -1)\n    return z\n"
        "def test_runs(z):\n    if F.softmax(z, -1) is None and DEBUG:\n        return z\n    return z\n"
        "def else_of_true(z):\n    if FAST:\n        return z\n    else:\n        return F.softmax(z, -1)\n")


@pytest.mark.parametrize("function", ["after_return", "under_flags", "else_of_true"])
def test_code_that_provably_never_runs_proves_no_use(function):
    """An old version left after the return, a check against torch under `if DEBUG:` with DEBUG False:
    such code never runs, and a function that keeps it is not FORBIDDEN (grader.pipeline.dead_code)."""
    assert forbidden_hits(DEAD, function, (SOFTMAX,)) == []


@pytest.mark.parametrize("function", ["live", "test_runs"])
def test_a_branch_that_may_run_and_a_test_still_count(function):
    assert [h.what for h in forbidden_hits(DEAD, function, (SOFTMAX,))] == ["torch.nn.functional.softmax"]


@pytest.mark.parametrize("rebinding", ["def turn_on():\n    global DEBUG\n    DEBUG = True\n",
                                       "DEBUG = True\n", "def f(DEBUG=True):\n    pass\n",
                                       "globals()['DEBUG'] = 1\n", "import sys\nsys.modules[__name__].DEBUG = 1\n",
                                       "for DEBUG in (1,):\n    pass\n", "from os import sep as DEBUG\n"])
def test_a_flag_any_line_may_rebind_proves_nothing(rebinding):
    """DEBUG is a flag only where no other line can rebind it: then `if DEBUG:` may run, and counts."""
    src = DEAD + rebinding
    assert [h.what for h in forbidden_hits(src, "under_flags", (SOFTMAX,))] == ["torch.softmax"]


def test_one_parse_at_a_time_across_threads(monkeypatch):
    # CPython 3.11's ast.parse keeps the depth of the tree it builds per interpreter, not per thread:
    # two threads parsing at once can fail with "AST constructor recursion depth mismatch"
    # (python/cpython#106905), seen as a grader fault in a Dask worker grading two exercises at once.
    import threading
    import time

    from grader.pipeline import static

    active, most, lock = [0], [0], threading.Lock()
    real = static.ast.parse

    def slow_parse(source, *args, **kwargs):      # the ast module's own: pytest parses with it too
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return real(source, *args, **kwargs)
    monkeypatch.setattr(static.ast, "parse", slow_parse)
    static.parsed.cache_clear()
    threads = [threading.Thread(target=static.parsed, args=(f"x = {i}\n",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    static.parsed.cache_clear()
    assert most[0] == 1


def test_a_module_is_read_once_for_all_its_exercises(monkeypatch):
    """Every exercise of a module asks about the same source, each with its own function, rules and
    replaced helpers: the tree is walked once for all of them, and each still gets its own answer."""
    from grader.pipeline import static

    src = ("import torch\nimport torch.nn.functional as F\n"
           "def helper(x):\n    return torch.sigmoid(x)\n"
           "def a(x):\n    return helper(x)\n"
           "def b(x):\n    return F.relu(x)\n")
    assert forbidden_hits(src, "a", (SIGMOID,))
    walks = []
    real = static.ast.walk
    monkeypatch.setattr(static.ast, "walk", lambda node: walks.append(node) or real(node))
    assert [(h.what, h.line) for h in forbidden_hits(src, "a", (SIGMOID,))] == [("torch.sigmoid", 4)]
    assert forbidden_hits(src, "a", (RELU,)) == []
    assert [(h.what, h.line) for h in forbidden_hits(src, "b", (RELU,))] == [("torch.nn.functional.relu", 8)]
    assert forbidden_hits(src, "a", (SIGMOID,), replaced=("helper",)) == []
    assert walks == []


def test_where_a_name_is_defined_or_assigned():
    from grader.pipeline.feedback import Facts, words
    from grader.pipeline.where import assigned_line, function_lines
    source = "def f(x):\n    return x\n\n\ndef f(x):\n    return 2 * x\n\n\ng = 5\ng: int = 6\n"
    assert function_lines(source, "f") == [1, 5] and function_line(source, "f") == 5    # Python keeps the last
    assert assigned_line(source, "g") == 10 and assigned_line(source, "f") == 0
    assert words(FailureKind.MISSING_FUNCTION, Facts(function="g", module="m", assigned=10)) == (
        "g in m.py is a value (assigned on line 10), not a function: define it with def g(...), as the stub does")
