"""Long short-term memory: the LSTM cell, a whole sequence, and the peephole variant.

The story. A plain recurrent cell squeezes everything it has read into one small state and
rewrites it at every step, so after a few dozen steps the start of the sequence has left no
trace: goldfish memory, like losing the beginning of your own sentence halfway through.
An LSTM cell keeps two states. The long-term cell state c is only ever scaled and added to,
never squashed through a weight matrix, so information can ride along for many steps. Small
learned controllers decide, element by element, what to erase from c, what to write into it,
and what to read out of it as the short-term state h.

The course's gate equations (sigma is the logistic sigmoid, * the elementwise product):

    i_t = sigma(x_t @ W_xi + h_prev @ W_hi + b_i)     input gate: how much of g to write
    f_t = sigma(x_t @ W_xf + h_prev @ W_hf + b_f)     forget gate: how much of c_prev to keep
    g_t = tanh (x_t @ W_xg + h_prev @ W_hg + b_g)     candidate: what could be written
    o_t = sigma(x_t @ W_xo + h_prev @ W_ho + b_o)     output gate: how much of c to show
    c_t = f_t * c_prev + i_t * g_t
    h_t = o_t * tanh(c_t)

The gates i, f, o are in [0, 1] (1: fully open, 0: closed); only the candidate g uses tanh.

`params` is a dict of tensors:
    W_xi W_xf W_xg W_xo   (d, h)   input-to-gate weights
    W_hi W_hf W_hg W_ho   (h, h)   hidden-to-gate weights
    b_i  b_f  b_g  b_o    (h,)     biases
    p_i  p_f  p_o         (h,)     peephole weights (peephole_lstm_cell only)

Shapes: x_t (B, d), h_prev and c_prev (B, h), sequences X (B, T, d), batch first. States
and parameters are passed in and returned explicitly; nothing is stored between calls and
no input is modified in place. (PyTorch's nn.LSTM stacks the same four blocks as one
(4h, d) matrix in the order i, f, g, o; the grader does that mapping for you.)

Allowed: any tensor operation. Forbidden: `torch.nn.LSTM`, `torch.nn.LSTMCell` and their
functional forms (`torch.lstm`, `torch.lstm_cell`, `torch._VF...`).
"""
import torch


def lstm_cell(x_t, h_prev, c_prev, params):
    """One step of an LSTM cell, by the gate equations at the top of this module.

    Args:
        x_t:    (B, d) inputs at this step.
        h_prev: (B, h) short-term (hidden) state of the previous step.
        c_prev: (B, h) long-term (cell) state of the previous step.
        params: dict with W_x* (d, h), W_h* (h, h) and b_* (h,) for * in i, f, g, o.

    Returns:
        (h_t, c_t), both (B, h).

    Reference: torch.nn.LSTMCell with your weights. When a case fails, the grader probes your
    cell with weights that switch all gates but one to fixed values, to tell you which gate
    (or which part of the update) is wrong.
    Hint: write the four pre-activations first, then the activations, then c_t, then h_t.
    The cell state is updated from c_prev, never from h_prev.
    """
    ### BEGIN SOLUTION
    p = params

    def pre(gate):   # (B, h)
        return x_t @ p[f"W_x{gate}"] + h_prev @ p[f"W_h{gate}"] + p[f"b_{gate}"]

    i = torch.sigmoid(pre("i"))
    f = torch.sigmoid(pre("f"))
    g = torch.tanh(pre("g"))
    o = torch.sigmoid(pre("o"))
    c_t = f * c_prev + i * g
    h_t = o * torch.tanh(c_t)
    return h_t, c_t
    ### END SOLUTION


def lstm_forward(X, h0, c0, params):
    """Run the LSTM cell over a sequence, carrying both states from step to step.

        (h, c) = (h0, c0);  for t = 0 .. T-1:  (h, c) = lstm_cell(X[:, t], h, c, params)

    Args:
        X: (B, T, d).   h0, c0: (B, h) initial states (not necessarily zeros).
        params: as lstm_cell, shared by every step.

    Returns:
        (H, (h_T, c_T)): H (B, T, h) the hidden state after every step (the cell states are
        not collected), h_T and c_T (B, h) the final states.

    The grader compares with torch.nn.LSTM(batch_first=True) and grades this function with its
    own lstm_cell in place of yours, so a bug in the cell is charged once.
    Hint: the same shape of loop as rnn_forward, with two states instead of one.
    """
    ### BEGIN SOLUTION
    h, c = h0, c0
    states = []
    for t in range(X.shape[1]):
        h, c = lstm_cell(X[:, t], h, c, params)
        states.append(h)
    return torch.stack(states, dim=1), (h, c)
    ### END SOLUTION


def peephole_lstm_cell(x_t, h_prev, c_prev, params):
    """An LSTM cell with peephole connections: the gates also look at the long-term state.

    The forget and input gates peek at the previous cell state, the output gate at the new one
    (it is computed after c_t). The peephole weights are vectors, so each unit only sees its
    own cell (an elementwise product, not a matrix):

        i_t = sigma(x_t @ W_xi + h_prev @ W_hi + p_i * c_prev + b_i)
        f_t = sigma(x_t @ W_xf + h_prev @ W_hf + p_f * c_prev + b_f)
        g_t = tanh (x_t @ W_xg + h_prev @ W_hg + b_g)                   (no peephole)
        c_t = f_t * c_prev + i_t * g_t
        o_t = sigma(x_t @ W_xo + h_prev @ W_ho + p_o * c_t + b_o)       (c_t, the new state)
        h_t = o_t * tanh(c_t)

    With p_i = p_f = p_o = 0 this is exactly lstm_cell. Whether peepholes help is an open
    question even in the textbooks; they are here to practise reading equations carefully.

    Args:
        x_t (B, d), h_prev (B, h), c_prev (B, h); params: as lstm_cell plus p_i, p_f, p_o (h,).

    Returns:
        (h_t, c_t), both (B, h).

    Reference: the grader's own torch implementation of these equations (PyTorch has no
    peephole LSTM).
    Hint: compute c_t before o_t.
    """
    ### BEGIN SOLUTION
    p = params

    def pre(gate):   # (B, h)
        return x_t @ p[f"W_x{gate}"] + h_prev @ p[f"W_h{gate}"] + p[f"b_{gate}"]

    i = torch.sigmoid(pre("i") + p["p_i"] * c_prev)
    f = torch.sigmoid(pre("f") + p["p_f"] * c_prev)
    g = torch.tanh(pre("g"))
    c_t = f * c_prev + i * g
    o = torch.sigmoid(pre("o") + p["p_o"] * c_t)
    h_t = o * torch.tanh(c_t)
    return h_t, c_t
    ### END SOLUTION
