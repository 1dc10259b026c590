"""Gated recurrent unit: PyTorch's GRU cell and a whole sequence.

The story. The LSTM works, but it carries two states and four gates. The GRU keeps the idea
and trims the machinery: one state h plays both the long-term and the short-term role, and a
single update gate z does the work of the LSTM's forget and input gates together (what is
kept of the old state is exactly what is not taken from the new candidate). A reset gate r
decides how much of the previous state the candidate n may look at.

PyTorch's formulation (the one graded here; sigma is the sigmoid, * elementwise):

    r_t = sigma(x_t @ W_xr + h_prev @ W_hr + b_r)                  reset gate
    z_t = sigma(x_t @ W_xz + h_prev @ W_hz + b_z)                  update gate
    n_t = tanh (x_t @ W_xn + b_xn + r_t * (h_prev @ W_hn + b_hn))  candidate
    h_t = (1 - z_t) * n_t + z_t * h_prev

How this differs from the original paper (Cho et al., 2014) and many textbooks:
  - there, the reset gate multiplies h_prev *before* the matrix product,
    n = tanh(x W_xn + (r * h_prev) @ W_hn + b); PyTorch (like cuDNN) multiplies the result of
    the product, r * (h_prev @ W_hn + b_hn), which is why there are two candidate biases;
  - some texts write h_t = z * n + (1 - z) * h_prev, i.e. their z means "take the new" where
    PyTorch's z means "keep the old". Both are valid GRUs, but they are different functions
    of the same weights: here z multiplies h_prev.

`params` is a dict of tensors:
    W_xr W_xz W_xn   (d, h)    input-to-gate weights
    W_hr W_hz W_hn   (h, h)    hidden-to-gate weights
    b_r  b_z         (h,)      gate biases
    b_xn b_hn        (h,)      candidate biases: b_xn outside the reset gate, b_hn inside it

Shapes: x_t (B, d), h_prev (B, h), sequences X (B, T, d), batch first. Parameters and states
are passed explicitly; nothing is stored between calls and no input is modified in place.

Allowed: any tensor operation. Forbidden: `torch.nn.GRU`, `torch.nn.GRUCell` and their
functional forms (`torch.gru`, `torch.gru_cell`, `torch._VF...`).
"""
import torch


def gru_cell(x_t, h_prev, params):
    """One step of a GRU cell, by PyTorch's equations at the top of this module.

    Args:
        x_t: (B, d) inputs.   h_prev: (B, h) previous state.
        params: dict with W_x* (d, h) and W_h* (h, h) for * in r, z, n, and b_r, b_z, b_xn, b_hn (h,).

    Returns:
        h_t: (B, h).

    Reference: torch.nn.GRUCell with your weights. When a case fails, the grader probes your
    cell with weights that hold all gates but one at fixed values, to tell you which gate or
    term is wrong.
    Hint: r multiplies (h_prev @ W_hn + b_hn), after the matrix product; z multiplies h_prev.
    """
    ### BEGIN SOLUTION
    p = params
    r = torch.sigmoid(x_t @ p["W_xr"] + h_prev @ p["W_hr"] + p["b_r"])
    z = torch.sigmoid(x_t @ p["W_xz"] + h_prev @ p["W_hz"] + p["b_z"])
    n = torch.tanh(x_t @ p["W_xn"] + p["b_xn"] + r * (h_prev @ p["W_hn"] + p["b_hn"]))
    return (1 - z) * n + z * h_prev
    ### END SOLUTION


def gru_forward(X, h0, params):
    """Run the GRU cell over a sequence.

        h = h0;  for t = 0 .. T-1:  h = gru_cell(X[:, t], h, params);  H[:, t] = h

    Args:
        X: (B, T, d).   h0: (B, h) initial state (not necessarily zeros).   params: as gru_cell.

    Returns:
        (H, h_T): H (B, T, h) the state after every step, h_T (B, h) the last one.

    The grader compares with torch.nn.GRU(batch_first=True) and grades this function with its
    own gru_cell in place of yours, so a bug in the cell is charged once.
    """
    ### BEGIN SOLUTION
    h = h0
    states = []
    for t in range(X.shape[1]):
        h = gru_cell(X[:, t], h, params)
        states.append(h)
    return torch.stack(states, dim=1), h
    ### END SOLUTION
