"""The pipeline's cheaper paths give the same records (issue 18).

- the engine starts the exercises whose spec allows the longest calls first, then those built on
  others (substitutes, a driver), and returns the results in the order it was given;
- `grader check` builds its parser without importing the other commands' modules;
- the capstone's Adam (PyTorch's fused kernel called directly) is torch.optim.Adam, step for step,
  and does not import torch._dynamo as torch.optim's fused and foreach paths do;
- the operator watch sees the capstone's forward passes, not the grader's own backward passes and
  updates, and is on again, as it was, once each is done;
- a substitute (the grader's code standing in for a function the student's calls) runs outside the
  operator watch; the student's own operators before and after it are seen.
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.catalog import catalog
from grader.pipeline import engine
from grader.sandbox import tripwires
from grader.sandbox.substitutes import recorded
from grader.sandbox.trusted import capstone_training
from grader.sandbox.trusted.capstone_training import Adam

ROOT = Path(__file__).resolve().parent.parent


def test_longest_calls_start_first_and_results_keep_their_order(sandbox, config, monkeypatch):
    specs = [catalog()[i] for i in ("attention.causal_mask", "activations.relu", "losses.mse_loss")]
    specs[2] = dataclasses.replace(specs[2], call_timeout=25.0)
    specs[1] = dataclasses.replace(specs[1], call_timeout=15.0)
    assert engine._longest_first(specs) == [2, 1, 0]
    started = []
    real = engine.grade_exercise

    def record(spec, ctx):
        started.append(spec.id)
        return real(spec, ctx)
    monkeypatch.setattr(engine, "grade_exercise", record)
    result = engine.grade(str(ROOT / "solutions"), specs, dataclasses.replace(config, jobs=1), sandbox=sandbox)
    assert started == [specs[2].id, specs[1].id, specs[0].id]
    assert [e.id for e in result.exercises] == [s.id for s in specs]
    assert all(e.points == e.max_points for e in result.exercises), [e.message for e in result.exercises]


def test_the_catalogs_longest_exercises_start_first():
    specs = list(catalog().values())
    order = [specs[i].id for i in engine._longest_first(specs)]
    assert "transformer.transformer_forward" in order[:4] and "mlp.train_xor" in order[:4]
    # then those built on others: greedy decoding (the whole transformer's substitutes) before any plain one
    plain = [s.id for s in specs if not (s.call_timeout or s.depends or s.driver)]
    assert order.index("transformer.greedy_decode") < min(map(order.index, plain))
    assert order.index("transformer.decoder_layer") < order.index("transformer.add_and_norm")
    assert [i for i in order if i in plain] == plain            # the others as listed


def test_exercises_built_on_others_start_before_plain_ones():
    relu, mse, mlp = (catalog()[i] for i in ("activations.relu", "losses.mse_loss", "mlp.mlp_backward"))
    specs = [relu, dataclasses.replace(mse, depends={}), mlp, dataclasses.replace(relu, driver="x:y"),
             dataclasses.replace(relu, call_timeout=1.0)]
    assert len(mlp.depends) > 1
    assert engine._longest_first(specs) == [4, 2, 3, 0, 1]


def test_check_builds_its_parser_alone():
    code = ("import sys, grader.cli as cli; p = cli.build_parser(['check', '--help-not-parsed']); "
            "print(sorted(m for m in sys.modules if m.startswith('grader.frontends.commands.'))); "
            "p2 = cli.build_parser(['init-ci']); print(sorted(p2._subparsers._group_actions[0].choices)); "
            "print(len(cli.build_parser(['--version'])._subparsers._group_actions[0].choices))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    alone, init_ci, every = p.stdout.splitlines()
    assert alone == "['grader.frontends.commands.check']", p.stdout + p.stderr
    assert init_ci == "['init-ci']"
    assert int(every) >= 9
    p = subprocess.run([sys.executable, "-m", "grader", "chek"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "'check'" in p.stderr and "'batch'" in p.stderr      # every choice listed


def test_capstone_adam_is_torch_adam():
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(4, 3, generator=gen) for _ in range(3)] + [torch.randn(5, generator=gen)]
    ours, fused, plain = ([w.clone().requires_grad_() for w in start] for _ in range(3))
    optimizers = (Adam(ours, 3e-3), torch.optim.Adam(fused, lr=3e-3, fused=True), torch.optim.Adam(plain, lr=3e-3))
    for _ in range(25):
        for weights, opt in zip((ours, fused, plain), optimizers):
            opt.zero_grad()
            sum(((w ** 3).sum() for w in weights[:3]), torch.zeros(())).backward()     # the last one gets no grad
            opt.step()
    assert all(torch.equal(a, b) for a, b in zip(ours, fused))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(ours, plain))
    assert torch.equal(ours[3], start[3])


def test_capstone_adam_does_not_import_dynamo():
    code = ("import sys, torch; from grader.sandbox.trusted.capstone_training import Adam; "
            "w = [torch.randn(3, requires_grad=True)]; o = Adam(w, 1e-3); w[0].sum().backward(); o.step(); "
            "print('torch._dynamo' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "False", p.stdout + p.stderr


def test_the_operator_watch_sees_the_capstones_forward_not_the_graders_own_work(monkeypatch):
    from torch._C import _len_torch_dispatch_stack
    spec = catalog()["transformer.transformer_forward"]
    monkeypatch.syspath_prepend(str(ROOT / "solutions"))     # the course modules it imports
    monkeypatch.setattr(sys, "modules", dict(sys.modules))   # and imports only for this test
    module = _solution_with_substitutes("transformer", spec.depends)
    stack = []

    def forward(*args):
        stack.append(_len_torch_dispatch_stack())
        return module.transformer_forward(*args)
    rules = [{"name": "forward softmax", "aten": ("aten::_softmax",)},
             {"name": "backward softmax", "aten": ("_softmax_backward",)},
             {"name": "weights", "aten": ("aten::randn",)},
             {"name": "batches", "aten": ("aten::randint", "aten::flip")},
             {"name": "loss", "aten": ("aten::_log_softmax", "aten::nll_loss")},
             {"name": "optimizer", "aten": ("aten::_fused_adam",)}]
    hits = tripwires.Hits()
    with tripwires.AtenWatch(rules, hits):
        capstone_training.train(forward, {**capstone_training.task(0), "steps": 3, "eval_size": 4})
        assert _len_torch_dispatch_stack() == 1
    assert {h["rule"] for h in hits.items} == {"forward softmax"}, hits.items
    assert stack == [1] * 4                       # three training steps and the held-out pass, watched


def test_the_capstone_refuses_logits_of_a_tensor_subclass(monkeypatch):
    spec = catalog()["transformer.transformer_forward"]
    monkeypatch.syspath_prepend(str(ROOT / "solutions"))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    module = _solution_with_substitutes("transformer", spec.depends)
    ran = []

    class Logits(torch.Tensor):          # student code that would run inside the grader's unwatched work
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            ran.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    def forward(*args):
        return module.transformer_forward(*args).as_subclass(Logits)
    ran.clear()
    with pytest.raises(capstone_training.CapstoneError, match="not a plain torch.Tensor"):
        capstone_training.train(forward, {**capstone_training.task(0), "steps": 3, "eval_size": 4})
    assert not ran, ran


def test_a_substitute_runs_outside_the_operator_watch_and_the_students_code_inside():
    from torch._C import _len_torch_dispatch_stack
    stacks, called, hits = [], set(), tripwires.Hits()

    def grader_softmax(x):
        stacks.append(_len_torch_dispatch_stack())
        return torch.softmax(x, -1)
    substitute = recorded("softmax", grader_softmax, called)
    with tripwires.AtenWatch([{"name": "softmax", "aten": ("aten::_softmax",)}], hits):
        torch.testing.assert_close(substitute(torch.ones(4)), torch.full((4,), 0.25))
        assert not hits.items, hits.items        # the grader's softmax: unwatched
        assert _len_torch_dispatch_stack() == 1   # and the watch is back on
        torch.softmax(torch.ones(4), -1)         # the student's own
    assert stacks == [0] and called == {"softmax"}
    assert [h["via"] for h in hits.items] == ["aten::_softmax"]


def _solution_with_substitutes(name: str, depends: dict[str, str]):
    """solutions/<name>.py as a module of its own, the spec's trusted substitutes in place, as in the child."""
    import importlib
    import importlib.util
    loader = importlib.util.spec_from_file_location(f"solution_{name}", ROOT / "solutions" / f"{name}.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    for function, ref in depends.items():
        where, _, attr = ref.partition(":")
        setattr(module, function, getattr(importlib.import_module(where), attr))
    return module
