"""Specs for the tokens chapter: bpe_train, bpe_encode, embedding_lookup, embedding_backward.

BPE has no PyTorch reference: the grader's own implementation of the rules in the stub is the
reference (grader.catalog.references.bpe). Token lists are compared exactly, by a judge that
names the first differing position and checks the round trip b"".join(tokens) == text.encode()
(grader.catalog.judges.tokens).
Embeddings: F.embedding, and autograd through it.
"""
from __future__ import annotations

import re
from collections import Counter

import torch
import torch.nn.functional as F

from grader.catalog.inputs import CLASSIC, TIES, UNICODE, WIDE_SPACES, randint, randn, random_letters, synthetic_text
from grader.catalog.judges.tokens import token_judge
from grader.catalog.references.bpe import (encode_word, merge_pair, ref_bpe_encode, ref_bpe_train, split_bytes,
                                           split_chars)
from grader.catalog.references.float64 import in64
from grader.catalog.rules import AUTOGRAD, EMBEDDING, EMBEDDING_KERNELS
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake

F32, F64 = torch.float32, torch.float64
MISTAKE_TEXT_LIMIT = 20_000   # characters: known mistakes are matched on the smaller texts only (they are slow)
LARGE_WORDS = 12_000
LARGE_TRAIN_NOTE = ("a large text (12,000 words, about 75 kB): counting pairs once per distinct word keeps this "
                    "under a second; recounting every word of the text for every merge takes several seconds "
                    "(this case's time is recorded in the report)")
LARGE_ENCODE_NOTE = ("a large text (12,000 words, about 75 kB): encoding each distinct word once keeps this under "
                     "a second; running the merges over every occurrence again takes several seconds (this case's "
                     "time is recorded in the report)")


# ----------------------------------------------------------------------------- bpe_train
def _train_mistake(kind: str):
    """bpe_train with one typical mistake, written the plain way (recount every merge)."""
    def fn(text, num_merges):
        data = text.encode("utf-8")
        if len(text) > MISTAKE_TEXT_LIMIT:
            raise ValueError("too large for this check")
        if kind == "whitespace":
            counts = Counter({data: 1}) if data else Counter()
            words = [split_bytes(data)] if data else []
        else:
            counts = Counter(data.split())
            words = [(split_chars if kind == "chars" else split_bytes)(w) for w in counts]
        freq = [1 if kind == "unweighted" else n for n in counts.values()]
        merges = []
        for _ in range(num_merges):
            pairs: dict = {}
            for word, n in zip(words, freq):
                for pair in zip(word, word[1:]):
                    pairs[pair] = pairs.get(pair, 0) + n
            if not pairs:
                break
            if kind == "first":
                best = max(pairs, key=pairs.get)              # ties: whichever pair was counted first
            elif kind == "largest":
                best = max(pairs, key=lambda p: (pairs[p], p))
            else:
                best = min(pairs, key=lambda p: (-pairs[p], p))
            merges.append(best)
            words = [merge_pair(w, best) for w in words]
        return merges
    return fn


WIDE_SPACES_NOTE = ("only the six ASCII whitespace bytes split: U+2003, U+00A0, U+0085 and U+3000 are bytes of "
                    "the word they are in (text.encode().split(), not text.split())")


def bpe_train_cases(gen):
    return [
        Case("classic example", (CLASSIC, 10), note="low, lower, newest, widest (Sennrich et al., 2016)"),
        Case("ties everywhere", (TIES, 4), note="all pairs equally frequent: the tie rule alone decides"),
        Case("unicode", (UNICODE, 14), note="multi-byte characters are several byte tokens"),
        Case("empty text", ("", 5)),
        Case("only whitespace", (" \n\t  \r\n", 3)),
        Case("whitespace beyond ASCII", (WIDE_SPACES, 6), note=WIDE_SPACES_NOTE),
        Case("fewer merges possible than asked", ("aaa aa", 10), note="stop when no word has two tokens left"),
        Case("repeated letters", ("aaaa aaaaa aaaaaa b", 4), note="merges do not overlap: aaa -> aa, a"),
        Case("random words", (random_letters(gen, 300), 30)),
        Case("large text", (synthetic_text(gen, LARGE_WORDS, 1500), 80), note=LARGE_TRAIN_NOTE),
    ]


BPE_TRAIN = ExerciseSpec(
    id="tokens.bpe_train",
    points=3,
    cases=bpe_train_cases,
    reference=ref_bpe_train,
    reference_source="the grader's implementation of the BPE rules in the stub",
    outputs=("merges",),
    exact=True,
    judge=token_judge("merges", pairs=True),
    call_timeout=30.0,
    mistakes=(
        KnownMistake("ties broken by first occurrence", "max(counts, key=counts.get) keeps the pair counted first "
                     "among equal counts; the rule is the smallest pair: min(counts, key=lambda p: (-counts[p], p))",
                     _train_mistake("first")),
        KnownMistake("ties broken by the largest pair", "among pairs with the same count take the smallest "
                     "(left, right) tuple, not the largest", _train_mistake("largest")),
        KnownMistake("pairs not weighted by word frequency", "a word that occurs 5 times contributes each of its "
                     "pairs 5 times: weight the pair counts by the word counts", _train_mistake("unweighted")),
        KnownMistake("merges across whitespace", "split the text into words at whitespace first (bytes.split()): "
                     "whitespace separates words and never takes part in a merge", _train_mistake("whitespace")),
        KnownMistake("characters instead of bytes", "start from the UTF-8 bytes of each word, one token per byte: "
                     "'é' is two tokens, b'\\xc3' and b'\\xa9', until a merge joins them", _train_mistake("chars")),
    ),
)


# ----------------------------------------------------------------------------- bpe_encode
def _encode_mistake(kind: str):
    def fn(text, merges):
        if len(text) > MISTAKE_TEXT_LIMIT:
            raise ValueError("too large for this check")
        merges = [tuple(m) for m in merges]
        data = text.encode("utf-8")
        if kind == "frequency":
            return _encode_by_frequency(data, merges)
        tokens = []
        for run in re.findall(rb"\s+|\S+", data):
            if run.isspace():
                if kind != "drop whitespace":
                    tokens += [run] if kind == "whitespace runs" else split_bytes(run)
            else:
                start = split_chars(run) if kind == "chars" else split_bytes(run)
                tokens += encode_word(start, merges, once=kind == "once")
        return tokens
    return fn


def _encode_by_frequency(data: bytes, merges) -> list[bytes]:
    """The mistake: repeatedly merge the known pair that is most frequent in this text (ties: the one
    learned first), instead of applying the merges in the order they were learned."""
    rank = {m: k for k, m in enumerate(merges)}
    runs = re.findall(rb"\s+|\S+", data)
    counts = Counter(r for r in runs if not r.isspace())
    words = {w: split_bytes(w) for w in counts}
    while True:
        pairs: Counter = Counter()
        for w, toks in words.items():
            for p in zip(toks, toks[1:]):
                if p in rank:
                    pairs[p] += counts[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], rank[p]))
        words = {w: merge_pair(t, best) for w, t in words.items()}
    out = []
    for r in runs:
        out += split_bytes(r) if r.isspace() else words[r]
    return out


def bpe_encode_cases(gen):
    classic = ref_bpe_train(CLASSIC, 10)
    uni = ref_bpe_train(UNICODE, 14)
    letters = ref_bpe_train(random_letters(gen, 300), 40)
    large = ref_bpe_train(synthetic_text(gen, 4000, 1500), 120)
    return [
        Case("classic merges, new words", ("lowest newer low  wider\n", classic)),
        Case("learned order, not frequency order", ("abc ab ab ab", [(b"b", b"c"), (b"a", b"b")]),
             note="(b, c) was learned first, although (a, b) is more frequent in this text"),
        Case("merge order builds on itself", ("aaa aaaa aaaaa", [(b"a", b"a"), (b"aa", b"a"), (b"aa", b"aa")])),
        Case("unicode", ("café 😀 東京の夜, déjà vu!", uni),
             note="characters the merges never saw stay as bytes"),
        Case("empty text", ("", classic)),
        Case("whitespace runs", ("low  \n\n\tlow \r\n", classic), note="each whitespace byte is one token"),
        Case("whitespace beyond ASCII", ("x\u2003y voil\u00e0\u00a0\u00e0\u0085z \u3000\n",
                                         ref_bpe_train(WIDE_SPACES, 6)), note=WIDE_SPACES_NOTE),
        Case("no merges", ("plain bytes", [])),
        Case("random words", (random_letters(gen, 200), letters)),
        Case("large text", (synthetic_text(gen, LARGE_WORDS, 1500), large), note=LARGE_ENCODE_NOTE),
    ]


BPE_ENCODE = ExerciseSpec(
    id="tokens.bpe_encode",
    points=2,
    cases=bpe_encode_cases,
    reference=ref_bpe_encode,
    reference_source="the grader's implementation of the BPE rules in the stub",
    outputs=("tokens",),
    exact=True,
    judge=token_judge("tokens", pairs=False),
    call_timeout=30.0,
    mistakes=(
        KnownMistake("merges applied in frequency order instead of learned order", "apply the merges in the order "
                     "they were learned (merges[0] first), not by how often their pair occurs in the text you encode: "
                     "that order is what training used", _encode_mistake("frequency")),
        KnownMistake("whitespace dropped", "whitespace is kept, one token per byte, so that b''.join(tokens) "
                     "gives back the text", _encode_mistake("drop whitespace")),
        KnownMistake("whitespace runs kept whole", "each whitespace byte is a token of its own: b'  ' gives "
                     "b' ', b' '", _encode_mistake("whitespace runs")),
        KnownMistake("characters instead of bytes", "start each word from its UTF-8 bytes, one token per byte, "
                     "not from its characters", _encode_mistake("chars")),
        KnownMistake("each merge applied only once per word", "a merge replaces every occurrence of its pair in "
                     "the word, left to right, not just the first", _encode_mistake("once")),
    ),
)


# ----------------------------------------------------------------------------- embeddings
def ref_embedding_lookup(E, ids):
    return F.embedding(ids, E)


def embedding_lookup_cases(gen):
    V = 1000
    edge = torch.tensor([[0, V - 1, 0], [V - 1, 5, V - 1]])
    return [
        Case("V=10, d=4, repeated ids", (randn(gen, 10, 4), randint(gen, 0, 10, 2, 5))),
        Case("one token", (randn(gen, 7, 3), randint(gen, 0, 7, 1, 1))),
        Case("first and last rows", (randn(gen, V, 8), edge), note="ids 0 and V-1"),
        Case("B = T", (randn(gen, 20, 6), randint(gen, 0, 20, 4, 4))),
        Case("float64, larger", (randn(gen, 500, 32, dtype=F64), randint(gen, 0, 500, 4, 50))),
    ]


EMBEDDING_LOOKUP = ExerciseSpec(
    id="tokens.embedding_lookup",
    points=1,
    cases=embedding_lookup_cases,
    reference=ref_embedding_lookup,
    reference_source="torch.nn.functional.embedding(ids, E)",
    forbidden=(EMBEDDING, EMBEDDING_KERNELS),
    mistakes=(
        KnownMistake("rows not reshaped to (B, T, d)", "return one d-vector per position: shape (B, T, d), "
                     "not (B*T, d)", lambda E, ids: E[ids.reshape(-1)]),
        KnownMistake("batch and time exchanged", "out[b, t] = E[ids[b, t]]: keep ids' (B, T) order",
                     lambda E, ids: E[ids.T]),
        KnownMistake("ids treated as 1-based", "token ids count from 0: row 0 of E belongs to id 0, so look up "
                     "E[ids], not E[ids - 1]", lambda E, ids: E[ids - 1]),
    ),
)


@in64
def ref_embedding_backward(ids, d_out, vocab_size):
    """Autograd through F.embedding: dE = d(sum(F.embedding(ids, E) * d_out)) / dE."""
    E = torch.zeros(vocab_size, d_out.shape[-1], dtype=d_out.dtype, requires_grad=True)
    (F.embedding(ids, E) * d_out).sum().backward()
    return E.grad


def _backward_mistake(kind: str):
    @in64
    def fn(ids, d_out, vocab_size):
        flat, rows = ids.reshape(-1), d_out.reshape(-1, d_out.shape[-1])
        V = int(flat.max()) + 1 if kind == "max id" else vocab_size
        dE = torch.zeros(V, rows.shape[1], dtype=rows.dtype)
        if kind == "last wins":
            for k in range(flat.numel()):
                dE[flat[k]] = rows[k]
            return dE
        dE.index_add_(0, flat, rows)
        if kind == "mean":
            n = torch.bincount(flat, minlength=V).clamp_min(1).to(rows.dtype)
            dE = dE / n.unsqueeze(1)
        return dE
    return fn


def embedding_backward_cases(gen):
    def args(B, T, V, d, dtype=F32, ids_below=None):
        return randint(gen, 0, ids_below or V, B, T), randn(gen, B, T, d, dtype=dtype), V
    return [
        Case("many repeated ids", args(2, 8, 5, 3), note="5 ids over 16 positions: every row accumulates"),
        Case("one token", args(1, 1, 4, 2)),
        Case("rows never used", args(3, 4, 50, 4, ids_below=10), note="ids < 10 of V = 50: rows 10..49 are zero"),
        Case("float64, larger", args(4, 50, 100, 16, dtype=F64)),
    ]


EMBEDDING_BACKWARD = ExerciseSpec(
    id="tokens.embedding_backward",
    points=2,
    cases=embedding_backward_cases,
    reference=ref_embedding_backward,
    reference_source="autograd through torch.nn.functional.embedding (loss = sum(out * d_out)), in float64",
    outputs=("dE",),
    tolerance={F32: (1e-5, 1e-5), F64: (1e-12, 1e-10)},
    forbidden=(AUTOGRAD, EMBEDDING),
    mistakes=(
        KnownMistake("gradients assigned instead of accumulated", "dE[ids] = d_out keeps one gradient per id (the "
                     "last); a token used several times gets the sum of all its gradients: index_add_ or a one-hot "
                     "product", _backward_mistake("last wins")),
        KnownMistake("repeated ids averaged", "a repeated id gets the sum of its gradients, not their mean",
                     _backward_mistake("mean")),
        KnownMistake("vocab_size ignored", "dE has one row per vocabulary entry (vocab_size rows), also for ids "
                     "that never occur: one_hot(ids) without num_classes stops at the largest id",
                     _backward_mistake("max id")),
    ),
)

SPECS = (BPE_TRAIN, BPE_ENCODE, EMBEDDING_LOOKUP, EMBEDDING_BACKWARD)
