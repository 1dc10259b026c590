"""Attention: the causal mask, scaled dot-product attention, multi-head attention and
the sinusoidal positional encoding.

Jarvis has to read "take out the trash and then call Ms Penny" and know which earlier words
each word should look at. Attention lets every position ask a question (a query), compare it
with every position's label (a key) and take a weighted mix of what those positions hold
(their values). Everything is batch first, and boolean masks use PyTorch's convention:
True means "may attend".

Allowed: any tensor operation (`@`, `torch.matmul`, `einsum`, `softmax`, `masked_fill`, ...).
Forbidden: `torch.nn.functional.scaled_dot_product_attention` in
`scaled_dot_product_attention`; `torch.nn.MultiheadAttention` and
`torch.nn.functional.multi_head_attention_forward` in `multi_head_attention`.
"""
import math

import torch


def causal_mask(T):
    """The causal (look-ahead) mask for a sequence of length T.

    When Jarvis predicts the next word, position i may only look at positions 0..i: the
    future has not been said yet.

    Args:
        T: sequence length (int, T >= 1).

    Returns:
        mask: bool (T, T), mask[i, j] is True where key j <= query i (may attend),
              False above the diagonal. The diagonal is True: a word may look at itself.

    Example (T = 3):
        [[ True, False, False],
         [ True,  True, False],
         [ True,  True,  True]]

    Hint: compare a column of query indices with a row of key indices, or use torch.tril.
    """
    ### BEGIN SOLUTION
    i = torch.arange(T).unsqueeze(1)   # (T, 1) query positions
    j = torch.arange(T).unsqueeze(0)   # (1, T) key positions
    return j <= i
    ### END SOLUTION


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V.

        scores  = Q @ K^T / sqrt(d_k)                     (..., T_q, T_k)
        scores  = -inf where mask is False                (a masked key gets weight 0)
        weights = softmax(scores, over the keys: dim=-1)  (..., T_q, T_k), each row sums to 1
        out     = weights @ V                             (..., T_q, d_v)

    Why divide by sqrt(d_k): a dot product of two d_k-dimensional vectors of unit-variance
    entries has variance d_k; without the scaling, large d_k saturates the softmax.

    Args:
        Q: (..., T_q, d_k) queries.   K: (..., T_k, d_k) keys.   V: (..., T_k, d_v) values.
           The leading dims (...) are batch and/or heads, e.g. (B, T, d) or (B, h, T, d).
        mask: None, or bool broadcastable to (..., T_q, T_k) — e.g. (T_q, T_k) for all
              batches, or (B, 1, T_q, T_k). True = may attend.

    Returns:
        (out, weights): out (..., T_q, d_v), weights (..., T_q, T_k).

    Note the scaling uses d_k (the query/key width), not d_v. Masked positions must get
    weight exactly 0: fill their scores with -inf (not 0) before the softmax.
    Forbidden: torch.nn.functional.scaled_dot_product_attention (this is the thing itself).
    Hint: K.transpose(-2, -1) swaps the last two dims whatever the leading ones are.
    """
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)          # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                     # (..., T_q, T_k)
    return weights @ V, weights
    ### END SOLUTION


def multi_head_attention(X_q, X_kv, params, num_heads, mask=None):
    """Multi-head attention: h smaller attentions side by side, then mixed by W_O.

        Q = X_q @ W_Q + b_Q,  K = X_kv @ W_K + b_K,  V = X_kv @ W_V + b_V      (B, T, d_model)
        split each into h heads of width d_head = d_model / h:                  (B, h, T, d_head)
        heads = scaled_dot_product_attention(Q, K, V, mask) per head            (B, h, T_q, d_head)
        concat the heads back:                                                  (B, T_q, d_model)
        out = concat @ W_O + b_O                                                (B, T_q, d_model)

    Self-attention passes the same tensor as X_q and X_kv; cross-attention (the decoder
    reading the encoder's memory) passes the decoder states as X_q and the memory as X_kv.

    Args:
        X_q: (B, T_q, d_model).   X_kv: (B, T_k, d_model).
        params: dict with W_Q, W_K, W_V, W_O of shape (d_model, d_model) and
                b_Q, b_K, b_V, b_O of shape (d_model,) — row-vector convention, Y = X @ W + b.
        num_heads: h, which divides d_model. Head k uses columns k*d_head:(k+1)*d_head.
        mask: None, or bool (T_q, T_k) or (B, T_q, T_k), the same for every head. True = may attend.

    Returns:
        (B, T_q, d_model).

    Call your own scaled_dot_product_attention for the heads (the grader checks this function
    with its reference attention in place of yours, so a bug there is only charged once).
    Forbidden: torch.nn.MultiheadAttention, torch.nn.functional.multi_head_attention_forward.
    Hint: view (B, T, d_model) as (B, T, h, d_head), then transpose to (B, h, T, d_head);
    a (B, T_q, T_k) mask needs a head dimension: mask.unsqueeze(1).
    """
    ### BEGIN SOLUTION
    B, T_q, d_model = X_q.shape
    T_k = X_kv.shape[1]
    d_head = d_model // num_heads

    def split(X, T):  # (B, T, d_model) -> (B, h, T, d_head)
        return X.reshape(B, T, num_heads, d_head).transpose(1, 2)

    Q = split(X_q @ params["W_Q"] + params["b_Q"], T_q)
    K = split(X_kv @ params["W_K"] + params["b_K"], T_k)
    V = split(X_kv @ params["W_V"] + params["b_V"], T_k)
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)                                # (B, 1, T_q, T_k)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask)      # (B, h, T_q, d_head)
    concat = heads.transpose(1, 2).reshape(B, T_q, d_model)     # (B, T_q, d_model)
    return concat @ params["W_O"] + params["b_O"]
    ### END SOLUTION


def positional_encoding(T, d_model):
    """The sinusoidal positional encoding of "Attention Is All You Need".

    Attention by itself ignores word order ("trash the take out" looks the same). Adding a
    position-dependent pattern to each embedding lets the model tell positions apart.

        PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
        PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

    for pos = 0..T-1 and i = 0..d_model/2-1: even columns take sin, odd columns cos, and a
    sin/cos pair shares the same frequency (the exponent is 2i, the even column's index).

    Args:
        T: sequence length.   d_model: embedding width (even).

    Returns:
        PE: float32 (T, d_model).

    Hint: build pos as (T, 1) and the frequencies as (1, d_model/2), so one division
    gives every angle at once. Compute in float64 and convert at the end if you want
    long sequences (T in the thousands) to be accurate.
    """
    ### BEGIN SOLUTION
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)                 # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64).unsqueeze(0)   # (1, d_model/2)
    angle = pos / torch.pow(10000.0, two_i / d_model)                       # (T, d_model/2)
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(torch.float32)
    ### END SOLUTION
