"""The judge of bpe_train and bpe_encode: token lists compared exactly, naming the first
difference instead of listing every item; bpe_encode's round trip b"".join(tokens) == text.encode()
is checked too."""
from __future__ import annotations

from grader.catalog.spec import Case, Verdict
from grader.results import Comparison


def _describe(x) -> str:
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."


def token_judge(name: str, pairs: bool):
    """Exact comparison of a list of tokens (bytes) or merges ((bytes, bytes) tuples), naming the
    first difference instead of listing every item; bpe_encode also gets the round trip checked."""
    def judge(case: Case, got, want, tol) -> Verdict:
        def verdict(problem: str) -> Verdict:
            return Verdict(not problem, problem, (Comparison(name=name, ok=not problem, problem=problem),))
        if not isinstance(got, (list, tuple)):
            return verdict(f"expected a list of {'(left, right) tuples of bytes' if pairs else 'bytes'}, got "
                           f"{type(got).__name__} {_describe(got)}")
        for k, item in enumerate(got):
            good = (isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(b, bytes) for b in item)
                    if pairs else isinstance(item, bytes))
            if not good:
                what = "a (left, right) tuple of two bytes objects" if pairs else "a bytes object (b'...', not str)"
                return verdict(f"{name}[{k}] is {_describe(item)} ({type(item).__name__}); each item must be {what}")
        norm = [tuple(i) for i in got] if pairs else list(got)
        if not pairs:
            text = case.args[0].encode("utf-8")
            joined = b"".join(norm)
            if joined != text:
                at = next((k for k, (a, b) in enumerate(zip(joined, text)) if a != b), min(len(joined), len(text)))
                return verdict(f"the round trip fails: b''.join(tokens) has {len(joined)} bytes, text.encode() "
                               f"{len(text)}, first different at byte {at}. Every byte of the text, whitespace "
                               "included, must be in exactly one token")
        if norm == want:
            return verdict("")
        k = next((k for k, (a, b) in enumerate(zip(norm, want)) if a != b), min(len(norm), len(want)))
        yours = _describe(norm[k]) if k < len(norm) else "(nothing: your list ends here)"
        expected = _describe(want[k]) if k < len(want) else "(nothing: the reference ends here)"
        return verdict(f"{len(norm)} items, expected {len(want)}; the first difference is at {name}[{k}]: "
                       f"expected {expected}, got {yours}")
    return judge
