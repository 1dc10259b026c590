"""Byte-level BPE for the tokens chapter: the rules of the stub written once (the reference),
the texts the cases use, and the judge that compares token lists exactly.

The reference keeps pair counts up to date incrementally, so it stays fast on the large case;
a merge only recounts the words that hold the merged pair.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict

import torch

from grader.catalog.spec import Case, Verdict
from grader.results import Comparison


# ----------------------------------------------------------------------------- the rules, once
def merge_pair(tokens: list[bytes], pair: tuple[bytes, bytes], once: bool = False) -> list[bytes]:
    """Replace `left, right` by `left + right`, left to right, without overlaps."""
    left, right = pair
    out, i, done = [], 0, False
    while i < len(tokens):
        if not done and i + 1 < len(tokens) and tokens[i] == left and tokens[i + 1] == right:
            out.append(left + right)
            i += 2
            done = once
        else:
            out.append(tokens[i])
            i += 1
    return out


def split_bytes(word: bytes) -> list[bytes]:
    return [bytes([b]) for b in word]


def split_chars(word: bytes) -> list[bytes]:
    return [ch.encode() for ch in word.decode("utf-8", "replace")] if word else []


def ref_bpe_train(text, num_merges):
    """Byte-level BPE. Pair counts are kept up to date incrementally: a merge only recounts the
    words that contain the merged pair (`where` maps a pair to the words that may hold it)."""
    counts = Counter(text.encode("utf-8").split())
    words, freq = [split_bytes(w) for w in counts], list(counts.values())
    pairs: Counter = Counter()
    where: dict[tuple[bytes, bytes], set[int]] = defaultdict(set)
    for k, (word, n) in enumerate(zip(words, freq)):
        for pair in zip(word, word[1:]):
            pairs[pair] += n
            where[pair].add(k)
    merges = []
    for _ in range(num_merges):
        live = [p for p, n in pairs.items() if n > 0]
        if not live:
            break
        best = min(live, key=lambda p: (-pairs[p], p))    # most frequent; ties: smallest (left, right)
        merges.append(best)
        for k in where.pop(best):
            word, n = words[k], freq[k]
            for pair in zip(word, word[1:]):
                pairs[pair] -= n
            words[k] = word = merge_pair(word, best)
            for pair in zip(word, word[1:]):
                pairs[pair] += n
                where[pair].add(k)
    return merges


def encode_word(word: list[bytes], merges, once: bool = False) -> list[bytes]:
    """Apply the merges in learned order; the set of adjacent pairs skips the ones that cannot apply."""
    present = set(zip(word, word[1:]))
    for pair in merges:
        if pair in present:
            word = merge_pair(word, pair, once)
            present = set(zip(word, word[1:]))
    return word


def ref_bpe_encode(text, merges):
    merges = [tuple(m) for m in merges]
    done: dict[bytes, list[bytes]] = {}
    tokens: list[bytes] = []
    for run in re.findall(rb"\s+|\S+", text.encode("utf-8")):
        if run.isspace():
            tokens += split_bytes(run)
        else:
            if run not in done:
                done[run] = encode_word(split_bytes(run), merges)
            tokens += done[run]
    return tokens


# ----------------------------------------------------------------------------- texts
CLASSIC = ("low low low low low lower lower newest newest newest newest newest newest "
           "widest widest widest")             # the example of Sennrich et al. (2016)
TIES = "mn ab zy mn ab zy qp qp"                # every pair twice: only the tie rule decides
UNICODE = "naïve café résumé — 東京 東京の夜 😀😀 façade déjà vu café"
SYLLABLES = ("ka ri to na me su lo pe vi da ne ru mo sa ti ko la fe gu ba shi ze yo wa "
             "cho ex an on er st th in re ou").split()


def synthetic_text(gen: torch.Generator, n_words: int, vocab: int) -> str:
    """A made-up language: `vocab` words of 1-4 syllables, drawn with Zipf-like frequencies."""
    lengths = torch.randint(1, 5, (vocab,), generator=gen)
    syll = torch.randint(0, len(SYLLABLES), (vocab, 4), generator=gen)
    words = ["".join(SYLLABLES[s] for s in syll[k, :lengths[k]].tolist()) for k in range(vocab)]
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    picks = torch.multinomial(weights, n_words, replacement=True, generator=gen).tolist()
    seps = torch.randint(0, 12, (n_words,), generator=gen).tolist()
    out = []
    for k, s in zip(picks, seps):
        out.append(words[k])
        out.append("\n" if s == 0 else ", " if s == 1 else " ")
    return "".join(out)


def random_letters(gen: torch.Generator, n_words: int, letters: str = "abcde") -> str:
    lengths = torch.randint(1, 9, (n_words,), generator=gen).tolist()
    return " ".join("".join(letters[i] for i in torch.randint(0, len(letters), (n,), generator=gen).tolist())
                    for n in lengths)


LARGE_WORDS = 12_000
LARGE_TRAIN_NOTE = ("a large text (12,000 words, about 75 kB): counting pairs once per distinct word keeps this "
                    "under a second; recounting every word of the text for every merge takes several seconds "
                    "(this case's time is recorded in the report)")
LARGE_ENCODE_NOTE = ("a large text (12,000 words, about 75 kB): encoding each distinct word once keeps this under "
                     "a second; running the merges over every occurrence again takes several seconds (this case's "
                     "time is recorded in the report)")


# ----------------------------------------------------------------------------- judge
def _describe(x) -> str:
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."


def token_judge(name: str, pairs: bool):
    """Exact comparison of a list of tokens (bytes) or merges ((bytes, bytes) tuples), naming the
    first difference instead of listing every item; bpe_encode also gets the round trip checked."""
    def judge(case: Case, got, want) -> Verdict:
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
