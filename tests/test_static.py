"""Static forbidden-API scan: aliases resolved, helpers followed, docstrings ignored."""
from grader.catalog.rules import AUTOGRAD, SDPA
from grader.pipeline.static import forbidden_hits, function_line


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


def test_docstrings_and_other_functions_do_not_count():
    src = ('def f(Q):\n    """Do not use torch.nn.functional.scaled_dot_product_attention."""\n    return Q\n'
           "import torch\ndef g(Q):\n    return torch.nn.functional.scaled_dot_product_attention(Q, Q, Q)\n")
    assert forbidden_hits(src, "f", (SDPA,)) == []


def test_autograd_patterns():
    src = ("import torch\ndef grad(x):\n    x = x.detach().requires_grad_()\n    y = (x * x).sum()\n"
           "    y.backward()\n    return x.grad\n")
    whats = {h.what for h in forbidden_hits(src, "grad", (AUTOGRAD,))}
    assert {".backward", ".requires_grad_"} <= whats


def test_importing_solutions_is_always_forbidden_where_reachable():
    src = "def f():\n    import solutions.attention\n    return 1\ndef g():\n    return 2\n"
    assert forbidden_hits(src, "f", ())
    assert forbidden_hits(src, "g", ()) == []
    assert forbidden_hits("from grader.catalog import attention\ndef g():\n    return 2\n", "g", ())


def test_function_line_even_with_a_syntax_error():
    assert function_line("x = 1\ndef f():\n    return (\n", "f") == 2
