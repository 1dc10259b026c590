"""grader.pipeline.engine end to end on a tiny made-up exercise, in the session's real sandbox:
cases, the child, judging, hidden cases, overrides and scoring composed as in a real grading."""
import dataclasses
import json

import torch

from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, Verdict
from grader.config import ExerciseConfig
from grader.pipeline.context import Context, ModuleLoad
from grader.pipeline.engine import grade
from grader.results import FailureKind, Status, from_dict, to_dict
from grader.sandbox import wire

SECRET = "V_2x4x8_secret"


def _cases(gen):
    return [Case("small", (torch.randn(2, 3, generator=gen),)), Case("wide", (torch.randn(3, 5, generator=gen),))]


def _close(case, value, ref, tol):
    atol, rtol = tol(ref.dtype)
    ok = isinstance(value, torch.Tensor) and value.shape == ref.shape and bool(torch.allclose(value, ref, atol=atol,
                                                                                               rtol=rtol))
    return Verdict(ok, "" if ok else "not close")


DOUBLE = ExerciseSpec(id="toy.double", cases=_cases, reference=lambda x: 2 * x, reference_source="2 * x",
                      mistakes=(KnownMistake("tripled", "multiply by 2, not 3", lambda x: 3 * x),))
JUDGED = ExerciseSpec(id="toy.judged", cases=_cases, reference=lambda x: x + 1, reference_source="x + 1", judge=_close)

SOURCE = f'''
import torch


class {SECRET}(Exception):
    pass


def double(x):
    {{double}}


def judged(x):
    return x + 1 + 1e-3
'''


def submit(tmp_path, double):
    folder = tmp_path / "sub"
    folder.mkdir(parents=True)
    (folder / "toy.py").write_text(SOURCE.replace("{double}", double))
    return folder


def test_right_and_wrong_answers_with_a_diagnosis(tmp_path, sandbox, config):
    result = grade(str(submit(tmp_path, "return 3 * x")), [DOUBLE, JUDGED], config, sandbox=sandbox)
    double, judged = result.exercises
    assert double.status is Status.FAILED and double.points == 0.0 and double.diagnosis.startswith("tripled"), \
        (double.status, double.message)
    assert [c.failure for c in double.cases] == [FailureKind.WRONG_ANSWER] * 2
    assert judged.status is Status.FAILED and judged.cases[0].message == "not close", \
        (judged.status, judged.message)     # default atol is 1e-5
    assert from_dict(json.loads(json.dumps(to_dict(result)))) == result


def test_an_input_changed_in_place_is_named_by_its_parameter(tmp_path, sandbox, config):
    right = grade(str(submit(tmp_path / "a", "y = 2 * x\n    x.zero_()\n    return y")), [DOUBLE], config,
                  sandbox=sandbox).exercises[0]
    assert [c.failure for c in right.cases] == [FailureKind.MODIFIED_INPUT] * 2
    assert right.cases[0].message.startswith("modified its input in place (x): work on new tensors")
    wrong = grade(str(submit(tmp_path / "b", "x.mul_(3)\n    return x")), [DOUBLE], config,
                  sandbox=sandbox).exercises[0]
    assert [c.failure for c in wrong.cases] == [FailureKind.WRONG_ANSWER] * 2      # and why it may be wrong:
    assert wrong.cases[0].message.endswith("\nit also modified its input in place (x): work on new tensors and "
                                           "leave the inputs unchanged")


def test_a_function_defined_twice_is_graded_as_python_keeps_it_and_said(tmp_path, sandbox, config):
    result = grade(str(submit(tmp_path, "return 3 * x\n\n\ndef double(x):\n    return 2 * x")), [DOUBLE], config,
                   sandbox=sandbox).exercises[0]
    first = SOURCE.splitlines().index("def double(x):") + 1
    assert result.status is Status.PASSED and result.source_line == first + 4       # the last, as Python keeps
    assert result.notes[-1] == (f"double is defined 2 times in toy.py (lines {first}, {first + 4}): Python keeps the "
                                f"last, line {first + 4}, and that is the one graded; delete the others")


def test_a_configured_tolerance_reaches_the_judge(tmp_path, sandbox, config):
    loose = dataclasses.replace(config, exercises={**config.exercises, "toy.judged": ExerciseConfig(atol=1e-2)})
    result = grade(str(submit(tmp_path, "return 2 * x")), [DOUBLE, JUDGED], loose, sandbox=sandbox)
    assert [e.status for e in result.exercises] == [Status.PASSED, Status.PASSED]
    assert result.score == 2.0 and result.exercises[0].message == "all 2 cases passed"


def test_hidden_cases_say_only_the_kind_of_failure(tmp_path, sandbox, config):
    raising = f'raise {SECRET}("x = " + str(x.flatten()[:3].tolist()))'
    hidden = dataclasses.replace(config, secret_seed=12345)
    (e,) = grade(str(submit(tmp_path, raising)), [DOUBLE], hidden, sandbox=sandbox).exercises
    public, secret = [c for c in e.cases if not c.hidden], [c for c in e.cases if c.hidden]
    assert len(public) == len(secret) == 2 and e.status is Status.ERROR
    assert public[0].message.startswith(f"{SECRET}: x = [")            # a public case says it all
    for c in secret:
        assert c.failure is FailureKind.EXCEPTION and c.message == "raised an exception"
        assert SECRET not in json.dumps(to_dict(c)) and c.description == "inputs withheld (hidden case)"


def test_a_second_grading_sends_the_arguments_encoded_with_the_kept_cases(tmp_path, sandbox, config, monkeypatch):
    """A batch worker encodes each case's arguments once (cases.prepared), not once per submission:
    the second grading sends the kept bytes, and its children still get every case's inputs."""
    spec = dataclasses.replace(DOUBLE)           # a spec object of its own: nothing kept for it yet
    hidden = dataclasses.replace(config, secret_seed=4321)
    encoded = []
    real = wire.arguments
    monkeypatch.setattr(wire, "arguments", lambda *a, **k: encoded.append(1) or real(*a, **k))
    folder = str(submit(tmp_path, "return 2 * x"))
    first = grade(folder, [spec], hidden, sandbox=sandbox).exercises[0]
    assert len(encoded) == 4                    # two public cases, two hidden: each encoded once
    second = grade(folder, [spec], hidden, sandbox=sandbox).exercises[0]
    assert len(encoded) == 4, "the second grading encoded arguments again"
    assert first.status is second.status is Status.PASSED and len(second.cases) == 4, second.message


def test_the_context_decides_each_module_load_once():
    ctx = Context(submission=None, config=None, sandbox=None, deadline=0.0)
    calls = []

    def decide(module):
        calls.append(module)
        return ModuleLoad({module: "x = 1"}, import_error="" if module == "a" else "SyntaxError")
    assert ctx.module_load("a", decide) is ctx.module_load("a", decide)
    ctx.module_load("b", decide)
    assert calls == ["a", "b"] and ctx.import_errors() == (("b", "SyntaxError"),)
    assert ctx.files_for("b") == {"b": "x = 1"} and ctx.remaining() < 0


def test_cases_and_references_are_computed_once_per_process_and_handed_out_as_copies():
    """prepared() keeps what it computed for the next grading and gives each caller its own copy:
    a grading that writes into its inputs or its references changes nothing for the next one."""
    from grader.pipeline.cases import build_cases, prepared, references
    calls = []

    def reference(x):
        calls.append(1)
        return 2 * x
    spec = dataclasses.replace(DOUBLE, id="toy.prepared", reference=reference)
    fresh = build_cases(spec, 7)
    first_cases, first_refs, _ = prepared(spec, 7)
    assert len(calls) == len(fresh) == 4         # two public cases, two hidden
    first_cases[0].args[0].add_(100.0)
    first_refs[0].zero_()
    cases, refs, encoded = prepared(spec, 7)
    assert len(calls) == 4                       # not computed again
    assert [c.name for c in cases] == [c.name for c in fresh] and [c.hidden for c in cases] == [c.hidden for c in fresh]
    assert all(torch.equal(c.args[0], f.args[0]) for c, f in zip(cases, fresh))
    assert all(torch.equal(r, 2 * f.args[0]) for r, f in zip(refs, fresh))
    # the arguments as the children receive them: encoded once, from the kept cases, not the first caller's
    for (args, kwargs), f in zip(map(wire.loads, encoded), fresh):
        assert len(args) == len(f.args) and torch.equal(args[0], f.args[0]) and kwargs == dict(f.kwargs)
    prepared(spec, 8)
    assert len(calls) == 8                       # another secret seed: other hidden cases
    # a spec object of the same id (an override) is not served what another one computed
    prepared(dataclasses.replace(spec), 7)
    assert len(calls) == 12
    assert references(spec, fresh)[0].data_ptr() != refs[0].data_ptr()


def test_cases_a_copy_would_not_reproduce_are_computed_for_every_caller():
    from grader.pipeline.cases import prepared
    calls = []

    def graph(gen):
        return [Case("grad", (torch.randn(2, 3, generator=gen).requires_grad_(),))]

    def reference(x):
        calls.append(1)
        return x * 2
    spec = dataclasses.replace(DOUBLE, id="toy.requires_grad", cases=graph, reference=reference)
    for _ in range(2):
        cases, refs, encoded = prepared(spec, None)
        assert encoded == [None]      # nothing kept: each call encodes its own
        assert cases[0].args[0].requires_grad and torch.equal(refs[0], 2 * cases[0].args[0].detach())
    assert len(calls) == 2


def test_no_reference_makes_the_grading_process_import_sympy():
    """torch imports its symbolic shapes, and sympy with them (0.3 s), the first time autograd is given
    a tensor of upstream gradients: the references reach the same gradients without that (the grading
    process imports it once per check, a batch worker once per worker)."""
    import subprocess
    import sys
    code = ("import sys, torch\n"
            "from grader.catalog import catalog\n"
            "from grader.pipeline.cases import prepared\n"
            "for spec in catalog().values(): prepared(spec, 3)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sympy' or 'symbolic_shapes' in m))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout[:300]
