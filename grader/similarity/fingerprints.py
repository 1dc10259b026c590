"""Winnowed fingerprints of normalised code, and what two of them share (copydetect's primitives).

The method is MOSS's (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003), as copydetect 0.5 implements it:

1. pygments tokenizes the code; every variable, attribute and function name becomes `V` or `F`,
   class names `O`, every string `S`; whitespace and comments are dropped. Renaming variables,
   reformatting or rewriting comments changes nothing that is compared.
2. Every run of `noise` consecutive characters of that normalised text (a k-gram) is hashed;
   winnowing keeps the smallest hash of each window of `guarantee - noise + 1` k-grams, so any
   shared run of at least `guarantee` characters is found, and none shorter than `noise` counts.
3. The starter files are subtracted before comparing: a fingerprint whose k-gram lies mostly in
   code every student received (see fingerprint()) is dropped, so that code matches nothing.
4. Two documents share the fingerprints in both sets; the runs those cover, over the runs all
   the document's remaining fingerprints cover, is the share of that document found in the other.
   Reordering functions moves the runs but keeps them, so it hides nothing either.

copydetect's own CopyDetector walks folders of files and writes its own report; here the texts
come from grader.submission (notebooks as their code cells, zips unpacked in memory), so only
CodeFingerprint and compare_files are used. The hashes are Python's hash() of strings: they are
comparable within one process only, which is where every comparison of a run happens.
"""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass

import numpy as np
from copydetect import CodeFingerprint, compare_files
from copydetect.utils import find_fingerprint_overlap, get_copied_slices, get_token_coverage
from pygments import lexers, token

from grader.similarity.records import Region, Settings

LANGUAGE = "python"


def prepare(text: str) -> str:
    """The text exactly as pygments will see it (BOM dropped, newlines normalised, leading and
    trailing blank lines stripped, one final newline), so copydetect's offsets point into it."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return text + "\n"


@dataclass(frozen=True)
class Starter:
    """The starter files as runs of normalised code: every `gram`-character substring of them."""

    grams: frozenset[str]
    gram: int


def starter(texts: list[str], settings: Settings) -> Starter:
    grams: set[str] = set()
    for text in texts:
        code = _fingerprint(prepare(text), settings.noise, 1, None).filtered_code
        grams.update(code[i:i + settings.starter_gram] for i in range(len(code) - settings.starter_gram + 1))
    return Starter(frozenset(grams), settings.starter_gram)


@dataclass(frozen=True)
class Fingerprint:
    code: CodeFingerprint

    @property
    def own(self) -> float:
        """Normalised characters covered by fingerprints left after the starter code is removed."""
        return float(self.code.token_coverage)


def fingerprint(text: str, settings: Settings, given: Starter) -> Fingerprint:
    """`text` must be prepare()d: the regions found are offsets into it.

    The starter code is subtracted by position, not only by hash: every character of the
    normalised text inside a run of `given.gram` characters that also occurs in the starter
    files is the starter's, and a fingerprint whose k-gram is more than half the starter's is
    dropped. copydetect's own subtraction (boilerplate=, exact k-gram hashes) leaves the
    k-grams that straddle a stub's signature and docstring and a student's first line: two
    students who fill in the same stub differently share those whatever they write (two
    different one-line answers scored 45 % that way)."""
    code = _fingerprint(text, settings.noise, settings.window, None)
    filtered, k = code.filtered_code, code.k
    marked = np.zeros(len(filtered) + 1, dtype=np.int32)
    g = given.gram
    for i in range(len(filtered) - g + 1):
        if filtered[i:i + g] in given.grams:
            marked[i] += 1
            marked[i + g] -= 1
    covered = np.concatenate([[0], np.cumsum(np.cumsum(marked)[:-1] > 0)])   # starter characters before i
    kept = {}
    for h, positions in code.hash_idx.items():
        own = [p for p in positions if 2 * (covered[min(p + k, len(filtered))] - covered[p]) <= k]
        if own:
            kept[int(h)] = own          # Python ints: set intersections of numpy scalars are slower
    code.hash_idx, code.hashes = kept, set(kept)
    code.token_coverage = get_token_coverage(kept, k, len(filtered))
    return Fingerprint(code)


def _fingerprint(text: str, k: int, window: int, boilerplate) -> CodeFingerprint:
    return CodeFingerprint("submission.py", k, window, boilerplate, filter=True, language=LANGUAGE,
                           fp=io.StringIO(text))


@dataclass(frozen=True)
class Match:
    share_a: float
    share_b: float
    matched: int


def compare(a: Fingerprint, b: Fingerprint) -> Match:
    """The share of each document found in the other (0 when they share no fingerprint)."""
    if not (a.code.hashes and b.code.hashes) or a.code.hashes.isdisjoint(b.code.hashes):
        return Match(0.0, 0.0, 0)
    matched, (share_a, share_b), _ = compare_files(a.code, b.code)
    return Match(min(float(share_a), 1.0), min(float(share_b), 1.0), int(matched))


def regions(a: Fingerprint, b: Fingerprint) -> tuple[tuple[Region, ...], tuple[Region, ...]]:
    """The matching runs of each text, numbered so that runs sharing a fingerprint carry the
    same number on both sides (connected runs are one match)."""
    common = a.code.hashes & b.code.hashes
    if not common:
        return (), ()
    idx_a, idx_b = find_fingerprint_overlap(a.code.hashes, b.code.hashes, a.code.hash_idx, b.code.hash_idx)
    k = a.code.k
    cut_a, cut_b = get_copied_slices(idx_a, k), get_copied_slices(idx_b, k)     # normalised text
    _, _, (raw_a, raw_b) = compare_files(a.code, b.code)                         # the same runs, in the text
    parent = list(range(cut_a.shape[1] + cut_b.shape[1]))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # Link every occurrence on one side to the first on the other (not all pairs: a k-gram
    # repeated n times on both sides would cost n * n), vectorised.
    first_a = {h: a.code.hash_idx[h][0] for h in common}
    first_b = {h: b.code.hash_idx[h][0] for h in common}
    links = [(p, first_b[h]) for h in common for p in a.code.hash_idx[h]]
    links += [(first_a[h], p) for h in common for p in b.code.hash_idx[h][1:]]
    at = np.array(links, dtype=np.int64)
    slice_a = np.searchsorted(cut_a[0], at[:, 0], side="right") - 1
    slice_b = cut_a.shape[1] + np.searchsorted(cut_b[0], at[:, 1], side="right") - 1
    for ia, ib in set(zip(slice_a.tolist(), slice_b.tolist())):
        parent[root(ia)] = root(ib)
    number: dict[int, int] = {}
    for i in range(cut_a.shape[1]):          # numbered in the order of a's text
        number.setdefault(root(i), len(number) + 1)
    side_a = tuple(Region(int(s), int(e), number[root(i)]) for i, (s, e) in enumerate(zip(*raw_a)))
    side_b = tuple(Region(int(s), int(e), number.setdefault(root(cut_a.shape[1] + i), len(number) + 1))
                   for i, (s, e) in enumerate(zip(*raw_b)))
    return side_a, side_b


@functools.lru_cache(maxsize=1024)        # one document appears in many pairs' pages
def uncompared(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of the comments and docstrings of `text`: not compared (a docstring is one
    string token, whatever it says), so a view does not show them as matching."""
    spans, at = [], 0
    for kind, value in lexers.get_lexer_by_name(LANGUAGE).get_tokens(text):
        if kind in token.Comment or kind in token.String.Doc:
            spans.append((at, at + len(value)))
        at += len(value)
    return tuple(spans)
