r"""Tokens and embeddings: byte-pair encoding (BPE), and the embedding table with its gradient.

The story. To build a Jarvis that follows spoken orders we need to feed language to a
recurrent network, and networks eat vectors, not text. Two steps get us there. A tokenizer
cuts text into pieces from a fixed vocabulary: frequent words stay whole, rare ones such as
"somersaulted" come apart into familiar fragments, and nothing is ever out of vocabulary
because the smallest pieces are single bytes. Each piece has an id, and an embedding table
E (V, d) holds one learned d-dimensional vector per id: looking a token up is reading a row.

Byte-level BPE, exactly as graded here (there is one right answer):

  Whitespace means the six ASCII bytes b" \t\n\r\x0b\x0c" (what `bytes.split()` splits
  on). Text is always handled as its UTF-8 bytes, so "é" is two bytes, b"\xc3" and b"\xa9".
  A token is a `bytes` object; a merge is a pair `(left, right)` of tokens, which
  becomes the single token `left + right`.

  Applying a merge to a list of tokens: scan left to right; wherever `left` is immediately
  followed by `right`, replace the two by `left + right` and continue after them. Occurrences
  do not overlap: [b"a", b"a", b"a"] with (b"a", b"a") becomes [b"aa", b"a"].

Allowed: anything in Python and torch (collections.Counter, re, dicts, ...).
Forbidden: `torch.nn.functional.embedding` / `torch.nn.Embedding` (the thing itself) in
both embedding exercises, and autograd in `embedding_backward`.
"""
import re
from collections import Counter

import torch


def _merge_pair(tokens, pair):
    """Apply one merge to a list of tokens (see the module docstring); returns a new list.

    An ungraded helper for bpe_train and bpe_encode: fill it in first.
    Example: _merge_pair([b"l", b"o", b"w"], (b"l", b"o")) == [b"lo", b"w"]
    """
    ### BEGIN SOLUTION
    left, right = pair
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and tokens[i] == left and tokens[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out
    ### END SOLUTION


def bpe_train(text, num_merges):
    """Learn `num_merges` byte-level BPE merges from `text`.

      1. words = text.encode("utf-8").split(): the runs of non-whitespace bytes. Whitespace
         only separates words; it never takes part in a merge. Count each distinct word.
      2. Every word starts as a list of single bytes: b"low" -> [b"l", b"o", b"w"].
      3. Repeat num_merges times:
         a. count every adjacent pair of tokens in every word, weighted by how often the word
            occurs in the text (the word [b"a", b"a", b"a"] holds (b"a", b"a") twice);
         b. if no word has two tokens left, stop early: fewer merges are returned;
         c. the best pair is the most frequent one; among pairs with the same count, the
            smallest one as a Python tuple of bytes (compare the left tokens, then the right
            ones; bytes compare lexicographically: b"a" < b"ab" < b"b"). In one line:
            best = min(counts, key=lambda pair: (-counts[pair], pair))
         d. record it, and apply it (see the module docstring) to every word.

    Args:
        text: a str (any unicode, possibly empty).   num_merges: int >= 0.

    Returns:
        merges: list of (left, right) tuples of bytes, in the order they were learned.

    Example: bpe_train("aaa aa", 2) == [(b"a", b"a"), (b"aa", b"a")]
    ((a, a) occurs 2 + 1 times; after it, "aaa" is [aa, a] and "aa" is [aa].)

    The grader compares with its own implementation of exactly these rules, on texts up to a
    few hundred kilobytes: count each distinct word once (a Counter of words), not every
    occurrence in the text, or the big case will be slow.
    Hint: ties are everywhere in small texts; `max(counts, key=counts.get)` breaks them by
    insertion order, which is not the rule above.
    """
    ### BEGIN SOLUTION
    counts = Counter(text.encode("utf-8").split())
    words = [[bytes([b]) for b in word] for word in counts]     # distinct words, as tokens
    freqs = list(counts.values())
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, n in zip(words, freqs):
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        words = [_merge_pair(word, best) if len(word) > 1 else word for word in words]
    return merges
    ### END SOLUTION


def bpe_encode(text, merges):
    r"""Split `text` into tokens with learned merges.

      1. Cut text.encode("utf-8") into its runs of whitespace and runs of non-whitespace
         bytes, in order (re.findall(rb"\s+|\S+", data) does exactly this).
      2. Each whitespace byte is a token of its own: b"\n\n" gives b"\n", b"\n".
      3. Each non-whitespace run starts as single bytes, and every merge is applied to it in
         the order the merges were learned (merges[0] first, over the whole run, then
         merges[1], ...), exactly as bpe_train applied them.
      4. The tokens of all runs, in order, are the result.

    Nothing is lost: b"".join(bpe_encode(text, merges)) == text.encode("utf-8") always.

    Args:
        text: a str (possibly empty).   merges: list of (left, right) tuples of bytes.

    Returns:
        tokens: list of bytes.

    Example: bpe_encode("aaa  b", [(b"a", b"a")]) == [b"aa", b"a", b" ", b" ", b"b"]

    Hint: texts repeat words; encode each distinct word once and reuse the result (a dict).
    """
    ### BEGIN SOLUTION
    done = {}
    tokens = []
    for run in re.findall(rb"\s+|\S+", text.encode("utf-8")):
        if run.isspace():
            tokens.extend(bytes([b]) for b in run)
            continue
        if run not in done:
            word = [bytes([b]) for b in run]
            for pair in merges:
                word = _merge_pair(word, pair)
            done[run] = word
        tokens.extend(done[run])
    return tokens
    ### END SOLUTION


def embedding_lookup(E, ids):
    """Look up the embedding vector of every token id.

    Args:
        E:   (V, d) the embedding table, one row per token id.
        ids: int64 (B, T) token ids in [0, V).

    Returns:
        (B, T, d) with out[b, t] = E[ids[b, t]].

    Reference: torch.nn.functional.embedding (forbidden here: this is the thing itself).
    Hint: integer-tensor indexing does it in one step, for any shape of ids.
    """
    ### BEGIN SOLUTION
    return E[ids]
    ### END SOLUTION


def embedding_backward(ids, d_out, vocab_size):
    """The gradient of a loss with respect to the embedding table, given dL/d(out).

    out[b, t] = E[ids[b, t]], so row v of dE collects d_out[b, t] from every position where
    ids[b, t] == v: a token used three times gets the sum of three gradients, and a row that
    was never looked up gets zeros.

        dE[v] = sum over (b, t) with ids[b, t] == v of d_out[b, t]

    Args:
        ids: int64 (B, T).   d_out: (B, T, d), the upstream gradient.   vocab_size: V.

    Returns:
        dE: (V, d), in d_out's dtype.

    Reference: autograd through torch.nn.functional.embedding. Forbidden here: autograd and
    F.embedding. Careful: `dE[ids] = d_out` assigns, so repeated ids keep only one of their
    gradients; accumulate instead (index_add_, or a one-hot matrix product).
    """
    ### BEGIN SOLUTION
    d = d_out.shape[-1]
    dE = torch.zeros(vocab_size, d, dtype=d_out.dtype)
    dE.index_add_(0, ids.reshape(-1), d_out.reshape(-1, d))
    return dE
    ### END SOLUTION
