"""What comes next: a mixture-of-experts layer (beyond the course text).

The course ends with the encoder-decoder transformer and a remark that today's large models
are stacks of self-attention and FFNs, with many variations on the primitives. One such
variation: instead of one big FFN that every token goes through, keep E smaller FFNs (the
experts) and a router that sends each token to only k of them. The model holds E experts'
worth of parameters, yet each token pays for only k of them.

Allowed: any tensor operation, including torch.topk and torch.softmax.
"""
import torch

from transformer import feed_forward


def moe_forward(X, router_W, experts, k):
    """A top-k mixture of experts, applied to each token separately.

        scores          = X @ router_W                        (..., E)   one score per expert
        top, idx        = the k largest scores and their experts (..., k)
        gates           = softmax(top) over those k only      (..., k)   sums to 1 per token
        out             = sum over j of gates[j] * FFN_{idx[j]}(token)   (..., d_model)

    where FFN_e(x) = feed_forward(x, W1, b1, W2, b2 of experts[e]). The k gates sum to 1:
    the softmax is over the selected scores, not over all E experts. Experts that a token
    is not routed to contribute nothing to that token.

    Args:
        X: (..., d_model), e.g. (B, T, d_model) or (N, d_model).
        router_W: (d_model, E).
        experts: list of E dicts W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,).
        k: experts per token, 1 <= k <= E.

    Returns:
        (..., d_model), the dtype of X.

    Your feed_forward from transformer.py is imported for the experts (the grader uses its
    reference FFN in its place here, so a bug there is charged once).
    Hint: running every expert on every token and keeping the gated ones is fine at this
    size; torch.gather or a (..., E) gate matrix with zeros for the unselected experts helps.
    """
    ### BEGIN SOLUTION
    scores = X @ router_W                                    # (..., E)
    top, idx = torch.topk(scores, k, dim=-1)                 # (..., k)
    gates = torch.softmax(top, dim=-1)                       # (..., k)
    outs = torch.stack([feed_forward(X, e["W1"], e["b1"], e["W2"], e["b2"]) for e in experts],
                       dim=-2)                               # (..., E, d_model)
    chosen = torch.gather(outs, -2, idx.unsqueeze(-1).expand(*idx.shape, outs.shape[-1]))  # (..., k, d_model)
    return (gates.unsqueeze(-1) * chosen).sum(dim=-2)
    ### END SOLUTION
