"""The mixture-of-experts exercise ("what comes next"), graded end to end through the sandbox.

- the worked solution scores full marks and the stub zero ("not implemented");
- every known mistake has a student-written variant (tests/fixtures/mistakes/moe.py) that fails
  with that diagnosis;
- moe_forward is graded with the grader's feed_forward: a wrong FFN in transformer.py costs
  transformer.feed_forward only;
- independently written solutions (tests/fixtures/submissions/alt_moe_<style>/) score full marks;
- the cases route every token unambiguously, whatever the seed.
Each submission is graded once per module (moe_forward has no operator watch, so a grading
run takes about a second).
"""
from __future__ import annotations

import shutil

import pytest
import torch

from conftest import FIXTURES, ROOT, SOLUTIONS, mistake_source, replace_function
from grader.catalog import select
from grader.catalog.chapters.moe import _moe, moe_cases, ref_moe_forward
from grader.pipeline.engine import grade
from grader.results import Status
from grader.threads import pinned

SPEC = select(["moe.moe_forward"])[0]
MISTAKES = [("softmax_all", "softmax over all experts"), ("dense", "every expert used (top-k ignored)"),
            ("no_gates", "gates missing"), ("raw_scores", "raw scores as gates"),
            ("lowest", "the k lowest-scoring experts")]


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sandbox, config):
    """graded(name, functions, files, ids) -> {id: ExerciseResult}, each submission graded once."""
    cache = {}

    def get(name, functions=None, files=None, ids=("moe.moe_forward",)):
        if name not in cache:
            dest = tmp_path_factory.mktemp(name)
            for f in SOLUTIONS.glob("*.py"):
                shutil.copy(f, dest / f.name)
            for target, src in (files or {}).items():
                shutil.copy(src, dest / target)
            for key, source in (functions or {}).items():
                module, function = key.split(".")
                path = dest / f"{module}.py"
                path.write_text(replace_function(path.read_text(), function, source))
            result = grade(str(dest), select(list(ids)), config, sandbox=sandbox)
            cache[name] = {e.id: e for e in result.exercises}
        return cache[name]
    return get


def test_solution_scores_full_marks(graded):
    e = graded("solutions")["moe.moe_forward"]
    assert e.status is Status.PASSED and e.points == e.max_points > 0, e.message


def test_stub_scores_zero_as_not_implemented(sandbox, config):
    (e,) = grade(str(ROOT / "exercises"), [SPEC], config, sandbox=sandbox).exercises
    assert e.status is Status.NOT_IMPLEMENTED and e.points == 0
    assert e.message.startswith("not implemented yet"), e.message


@pytest.mark.parametrize("variant,diagnosis", MISTAKES, ids=[v for v, _ in MISTAKES])
def test_fingerprinted_mistake_is_named(graded, variant, diagnosis):
    source = mistake_source("moe", f"moe_forward__{variant}")
    e = graded(variant, {"moe.moe_forward": source})["moe.moe_forward"]
    assert e.status is Status.FAILED and e.points < e.max_points
    assert e.diagnosis.startswith(diagnosis + ":"), e.diagnosis


def test_every_known_mistake_has_a_fixture():
    assert {d for _, d in MISTAKES} == {m.name for m in SPEC.mistakes}


def test_a_wrong_ffn_is_charged_to_feed_forward_only(graded):
    wrong_ffn = mistake_source("transformer", "feed_forward__no_relu")
    results = graded("wrong_ffn", {"transformer.feed_forward": wrong_ffn},
                     ids=("transformer.feed_forward", "moe.moe_forward"))
    assert results["transformer.feed_forward"].status is Status.FAILED
    assert results["moe.moe_forward"].status is Status.PASSED
    assert any("reference feed_forward in place of yours" in n for n in results["moe.moe_forward"].notes)


@pytest.mark.parametrize("style", ["dispatch", "loops"])
def test_independent_solutions_score_full_marks(graded, style):
    path = FIXTURES / "submissions" / f"alt_moe_{style}" / "moe.py"
    e = graded(f"alt_{style}", files={"moe.py": path})["moe.moe_forward"]
    assert e.status is Status.PASSED, [c.message for c in e.cases]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cases_route_unambiguously_for_hidden_seeds(seed):
    """For any seed (the secret one too) a float32 mixture routes like the float64 reference,
    and the reference is the top-k mixture written another way."""
    with pinned(1):
        for case in moe_cases(torch.Generator().manual_seed(seed)):
            X, router_W, experts, k = case.args
            expected = ref_moe_forward(*case.args)
            assert torch.allclose(_moe(X, router_W, experts, k), expected, atol=2e-5, rtol=2e-4), case.name
