"""Recurrent neural networks: one recurrent cell, a whole sequence, and backpropagation
through time (BPTT) by hand.

The story. Someone wants to guess tomorrow's Dogecoin price from a year of daily prices.
Flattening the 365 prices into one input vector for a dense network throws away their order,
and a pattern learned in March has to be learned again for June. A 1-D convolution shares its
weights along the sequence, but only ever sees a fixed window of, say, 5 days. A recurrent
cell reads the prices one day at a time and carries a hidden state h from day to day: the
same weights at every step, and a memory that can in principle reach any distance back.

Conventions (the course's row-vector layout, batch first):

    x_t     (B, d)      the inputs at step t           X  (B, T, d)  a whole sequence
    h_prev  (B, h)      the hidden state from step t-1  h0 (B, h)     the state before step 0
    W_x     (d, h)      input-to-hidden weights
    W_h     (h, h)      hidden-to-hidden weights
    b       (h,)        bias

`x_t @ W_x + h_prev @ W_h` is the course's `W [h_{t-1}, x_t]` with the concatenation split in
two. Parameters and states are passed in and returned explicitly: nothing is stored between
calls, and no input is modified in place.

Allowed: any tensor operation (`@`, `torch.tanh`, indexing, `torch.stack`, ...).
Forbidden: `torch.nn.RNN`, `torch.nn.RNNCell` and their functional forms (`torch.rnn_tanh`,
`torch.rnn_tanh_cell`, `torch._VF...`); in `rnn_bptt` also autograd (`.backward()`,
`torch.autograd`, `requires_grad`): the point is to derive the gradients yourself.
"""
import torch


def rnn_cell(x_t, h_prev, W_x, W_h, b):
    """One step of a simple (Elman) recurrent cell:

        h_t = tanh(x_t @ W_x + h_prev @ W_h + b)

    Args:
        x_t:    (B, d) inputs at this step.
        h_prev: (B, h) hidden state of the previous step.
        W_x:    (d, h).   W_h: (h, h).   b: (h,).

    Returns:
        h_t: (B, h), the new hidden state (also the cell's output).

    The grader compares with torch.nn.RNNCell (nonlinearity="tanh") loaded with your weights.
    Hint: one line; broadcasting adds b to every row.
    """
    ### BEGIN SOLUTION
    return torch.tanh(x_t @ W_x + h_prev @ W_h + b)
    ### END SOLUTION


def rnn_forward(X, h0, W_x, W_h, b):
    """Run the cell over a whole sequence, carrying the hidden state from step to step.

        h = h0;  for t = 0 .. T-1:  h = rnn_cell(X[:, t], h, W_x, W_h, b);  H[:, t] = h

    so H[:, t] is the state after reading X[:, t], and each step starts from the state the
    step before it returned: that is the network's memory.

    Args:
        X:  (B, T, d) the sequence, batch first.
        h0: (B, h) the initial hidden state (not necessarily zeros).
        W_x (d, h), W_h (h, h), b (h,): shared by every step.

    Returns:
        (H, h_T): H (B, T, h) with H[:, t] the state after step t, and h_T (B, h) the last
        state (equal to H[:, -1]).

    The grader compares with torch.nn.RNN(batch_first=True) and grades this function with its
    own rnn_cell in place of yours, so a bug in the cell is charged once.
    Hint: feed each step the state the previous step returned, not h0; collect the states
    in a list and torch.stack(..., dim=1) them.
    """
    ### BEGIN SOLUTION
    h = h0
    states = []
    for t in range(X.shape[1]):
        h = rnn_cell(X[:, t], h, W_x, W_h, b)   # (B, h)
        states.append(h)
    return torch.stack(states, dim=1), h        # (B, T, h), (B, h)
    ### END SOLUTION


def rnn_bptt(X, h0, W_x, W_h, b, dH):
    """Backpropagation through time: the gradients of a loss L with respect to every input of
    rnn_forward, given the upstream gradients dH = dL/dH on every output state.

    Unroll the forward pass (H[:, t] = h_t, and h_{-1} = h0 here) and walk back from the last
    step. At step t the state h_t receives gradient from two places: the loss at this step
    (dH[:, t]) and the next step, which used h_t as its h_prev (dh_next, zero at t = T-1):

        dh_t      = dH[:, t] + dh_next                        (B, h)
        da_t      = dh_t * (1 - h_t**2)                       (B, h)   tanh'(a) = 1 - tanh(a)^2
        dX[:, t]  = da_t @ W_x.T                              (B, d)
        dW_x     += x_t.T @ da_t                              (d, h)
        dW_h     += h_{t-1}.T @ da_t                          (h, h)
        db       += da_t.sum(0)                               (h,)
        dh_next   = da_t @ W_h.T                              (B, h)

    and after step 0, dh0 = dh_next. The weights are shared by every step, so their gradients
    are sums over all steps (+=, not =).

    Args:
        X (B, T, d), h0 (B, h), W_x (d, h), W_h (h, h), b (h,): as in rnn_forward.
        dH: (B, T, h) upstream gradient on every hidden state; zeros at steps the loss does
            not look at (a sequence-to-vector loss has only dH[:, -1] non-zero).

    Returns:
        (dX, dh0, dW_x, dW_h, db) with the shapes of X, h0, W_x, W_h, b.

    Over long sequences these products of (1 - h^2) and W_h terms shrink (vanishing gradients)
    or grow (exploding gradients): the goldfish-memory problem LSTMs and GRUs address.
    The grader compares each gradient separately with autograd. Forbidden: autograd itself.
    Hint: run the forward pass first (your rnn_forward is fine) to have every h_t.
    """
    ### BEGIN SOLUTION
    H, _ = rnn_forward(X, h0, W_x, W_h, b)
    T = X.shape[1]
    dX = torch.zeros_like(X)
    dW_x, dW_h, db = torch.zeros_like(W_x), torch.zeros_like(W_h), torch.zeros_like(b)
    dh_next = torch.zeros_like(h0)
    for t in reversed(range(T)):
        h_t = H[:, t]
        h_before = H[:, t - 1] if t > 0 else h0
        da = (dH[:, t] + dh_next) * (1 - h_t ** 2)   # (B, h)
        dX[:, t] = da @ W_x.T
        dW_x += X[:, t].T @ da
        dW_h += h_before.T @ da
        db += da.sum(0)
        dh_next = da @ W_h.T
    return dX, dh_next, dW_x, dW_h, db
    ### END SOLUTION
