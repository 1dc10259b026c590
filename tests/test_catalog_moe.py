"""The mixture-of-experts exercise ("what comes next"), graded end to end through the sandbox.

What every chapter checks (solution, stub, known mistakes, independent solutions in
tests/fixtures/submissions/alt_moe_<style>/) is tests/chapter_checks.py; moe_forward has no
operator watch, so a grading run takes about a second and its variants run with the fast tests.
Here are the chapter's table and what only it does:
- moe_forward is graded with the grader's feed_forward: a wrong FFN in transformer.py costs
  transformer.feed_forward only;
- the cases route every token unambiguously, whatever the seed.
"""
from __future__ import annotations

import pytest
import torch

from chapter_checks import AlternativeChecks, ChapterChecks
from conftest import mistake_source
from grader.catalog.chapters.moe import _moe, moe_cases, ref_moe_forward
from grader.results import Status
from grader.threads import pinned

# (exercise id, variant in tests/fixtures/mistakes/moe.py, diagnosis the grader must give)
MISTAKES = [
    ("moe.moe_forward", "softmax_all", "softmax over all experts"),
    ("moe.moe_forward", "dense", "every expert used (top-k ignored)"),
    ("moe.moe_forward", "no_gates", "gates missing"),
    ("moe.moe_forward", "raw_scores", "raw scores as gates"),
    ("moe.moe_forward", "lowest", "the k lowest-scoring experts"),
]


class TestMoe(ChapterChecks, AlternativeChecks):
    MODULE, MISTAKES = "moe", MISTAKES
    SLOW_VARIANTS = False
    MISTAKE_STATUSES = ("failed",)              # every variant computes, wrongly
    ALTERNATIVES_OVER_SOLUTIONS = True          # moe.py imports transformer's feed_forward


def test_a_wrong_ffn_is_charged_to_feed_forward_only(grade_dir, make_submission):
    sub = make_submission({"transformer.feed_forward": mistake_source("transformer", "feed_forward__no_relu")})
    results = {e.id: e for e in grade_dir(sub, "transformer.feed_forward", "moe.moe_forward").exercises}
    assert results["transformer.feed_forward"].status is Status.FAILED
    assert results["moe.moe_forward"].status is Status.PASSED
    assert any("reference feed_forward in place of yours" in n for n in results["moe.moe_forward"].notes)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cases_route_unambiguously_for_hidden_seeds(seed):
    """For any seed (the secret one too) a float32 mixture routes like the float64 reference,
    and the reference is the top-k mixture written another way."""
    with pinned(1):
        for case in moe_cases(torch.Generator().manual_seed(seed)):
            X, router_W, experts, k = case.args
            expected = ref_moe_forward(*case.args)
            assert torch.allclose(_moe(X, router_W, experts, k), expected, atol=2e-5, rtol=2e-4), case.name
