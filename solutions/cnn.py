"""Convolution and pooling: layers for images and other grids.

A convolution slides a small kernel of weights over the input and, at every position, takes
the dot product of the kernel with the patch under it: the same weights everywhere, so a
pattern is recognised wherever it appears. Pooling shrinks the grid by summarising each
window (its max or its mean). The dogecoin story uses the 1-D version: a window of 5 days
sliding along the price series.

Shapes are PyTorch's: images (N, C, H, W), series (N, C, L), kernels (C_out, C_in, kh, kw).
"Convolution" in deep learning is cross-correlation: the kernel is NOT flipped.

    Y[n, o, i, j] = b[o] + sum_{c, u, v} Xp[n, c, i*s + u, j*s + v] * K[o, c, u, v]

where Xp is X padded with p zeros on every side (top, bottom, left and right) and s the stride.
Output size along each spatial axis:  H_out = (H + 2p - kh) // s + 1   (the same for W).

Allowed: any tensor operation, including `Tensor.unfold`, `torch.nn.functional.unfold`
(im2col), `torch.nn.functional.pad`, `as_strided`, `einsum` and plain Python loops.
Forbidden: every library convolution in conv2d and conv1d (F.conv1d/conv2d/conv3d, nn.Conv*,
torch.conv*, conv_transpose*), F.max_pool* in max_pool2d and F.avg_pool* in avg_pool2d
(adaptive versions included).
"""
import torch
import torch.nn.functional as F


def conv2d(X, K, b=None, stride=1, padding=0):
    """2-D convolution (cross-correlation) with stride and zero padding, as F.conv2d.

        Y[n, o, i, j] = b[o] + sum_{c, u, v} Xp[n, c, i*stride + u, j*stride + v] * K[o, c, u, v]

    Args:
        X: (N, C_in, H, W) images.
        K: (C_out, C_in, kh, kw) kernels (kh and kw may differ).
        b: (C_out,) bias, or None.
        stride: int, the step between windows (the same along H and W).
        padding: int, zeros added on EACH side of H and of W (so H grows by 2 * padding).
    Returns:
        Y: (N, C_out, H_out, W_out), H_out = (H + 2*padding - kh) // stride + 1,
           W_out = (W + 2*padding - kw) // stride + 1.

    Not flipped: K[o, c, 0, 0] multiplies the top-left pixel of each window.
    Forbidden: F.conv2d, torch.conv2d, nn.Conv2d and every other library convolution.
    Hint: F.unfold(X, (kh, kw), padding=padding, stride=stride) gives every window as a
    column, (N, C_in*kh*kw, H_out*W_out); a matrix product with K.reshape(C_out, -1) then
    does all the dot products at once. Loops over (i, j) with slicing also work.
    """
    ### BEGIN SOLUTION
    N, C_in, H, W = X.shape
    C_out, _, kh, kw = K.shape
    H_out = (H + 2 * padding - kh) // stride + 1
    W_out = (W + 2 * padding - kw) // stride + 1
    cols = F.unfold(X, (kh, kw), padding=padding, stride=stride)     # (N, C_in*kh*kw, H_out*W_out)
    Y = K.reshape(C_out, -1) @ cols                                    # (N, C_out, H_out*W_out)
    Y = Y.reshape(N, C_out, H_out, W_out)
    if b is not None:
        Y = Y + b.reshape(1, C_out, 1, 1)
    return Y
    ### END SOLUTION


def max_pool2d(X, kernel_size, stride=None):
    """Max pooling over k x k windows, as F.max_pool2d (no padding).

        Y[n, c, i, j] = max_{u, v < k} X[n, c, i*s + u, j*s + v]

    Args:
        X: (N, C, H, W).
        kernel_size: int k, a square k x k window.
        stride: int s, or None, which means s = k (windows side by side, not overlapping).
    Returns:
        Y: (N, C, H_out, W_out), H_out = (H - k) // s + 1 (a partial window at the edge is
           dropped), likewise W_out. Each channel is pooled on its own.

    Forbidden: F.max_pool2d, nn.MaxPool2d, torch.max_pool2d, F.adaptive_max_pool2d.
    Hint: X.unfold(2, k, s).unfold(3, k, s) has shape (N, C, H_out, W_out, k, k); take
    amax over its last two dims. Inputs can be all negative: a running max must not start at 0.
    """
    ### BEGIN SOLUTION
    k = kernel_size
    s = k if stride is None else stride
    windows = X.unfold(2, k, s).unfold(3, k, s)           # (N, C, H_out, W_out, k, k), a view
    return windows.amax(dim=(-2, -1))
    ### END SOLUTION


def avg_pool2d(X, kernel_size, stride=None):
    """Average pooling over k x k windows, as F.avg_pool2d (no padding).

        Y[n, c, i, j] = (1 / k^2) * sum_{u, v < k} X[n, c, i*s + u, j*s + v]

    Args:
        X: (N, C, H, W).
        kernel_size: int k.   stride: int s, or None for s = k.
    Returns:
        Y: (N, C, H_out, W_out), H_out = (H - k) // s + 1, likewise W_out.

    Forbidden: F.avg_pool2d, nn.AvgPool2d, F.adaptive_avg_pool2d, F.lp_pool2d.
    Hint: the same windows as max_pool2d, with mean instead of amax.
    """
    ### BEGIN SOLUTION
    k = kernel_size
    s = k if stride is None else stride
    windows = X.unfold(2, k, s).unfold(3, k, s)           # (N, C, H_out, W_out, k, k)
    return windows.mean(dim=(-2, -1))
    ### END SOLUTION


def conv1d(x, k, b=None, stride=1, padding=0):
    """1-D convolution (cross-correlation) along a sequence, as F.conv1d.

    The dogecoin story: a kernel of width 5 slides along the daily prices and responds to a
    5-day pattern wherever it occurs.

        y[n, o, i] = b[o] + sum_{c, u} xp[n, c, i*stride + u] * k[o, c, u]

    Args:
        x: (N, C_in, L) sequences.   k: (C_out, C_in, kw) kernels.   b: (C_out,) or None.
        stride: int.   padding: int, zeros added at BOTH ends of the sequence.
    Returns:
        y: (N, C_out, L_out), L_out = (L + 2*padding - kw) // stride + 1.

    Not flipped, like conv2d. You may call your conv2d (a sequence is an image of height 1;
    the grader runs this exercise with its own conv2d in place of yours).
    Forbidden: F.conv1d, torch.conv1d, nn.Conv1d and every other library convolution.
    Hint: x.unfold(2, kw, stride) after F.pad gives (N, C_in, L_out, kw); einsum with k.
    """
    ### BEGIN SOLUTION
    xp = F.pad(x, (padding, padding))                                 # (N, C_in, L + 2p)
    windows = xp.unfold(2, k.shape[2], stride)                        # (N, C_in, L_out, kw)
    y = torch.einsum("ncla,oca->nol", windows, k)                     # (N, C_out, L_out)
    if b is not None:
        y = y + b.reshape(1, -1, 1)
    return y
    ### END SOLUTION
