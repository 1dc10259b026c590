"""grader/notebook.py: `check(exercise_id, fn)` grades a function living in this process.

The functions under test are defined here, in a test module, as a notebook cell would define
them; the results must agree with the sandboxed engine on the same code.
"""
from __future__ import annotations

import linecache
import math

import pytest
import torch
import torch.nn.functional as F

from conftest import SOLUTIONS, mistake_source
from grader.notebook import ExerciseFailed, NotebookResult, check
from scenarios import SUBMISSIONS


def _define(source: str, name: str, namespace: dict | None = None):
    """Define a function from source text, as a notebook cell does: in `namespace` (the notebook's
    globals; a fresh one by default). IPython registers each cell's text with linecache under a
    made-up file name, so inspect can read it; so does this."""
    filename = f"/tmp/ipykernel_0/{abs(hash(source))}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if namespace is None:
        namespace = {}
    namespace.update({k: v for k, v in (("torch", torch), ("math", math), ("F", F)) if k not in namespace})
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _solution(name: str):
    namespace: dict = {}
    exec(compile((SOLUTIONS / "attention.py").read_text(), str(SOLUTIONS / "attention.py"), "exec"), namespace)
    return namespace[name], namespace


def test_a_correct_function_earns_the_configured_points(config):
    fn, _ = _solution("scaled_dot_product_attention")
    result = check("attention.scaled_dot_product_attention", fn, config=config)
    assert isinstance(result, NotebookResult)
    assert result.passed and result.points == result.max_points == 3.0
    assert result.award() == 3.0


def test_a_known_mistake_gets_partial_credit_and_its_diagnosis(config):
    fn = _define(mistake_source("attention", "scaled_dot_product_attention__no_scale"), "scaled_dot_product_attention")
    result = check("attention.scaled_dot_product_attention", fn, config=config)
    assert result.points == 0.5                   # 1 of 6 cases (T=1 needs no scaling), 3 points
    assert result.exercise.diagnosis.startswith("missing 1/sqrt(d_k)")
    assert result.award() == 0.5                  # nbgrader reads this float as the cell's score
    assert "missing 1/sqrt(d_k)" in str(result)
    assert "missing 1/sqrt(d_k)" in result._repr_html_()


def test_no_points_raises_with_the_diagnosis(config):
    fn = _define(mistake_source("attention", "causal_mask__transposed"), "causal_mask")
    result = check("attention.causal_mask", fn, config=config, points=2)
    assert result.max_points == 2.0 and result.points == 0.4       # T=1 passes: 1 of 5 cases
    inverted = _define(mistake_source("attention", "causal_mask__inverted"), "causal_mask")
    with pytest.raises(ExerciseFailed, match=r"(?s)0 / 1 points.*Looks like: mask inverted"):
        check("attention.causal_mask", inverted, config=config).award()


def test_results_agree_with_the_sandboxed_engine(config, grade_dir, make_submission):
    buggy = mistake_source("attention", "positional_encoding__exponent_i")
    sandboxed = grade_dir(make_submission({"attention.positional_encoding": buggy}), "attention.positional_encoding")
    here = check("attention.positional_encoding", _define(buggy, "positional_encoding"), config=config)
    engine = sandboxed.exercises[0]
    assert (here.points, here.exercise.status, here.exercise.diagnosis) == \
        (engine.points, engine.status, engine.diagnosis)
    assert [c.status for c in here.exercise.cases] == [c.status for c in engine.cases]


def test_forbidden_apis_are_caught_and_the_tripwires_removed(config):
    original = F.scaled_dot_product_attention
    direct = _define("def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                     "    return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask), None\n",
                     "scaled_dot_product_attention")
    result = check("attention.scaled_dot_product_attention", direct, config=config)
    assert result.exercise.status.value == "forbidden" and result.points == 0
    assert result.exercise.message.startswith("uses a forbidden API: torch.nn.functional.scaled_dot_product_attention "
                                              "(line 2)")                           # static, alias F resolved
    hidden = _define("def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                     "    fn = getattr(F, 'scaled_dot_product' + '_attention')\n"
                     "    out = fn(Q, K, V, attn_mask=mask)\n"
                     "    return out, torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1)\n",
                     "scaled_dot_product_attention")
    result = check("attention.scaled_dot_product_attention", hidden, config=config)
    assert result.exercise.status.value == "forbidden"
    assert result.exercise.message.startswith("called a forbidden API while running")      # the tripwire
    assert F.scaled_dot_product_attention is original and torch.nn.functional.scaled_dot_product_attention is original


def test_dependencies_use_the_trusted_substitute_then_come_back(config):
    """MHA is graded with the grader's SDPA in place of a buggy one, as in the sandbox; then the notebook's
    is restored."""
    buggy_sdpa = _define(mistake_source("attention", "scaled_dot_product_attention__no_scale"),
                         "scaled_dot_product_attention")
    mha, namespace = _solution("multi_head_attention")
    namespace["scaled_dot_product_attention"] = buggy_sdpa
    result = check("attention.multi_head_attention", mha, config=config)
    assert result.passed, str(result)
    assert namespace["scaled_dot_product_attention"] is buggy_sdpa
    assert any("in place of yours" in n for n in result.exercise.notes)


def _cells(*sources) -> dict:
    """A notebook's globals after running these cells, in order."""
    namespace: dict = {}
    for source in sources:
        exec(compile(source.read_text(), str(source), "exec"), namespace)
    return namespace


def test_dependencies_answer_as_in_the_sandbox(config):
    """The substitutes are wrapped as the sandbox's child wraps them (grader.sandbox.substitutes): a call
    beyond the contract goes to the notebook's own function, a namedtuple's fields read by name, and the
    note says whether the substitute was used at all."""
    beyond = _cells(SOLUTIONS / "mlp.py", SUBMISSIONS / "calls_beyond_the_contract" / "mlp.py")
    result = check("mlp.mlp_backward", beyond["mlp_backward"], config=config)
    assert result.passed and result.points == result.max_points, str(result)

    named = _cells(SUBMISSIONS / "named_tuple_returns" / "lstm.py")
    result = check("lstm.lstm_forward", named["lstm_forward"], config=config)
    assert result.passed and result.points == result.max_points, str(result)
    assert any("reference lstm_cell in place of yours" in n for n in result.exercise.notes)

    inlined = _cells(SUBMISSIONS / "recurrent_cells_inlined" / "lstm.py")
    result = check("lstm.lstm_forward", inlined["lstm_forward"], config=config)
    assert result.passed and "graded on its own code" in " ".join(result.exercise.notes), result.exercise.notes


def test_in_place_edits_exceptions_and_prints_are_reported(config, capsys):
    in_place = _define("def positional_encoding(T, d_model):\n"
                       "    print('computing', T)\n"
                       "    raise ValueError('d_model must be even')\n", "positional_encoding")
    result = check("attention.positional_encoding", in_place, config=config)
    assert result.exercise.status.value == "error"
    assert "ValueError: d_model must be even" in result.exercise.cases[0].message
    assert "computing 10" in result.exercise.output
    assert "computing" not in capsys.readouterr().out          # captured, never printed (nbgrader's stderr rule)
    mutating = _define("def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                       "    Q /= math.sqrt(Q.shape[-1])\n"
                       "    w = torch.softmax(Q @ K.transpose(-2, -1), dim=-1) if mask is None else "
                       "torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float('-inf')), dim=-1)\n"
                       "    return w @ V, w\n", "scaled_dot_product_attention")
    result = check("attention.scaled_dot_product_attention", mutating, config=config)
    assert "modified its input in place (Q)" in result.exercise.cases[0].message


def test_html_escapes_what_the_student_printed(config):
    fn = _define("def causal_mask(T):\n    print('<script>alert(1)</script>')\n"
                 "    return torch.tril(torch.ones(T, T, dtype=torch.bool))\n", "causal_mask")
    html = check("attention.causal_mask", fn, config=config)._repr_html_()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_bad_calls_say_what_to_do(config):
    with pytest.raises(ValueError, match="Did you mean 'attention.causal_mask'"):
        check("attention.casual_mask", lambda T: T, config=config)
    with pytest.raises(TypeError, match=r"check\('attention.causal_mask', causal_mask\)"):
        check("attention.causal_mask", "causal_mask", config=config)


def test_the_function_may_have_another_name_and_helpers_are_checked_too(config):
    """`check("attention.causal_mask", my_mask)`: graded as causal_mask; a notebook helper it calls is
    scanned for forbidden APIs as the sandbox scans module helpers."""
    mine = _define("def my_mask(T):\n    return torch.tril(torch.ones(T, T, dtype=torch.bool))\n", "my_mask")
    assert check("attention.causal_mask", mine, config=config).passed
    notebook: dict = {}                                          # two cells, one namespace
    _define("def _attend(Q, K, V, mask):\n"
            "    return torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)\n",
            "_attend", notebook)
    outer = _define("def sdpa(Q, K, V, mask=None):\n    return _attend(Q, K, V, mask), None\n", "sdpa", notebook)
    result = check("attention.scaled_dot_product_attention", outer, config=config)
    assert result.exercise.message.startswith("uses a forbidden API: torch.nn.functional.scaled_dot_product_attention")


@pytest.mark.slow
def test_every_worked_solution_earns_full_marks_in_process(config, solution_modules):
    """Drivers (trajectories, train_xor's call counting through the notebook's globals), judges,
    localisers and substitutes all work on a function living in this process."""
    from grader.catalog import catalog
    failed = {}
    for exercise_id, spec in catalog().items():
        fn = getattr(solution_modules[spec.module], spec.function)
        result = check(exercise_id, fn, config=config)
        if not result.passed:
            failed[exercise_id] = result.exercise.message
    assert not failed
