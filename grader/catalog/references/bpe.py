"""Byte-level BPE, the rules of the tokens chapter's stub written once: the reference of bpe_train
and bpe_encode (PyTorch has none), and the helpers its known mistakes are built from.

The reference keeps pair counts up to date incrementally, so it stays fast on the large case;
a merge only recounts the words that hold the merged pair.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict


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
