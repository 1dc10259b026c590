"""The run-time tripwires (grader.sandbox.tripwires) where the static scan proves nothing: a real
tensor's method trips, a method of the student's own class of the same name never does, and each
hit names the line of the student's code that made the call.

install() patches torch for the life of the process (the sandbox's child dies after one
exercise), so the probes run in a subprocess of their own, from a script file outside torch and
the grader: that file stands for the student's module.
"""
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from grader.catalog import rules

PROBE = textwrap.dedent('''
    import json, sys
    import torch
    from grader.catalog import rules
    from grader.sandbox import tripwires
    from dataclasses import asdict

    INSTALLED = [asdict(r) for r in (rules.RELU, rules.SIGMOID, rules.SIGN, rules.AUTOGRAD)]
    originals = {}
    for r in INSTALLED:
        for d in r["patch"]:
            try:
                owner, attr = tripwires._resolve(d)
                originals[d] = (owner, attr, getattr(owner, attr))
            except (LookupError, AttributeError):
                pass
    if PREPARED:        # as the zygote does for its catalog: TANH's made too, never installed here
        tripwires.prepare([(r["name"], d) for r in INSTALLED + [asdict(rules.TANH)] for d in r["patch"]])
    hits = tripwires.Hits()
    tripwires.install(INSTALLED, hits)


    class Value:                                  # a micrograd-style class of the student's own
        def __init__(self, data):
            self.data = data

        def relu(self):
            return Value(max(self.data, 0.0))

        def sign(self):
            return 1.0 if self.data > 0 else -1.0

        def backward(self):
            return 1.0

        def requires_grad_(self, flag=True):
            return self


    def probe(name, fn):
        before = len(hits.items)
        fn()
        return name, hits.items[before:]


    z = torch.tensor([-1.0, 2.0])
    report = dict([
        probe("own_methods", lambda: (Value(-2.0).relu(), Value(1.0).sign(), Value(1.0).backward(),
                                      Value(0.0).requires_grad_(True))),
        probe("relu", lambda: z.relu()),
        probe("relu_", lambda: z.clone().relu_()),
        probe("sigmoid", lambda: z.sigmoid()),
        probe("sign", lambda: z.sign()),
        probe("requires_grad_off", lambda: (z.clone().requires_grad_(False),
                                            z.clone().requires_grad_(requires_grad=False))),
        probe("requires_grad_on", lambda: z.clone().requires_grad_()),
    ])

    def attribute_then_backward():
        x = z.clone()
        x.requires_grad = True
        (x * x).sum().backward()
    report.update(dict([probe("attribute_then_backward", attribute_then_backward)]))

    def engine_directly():
        x = z.clone()
        x.requires_grad = True
        y = (x * x).sum()
        engine = torch.autograd.Variable._execution_engine
        engine.run_backward((y,), (torch.ones(()),), False, False, (), allow_unreachable=True, accumulate_grad=True)
    report.update(dict([
        probe("engine_directly", engine_directly),
        probe("func_jvp", lambda: torch.func.jvp(torch.sin, (z,), (torch.ones_like(z),))),
        probe("functional_jacobian", lambda: torch.autograd.functional.jacobian(torch.sin, z)),
    ]))
    # The zygote's wrappers are the ones in place (a Python function: itself, tripped in place by the
    # zygote); one made but not installed records nothing.
    from grader.sandbox import tripped_code
    patched = [d for d, (owner, attr, original) in originals.items()
               if getattr(owner, attr) is not original or id(original) in tripped_code._armed]
    in_place = [key for key, (owner, attr, _, wrapper) in tripwires._ready.items()
                if key in tripwires._installed and getattr(owner, attr) is wrapper]
    report.update(dict([probe("prepared_not_installed", lambda: tripwires._ready[("torch.tanh", "torch.tanh")][3](z))
                        if PREPARED else ("prepared_not_installed", [])]))
    lines = {}
    for i, text in enumerate(open(__file__).read().splitlines(), 1):
        for n in ("z.relu()", "x * x).sum().backward()"):
            if n in text:
                lines.setdefault(n, i)                # the first: the call, not this search
    print(json.dumps({"report": report, "lines": lines, "in_place": len(in_place), "patched": len(patched)}))
''')


def _run_probe(tmp_path, prepared: bool):
    script = tmp_path / "student_module.py"
    script.write_text(PROBE.replace("import json, sys\n", f"import json, sys\nPREPARED = {prepared}\n", 1))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("prepared", [False, True], ids=["made in the child", "made in the zygote"])
def test_tensor_methods_trip_and_the_students_own_methods_never_do(tmp_path, prepared):
    """The same hits, with the same lines, whether the child makes its wrappers or puts in place
    those the zygote made (grader.sandbox.tripwires.prepare)."""
    out = _run_probe(tmp_path, prepared)
    report, lines = out["report"], out["lines"]
    assert out["patched"] > 20 and out["in_place"] == (out["patched"] if prepared else 0)
    assert report["prepared_not_installed"] == []
    vias = {name: [h["via"] for h in hits] for name, hits in report.items()}
    assert vias["own_methods"] == []
    assert vias["relu"] == ["torch.Tensor.relu"] and vias["relu_"] == ["torch.Tensor.relu_"]
    assert vias["sigmoid"] == ["torch.Tensor.sigmoid"] and vias["sign"] == ["torch.Tensor.sign"]
    assert vias["requires_grad_off"] == [] and vias["requires_grad_on"] == ["torch.Tensor.requires_grad_"]
    # x.requires_grad = True sets a flag (not patchable, and harmless alone); the backward trips
    assert vias["attribute_then_backward"][0] == "torch.Tensor.backward"
    assert "torch.autograd.variable.Variable._execution_engine" in vias["attribute_then_backward"]
    assert vias["engine_directly"] == ["torch.autograd.variable.Variable._execution_engine"]
    assert "torch.func.jvp" in vias["func_jvp"] and "torch.autograd.forward_ad.make_dual" in vias["func_jvp"]
    assert vias["functional_jacobian"][0] == "torch.autograd.functional.jacobian"
    (relu,) = report["relu"]
    assert (relu["rule"], relu["file"], relu["line"]) == ("torch.relu", "student_module.py", lines["z.relu()"])
    backward = report["attribute_then_backward"][0]
    assert (backward["file"], backward["line"]) == ("student_module.py", lines["x * x).sum().backward()"])


def test_every_tensor_method_a_rule_patches_exists():
    """A misspelt torch.Tensor.<method> in a rule would be skipped silently by install()."""
    for rule in vars(rules).values():
        if isinstance(rule, rules.Forbidden):
            for dotted in rule.patch:
                if dotted.startswith("torch.Tensor."):
                    assert hasattr(torch.Tensor, dotted.rsplit(".", 1)[1]), (rule.name, dotted)
    assert asdict(rules.RELU)["patch"]


def test_a_tripwire_does_not_hand_out_the_original_it_wraps():
    """inspect.unwrap() and `__wrapped__`, the textbook ways past a decorator, find the tripwire itself
    (the red team's xavier_uniform_ in glorot_uniform went that way); its name and signature are the
    original's, for a student who reads them."""
    import inspect
    from grader.sandbox import tripwires

    tripped = []
    for original in (torch.nn.init.xavier_uniform_, torch.relu):      # a Python function, a builtin
        wrapper = tripwires._wire(original, "x", lambda name=original.__name__: tripped.append(name))
        assert not hasattr(wrapper, "__wrapped__") and inspect.unwrap(wrapper) is wrapper
        assert wrapper.__name__ == original.__name__
        wrapper(torch.ones(2, 3))
    assert tripped == ["xavier_uniform_", "relu"]
    xavier = tripwires._wire(torch.nn.init.xavier_uniform_, "x", lambda: None)
    assert inspect.signature(xavier) == inspect.signature(torch.nn.init.xavier_uniform_)
    module = tripwires._wire(torch.autograd.graph, "x", lambda: None)     # an object watched method by method
    assert not hasattr(module.increment_version, "__wrapped__")


@pytest.mark.parametrize("prepared", [False, True], ids=["made in the child", "made in the zygote"])
def test_replacing_the_record_method_silences_no_tripwire(tmp_path, prepared):
    """Every tripwire and the dispatch-mode net recorded through Hits.add, looked up at each hit: one
    assignment in the student's module silenced them all (red team: torch.optim.Adam, xavier_uniform_
    and clip_grad_norm_, Python-level APIs no kernel count covers, passed). Each records with the
    method it was installed with."""
    script = tmp_path / "student_module.py"
    script.write_text(textwrap.dedent(f'''
        import importlib, json
        from dataclasses import asdict
        import torch
        from grader.catalog import rules
        from grader.sandbox import tripwires

        if {prepared}:
            tripwires.prepare([(rules.XAVIER.name, d) for d in rules.XAVIER.patch])
        hits = tripwires.Hits()
        tripwires.install([asdict(rules.XAVIER), asdict(rules.RELU)], hits)
        watch = tripwires.AtenWatch([asdict(rules.RELU)], hits)
        tripwires.Hits.add = lambda *a, **k: None
        init = importlib.import_module("torch.nn." + "init")
        getattr(init, "xavier_" + "uniform_")(torch.empty(3, 4))
        with watch:
            torch.ops.aten.relu(torch.ones(2))
        print(json.dumps(sorted({{h["rule"] for h in hits.items}})))
    '''))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == sorted([rules.XAVIER.name, rules.RELU.name])


def test_a_target_two_rules_patch_records_both(tmp_path):
    """The second rule finds the target already replaced, so it wraps what is there (the zygote's
    wrapper of the first, grader.sandbox.tripwires.prepare), as two wrappers made in the child do."""
    script = tmp_path / "student_module.py"
    script.write_text(textwrap.dedent('''
        import json
        from dataclasses import asdict, replace
        import torch
        from grader.catalog import rules
        from grader.sandbox import tripwires

        twin = replace(rules.RELU, name="relu's twin")
        tripwires.prepare([(r.name, d) for r in (rules.RELU, twin) for d in r.patch])
        hits = tripwires.Hits()
        tripwires.install([asdict(rules.RELU), asdict(twin)], hits)
        torch.relu(torch.ones(2))
        print(json.dumps(sorted(h["rule"] for h in hits.items)))
    '''))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == sorted([rules.RELU.name, "relu's twin"])


def test_a_hit_keeps_its_line_when_torch_is_imported_through_a_link_the_child_cannot_see(tmp_path):
    """A virtual environment reached through a link in /tmp (a clone there, with `.venv` linked to a
    shared one): the child's /tmp is a fresh tmpfs with only what it may read bound back, so it
    cannot resolve the link, and the frames of torch's own code, imported through it, passed for the
    student's. The ATen net's hit on `torch.ops.aten._softmax` lost its line, and one backward() call
    listed the engine's wires beside it, each without a line."""
    from conftest import mistake_source, replace_function

    linked = Path(tempfile.mkdtemp(prefix="grader-linked-venv-", dir="/tmp"))
    try:
        (linked / "venv").symlink_to(sys.prefix)
        submission = tmp_path / "submission"
        submission.mkdir()
        source = replace_function((ROOT / "solutions" / "activations.py").read_text(), "softmax",
                                  mistake_source("activations", "softmax__aten_softmax"))
        (submission / "activations.py").write_text(source)
        line = 1 + source.splitlines().index("    return torch.ops.aten._softmax(z, dim, False)")
        report = tmp_path / "results.json"
        proc = subprocess.run([str(linked / "venv" / "bin" / "python"), "-m", "grader", "check", "--submission",
                               str(submission), "--format", "json", "--output", str(report), "activations.softmax"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
    finally:
        shutil.rmtree(linked)
    output = html.unescape(" ".join(t.get("output", "") for t in json.loads(report.read_text())["tests"]))
    assert f"aten::_softmax (line {line}): torch.softmax." in output, output


FAMILY_ROUTES = {
    "sparse softmax": (rules.SOFTMAX, lambda z, x: torch.sparse.softmax(z.to_sparse(), -1),
                       "aten::_sparse_softmax"),
    "foreach sigmoid": (rules.SIGMOID, lambda z, x: torch._foreach_sigmoid([z]), "aten::_foreach_sigmoid"),
    "mkldnn max pool": (rules.MAX_POOL, lambda z, x: torch.mkldnn_max_pool2d(x.to_mkldnn(), [2, 2], [2, 2]),
                        "aten::mkldnn_max_pool2d"),
    "mkldnn convolution": (rules.CONVOLUTION, lambda z, x: torch.ops.mkldnn._convolution_pointwise(
        x, torch.ones(1, 2, 2, 2), None, [0, 0], [1, 1], [1, 1], 1, "none", [], ""), "mkldnn::_convolution_pointwise"),
}


@pytest.mark.parametrize("route", FAMILY_ROUTES)
def test_the_dispatch_mode_sees_a_rules_family_by_the_operators_name(route):
    """The same computation in another layout or backend has an operator of another name, which no
    `aten` substring of the rule holds: the mode matches the rule's family on the name (in-child net;
    the kernel's count is the authoritative one, tests/test_textbook_gradients.py)."""
    from grader.sandbox import tripwires
    rule, call, operator = FAMILY_ROUTES[route]
    z, x = torch.randn(3, 4), torch.randn(1, 2, 4, 4)
    hits = tripwires.Hits()
    with tripwires.AtenWatch([asdict(rule)], hits):
        call(z, x)
    assert {h["rule"] for h in hits.items} == {rule.name}
    assert operator in {h["via"].partition(".")[0] for h in hits.items}, hits.items


def test_the_family_spares_correct_code_and_other_functions():
    """A written softmax and pools, im2col, hardsigmoid (another function whose name holds 'sigmoid'):
    no hit."""
    from grader.sandbox import tripwires
    z, x = torch.randn(3, 4), torch.randn(1, 2, 4, 4)
    hits = tripwires.Hits()
    watched = [asdict(r) for r in (rules.SOFTMAX, rules.SIGMOID, rules.MAX_POOL, rules.CONVOLUTION)]
    with tripwires.AtenWatch(watched, hits):
        e = torch.exp(z - z.amax(-1, keepdim=True))
        e / e.sum(-1, keepdim=True)
        x.unfold(2, 2, 2).unfold(3, 2, 2).amax(dim=(-2, -1))
        torch.nn.functional.hardsigmoid(z)
        torch.nn.functional.unfold(x, 2)
    assert hits.items == []
