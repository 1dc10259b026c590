"""The transformer: layer norm, add & norm, the position-wise feed-forward network, the
encoder and decoder layers, the whole encoder-decoder model, and greedy decoding.

This is where every primitive of the course meets. Asked "what did the cat do <eos>", the
encoder reads the whole question at once and turns it into a memory: one context-rich vector
per word. The decoder writes the answer one word at a time ("<bos> the cat sat on the mat"):
each new word may look at the words already written (masked self-attention) and at the
encoder's memory (cross-attention), and a final linear layer scores every word of the
vocabulary as the next one.

Conventions (as in attention.py): batch first; row vectors, `Y = X @ W + b` with W of shape
(in_features, out_features); boolean masks True = "may attend"; parameters in plain dicts:

    layer params   attn                   dict for multi_head_attention (W_Q ... b_O)
                   ln1_gamma, ln1_beta    (d_model,)  the add & norm after the attention
                   ff                     dict W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,)
                   ln2_gamma, ln2_beta    (d_model,)  the add & norm after the FFN (encoder)
    decoder layers add
                   cross_attn             dict for multi_head_attention
                   ln3_gamma, ln3_beta    (d_model,)  decoder: ln1 self-attn, ln2 cross-attn, ln3 FFN

Post-norm everywhere, as in the course text and PyTorch's default: a sub-layer's output is
added to its input and the sum is normalised, `X = LayerNorm(X + sublayer(X))`.

Reuse your own functions: the layers call multi_head_attention, causal_mask and
positional_encoding from your attention.py, and the functions of this file call each other.
The grader checks each function with its reference versions of the functions it calls (say,
its multi-head attention inside your encoder_layer), so a bug is charged once, where it is.

Allowed: any tensor operation, including torch.relu and indexing an embedding table.
Forbidden: torch.nn.Transformer and its encoder/decoder (layer) classes, nn.MultiheadAttention
and its functional form everywhere in this file; in layer_norm also F.layer_norm, nn.LayerNorm,
torch.layer_norm and the other built-in normalisations (group_norm, batch_norm, instance_norm).
Training the finished model (transformer_forward's capstone case) uses autograd through your
forward pass: that is allowed and expected here; only keep your forward differentiable
(no .detach(), .item() or torch.no_grad() on the way).
"""
import torch

from attention import causal_mask, multi_head_attention, positional_encoding


def layer_norm(X, gamma, beta, eps=1e-5):
    """Layer normalisation over the last dimension (the features of each token).

        mean = mean of X over the last dim                      (..., 1)
        var  = mean of (X - mean)^2 over the last dim           (..., 1)   divide by d, not d - 1
        out  = (X - mean) / sqrt(var + eps) * gamma + beta      (..., d)

    Each token is normalised on its own, whatever the batch or the other positions hold;
    gamma and beta then give the network back a learned scale and shift per feature.

    Args:
        X: (..., d), e.g. (B, T, d_model) or (N, d).
        gamma, beta: (d,).
        eps: added to the variance *inside* the square root (it matters when a row is
             almost constant).

    Returns:
        (..., d), the dtype of X.

    Forbidden: F.layer_norm, nn.LayerNorm, torch.layer_norm (and group/batch/instance norm).
    Hint: keepdim=True keeps the reduced dim, so (X - mean) broadcasts.
    """
    ### BEGIN SOLUTION
    mean = X.mean(dim=-1, keepdim=True)                     # (..., 1)
    var = ((X - mean) ** 2).mean(dim=-1, keepdim=True)      # (..., 1), biased
    return (X - mean) / torch.sqrt(var + eps) * gamma + beta
    ### END SOLUTION


def add_and_norm(X, sublayer_out, gamma, beta, eps=1e-5):
    """Add & Norm: the residual connection followed by layer normalisation.

        out = layer_norm(X + sublayer_out, gamma, beta, eps)     (..., d)

    Attention mixes information from other tokens into each one; adding the input back
    keeps the token's own information (the sub-layer output is an update, X' = X + dX), and
    the normalisation keeps magnitudes from growing layer after layer.

    Args:
        X: (..., d) the sub-layer's input.   sublayer_out: (..., d) its output.
        gamma, beta: (d,).

    Returns:
        (..., d).

    Hint: the sum comes first, the norm second (post-norm); call your layer_norm.
    """
    ### BEGIN SOLUTION
    return layer_norm(X + sublayer_out, gamma, beta, eps)
    ### END SOLUTION


def feed_forward(X, W1, b1, W2, b2):
    """The position-wise feed-forward network, FFN(x) = max(0, x W1 + b1) W2 + b2.

        H   = relu(X @ W1 + b1)      (..., d_ff)     features switched on or off
        out = H @ W2 + b2            (..., d_model)  and blended back

    The same two layers are applied to every position separately.

    Args:
        X: (..., d_model).   W1: (d_model, d_ff), b1: (d_ff,).   W2: (d_ff, d_model), b2: (d_model,).

    Returns:
        (..., d_model).

    Hint: no activation after the second layer.
    """
    ### BEGIN SOLUTION
    return torch.relu(X @ W1 + b1) @ W2 + b2
    ### END SOLUTION


def encoder_layer(X, params, num_heads, mask=None):
    """One encoder layer: self-attention and the FFN, each followed by add & norm.

        A = multi_head_attention(X, X, params["attn"], num_heads, mask)    (B, T, d_model)
        X = add_and_norm(X, A, ln1_gamma, ln1_beta)                         (B, T, d_model)
        F = feed_forward(X, W1, b1, W2, b2 of params["ff"])                 (B, T, d_model)
        X = add_and_norm(X, F, ln2_gamma, ln2_beta)                         (B, T, d_model)

    Args:
        X: (B, T, d_model).   params: the layer dict (see the top of this file).
        num_heads: h.   mask: None, or bool (T, T) or (B, T, T), True = may attend, passed
        on to the attention unchanged.

    Returns:
        (B, T, d_model).

    The reference is nn.TransformerEncoderLayer(batch_first=True, dropout=0, norm_first=False,
    activation="relu") holding your weights. Post-norm: normalise after adding, not before the
    sub-layer (that is pre-norm, norm_first=True).
    """
    ### BEGIN SOLUTION
    attended = multi_head_attention(X, X, params["attn"], num_heads, mask)
    X = add_and_norm(X, attended, params["ln1_gamma"], params["ln1_beta"])
    ff = params["ff"]
    X = add_and_norm(X, feed_forward(X, ff["W1"], ff["b1"], ff["W2"], ff["b2"]),
                     params["ln2_gamma"], params["ln2_beta"])
    return X
    ### END SOLUTION


def decoder_layer(Y, memory, params, num_heads):
    """One decoder layer: masked self-attention, cross-attention to the memory, then the FFN,
    each followed by add & norm.

        S = multi_head_attention(Y, Y, params["attn"], num_heads, causal_mask(T))   (B, T, d_model)
        Y = add_and_norm(Y, S, ln1_gamma, ln1_beta)
        C = multi_head_attention(Y, memory, params["cross_attn"], num_heads)         (B, T, d_model)
        Y = add_and_norm(Y, C, ln2_gamma, ln2_beta)
        F = feed_forward(Y, W1, b1, W2, b2 of params["ff"])
        Y = add_and_norm(Y, F, ln3_gamma, ln3_beta)

    The self-attention is causal: while writing "sat", the decoder may look at "<bos> the cat"
    but not at "on the mat", which it has not written yet. In the cross-attention the queries
    come from the decoder (Y) and the keys and values from the encoder's memory: that is how
    the answer reads the question.

    Args:
        Y: (B, T, d_model) the decoder's input.   memory: (B, S, d_model) the encoder's output.
        params: the decoder layer dict.   num_heads: h.

    Returns:
        (B, T, d_model).

    The reference is nn.TransformerDecoderLayer(batch_first=True, dropout=0, norm_first=False,
    activation="relu") holding your weights, with a causal target mask.
    """
    ### BEGIN SOLUTION
    T = Y.shape[1]
    attended = multi_head_attention(Y, Y, params["attn"], num_heads, causal_mask(T))
    Y = add_and_norm(Y, attended, params["ln1_gamma"], params["ln1_beta"])
    crossed = multi_head_attention(Y, memory, params["cross_attn"], num_heads)
    Y = add_and_norm(Y, crossed, params["ln2_gamma"], params["ln2_beta"])
    ff = params["ff"]
    Y = add_and_norm(Y, feed_forward(Y, ff["W1"], ff["b1"], ff["W2"], ff["b2"]),
                     params["ln3_gamma"], params["ln3_beta"])
    return Y
    ### END SOLUTION


def transformer_forward(src_ids, tgt_ids, params, num_heads):
    """The whole encoder-decoder transformer: token ids in, next-token logits out.

        X      = src_embed[src_ids] + positional_encoding(S, d_model)      (B, S, d_model)
        X      = encoder_layer(X, layer, num_heads)  for each layer of params["encoder"]
        memory = layer_norm(X, enc_norm_gamma, enc_norm_beta)              (B, S, d_model)
        Y      = tgt_embed[tgt_ids] + positional_encoding(T, d_model)      (B, T, d_model)
        Y      = decoder_layer(Y, memory, layer, num_heads)  for each layer of params["decoder"]
        Y      = layer_norm(Y, dec_norm_gamma, dec_norm_beta)              (B, T, d_model)
        logits = Y @ W_out + b_out                                         (B, T, V_tgt)

    tgt_ids is the target shifted right ("<bos> the cat sat on the"): logits[:, t] scores the
    word that comes after tgt_ids[:, t]. The embeddings are not scaled (no sqrt(d_model)), the
    positional encoding is added once to each stack's input, and the two final layer norms are
    the ones nn.Transformer applies after its encoder and decoder stacks. The softmax of the
    course text's last step is left to the loss (or to the argmax when decoding).

    Args:
        src_ids: int64 (B, S).   tgt_ids: int64 (B, T).
        params: src_embed (V_src, d_model), tgt_embed (V_tgt, d_model), encoder and decoder
                (lists of layer dicts, possibly of different lengths), enc_norm_gamma,
                enc_norm_beta, dec_norm_gamma, dec_norm_beta (d_model,), W_out (d_model, V_tgt),
                b_out (V_tgt,).
        num_heads: h.

    Returns:
        logits (B, T, V_tgt).

    The reference is nn.Transformer(batch_first=True, dropout=0) holding your weights, with the
    grader's own embedding + positional encoding in front and the linear layer behind.
    Capstone: one case trains your transformer_forward (1 encoder + 1 decoder layer, d_model=32)
    for 150 Adam steps to reverse sequences of 8 symbols, with autograd through your forward
    (in the sandbox, fixed seed), and checks that it then predicts at least 90% of held-out
    target tokens. Your sub-layers are the grader's here too, so what counts is that your
    forward composes them and stays differentiable.
    Hint: an embedding lookup is plain indexing, E[ids] -> (B, S, d_model).
    """
    ### BEGIN SOLUTION
    d_model = params["src_embed"].shape[1]
    X = params["src_embed"][src_ids] + positional_encoding(src_ids.shape[1], d_model)
    for layer in params["encoder"]:
        X = encoder_layer(X, layer, num_heads)
    memory = layer_norm(X, params["enc_norm_gamma"], params["enc_norm_beta"])
    Y = params["tgt_embed"][tgt_ids] + positional_encoding(tgt_ids.shape[1], d_model)
    for layer in params["decoder"]:
        Y = decoder_layer(Y, memory, layer, num_heads)
    Y = layer_norm(Y, params["dec_norm_gamma"], params["dec_norm_beta"])
    return Y @ params["W_out"] + params["b_out"]
    ### END SOLUTION


def greedy_decode(src_ids, params, num_heads, bos_id, eos_id, max_len):
    """Write the answer one token at a time, always taking the most likely next token.

        ys = [[bos_id]] * B                                   (B, 1)
        repeat while L < max_len and some sequence has not produced eos_id:
            logits = transformer_forward(src_ids, ys, params, num_heads)    (B, L, V)
            next   = argmax of logits[:, -1]     (the last position only)   (B,)
            next   = eos_id for sequences that already produced eos_id (padding)
            ys     = ys with next appended as a new column                  (B, L + 1)

    Args:
        src_ids: int64 (B, S).   params, num_heads: as transformer_forward.
        bos_id, eos_id: ints.   max_len: the most columns the result may have, bos included.

    Returns:
        int64 (B, L) with L <= max_len: column 0 is bos_id; after a sequence's first eos_id
        every later column is eos_id; it stops as soon as every sequence has produced eos_id,
        or when L == max_len.

    The reference decodes nn.Transformer (with your weights) the same way.
    Hint: calling transformer_forward on the whole prefix at every step is fine here;
    keep a boolean (B,) "finished" vector.
    """
    ### BEGIN SOLUTION
    B = src_ids.shape[0]
    ys = torch.full((B, 1), bos_id, dtype=torch.int64)
    finished = torch.zeros(B, dtype=torch.bool)
    while ys.shape[1] < max_len and not bool(finished.all()):
        logits = transformer_forward(src_ids, ys, params, num_heads)     # (B, L, V)
        next_ids = logits[:, -1].argmax(dim=-1)                           # (B,)
        next_ids = torch.where(finished, torch.full_like(next_ids, eos_id), next_ids)
        ys = torch.cat([ys, next_ids.unsqueeze(1)], dim=1)
        finished = finished | (next_ids == eos_id)
    return ys
    ### END SOLUTION
