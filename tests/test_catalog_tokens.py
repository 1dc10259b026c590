"""The tokens chapter, graded end to end: byte-pair encoding trained and applied, and the
embedding lookup with its gradient.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, independent
solutions) is tests/chapter_checks.py; here are the chapter's tables and what only BPE does: an
encoding must round-trip, and the large-text cases are timed.
"""
from __future__ import annotations

import pytest

from chapter_checks import AlternativeChecks, ChapterChecks, ForbiddenChecks, case_names


# (exercise id, variant in tests/fixtures/mistakes/tokens.py, diagnosis the grader must give)
MISTAKES = [
    ("tokens.bpe_train", "ties_first", "ties broken by first occurrence"),
    ("tokens.bpe_train", "ties_largest", "ties broken by the largest pair"),
    ("tokens.bpe_train", "unweighted", "pairs not weighted by word frequency"),
    ("tokens.bpe_train", "across_whitespace", "merges across whitespace"),
    ("tokens.bpe_train", "chars", "characters instead of bytes"),
    ("tokens.bpe_encode", "frequency_order", "merges applied in frequency order instead of learned order"),
    ("tokens.bpe_encode", "drop_whitespace", "whitespace dropped"),
    ("tokens.bpe_encode", "whitespace_runs", "whitespace runs kept whole"),
    ("tokens.bpe_encode", "chars", "characters instead of bytes"),
    ("tokens.bpe_encode", "once", "each merge applied only once per word"),
    ("tokens.embedding_lookup", "flat", "rows not reshaped to (B, T, d)"),
    ("tokens.embedding_lookup", "transposed", "batch and time exchanged"),
    ("tokens.embedding_lookup", "one_based", "ids treated as 1-based"),
    ("tokens.embedding_backward", "assign", "gradients assigned instead of accumulated"),
    ("tokens.embedding_backward", "mean", "repeated ids averaged"),
    ("tokens.embedding_backward", "max_id", "vocab_size ignored"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("tokens.embedding_lookup", "forbidden_functional", "static"),
    ("tokens.embedding_lookup", "forbidden_ops", "run"),        # getattr(torch.ops.aten, ...): ATen net
    ("tokens.embedding_backward", "forbidden_autograd", "static"),
]


class TestTokens(ChapterChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN = "tokens", MISTAKES, FORBIDDEN

    def test_large_bpe_cases_are_timed(self, solutions_result):
        """The large-text cases pass for the solution and their time is recorded for the report."""
        bpe = [e for e in solutions_result.exercises if e.id in ("tokens.bpe_train", "tokens.bpe_encode")]
        assert len(bpe) == 2
        for e in bpe:
            large = next(c for c in e.cases if c.name == "large text")
            assert large.status.value == "passed" and large.seconds > 0
            assert "several seconds" in large.description

    @pytest.mark.slow
    def test_bpe_encode_checks_the_round_trip(self, variants_result):
        e = variants_result[("tokens.bpe_encode", "drop_whitespace")]
        assert any("round trip fails" in c.message for c in e.cases)


def test_cases_include_the_edge_cases():
    assert "empty text" in case_names("tokens.bpe_train") and "empty text" in case_names("tokens.bpe_encode")
