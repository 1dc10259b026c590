"""Specs for the cnn chapter: conv2d, max_pool2d, avg_pool2d, conv1d. References are
torch.nn.functional's, in float64 for the convolutions and the average (sums that valid
formulations round differently) and in the input's dtype for the max (exact)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.catalog.inputs import randn
from grader.catalog.rules import AVG_POOL, CONVOLUTION, MAX_POOL
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64


# ----------------------------------------------------------------------------------- conv2d
def _conv(X, K, b=None, stride=1, padding=0, *, flip=False, pad="both", drop_last=False, stride_ignored=False,
          bias=True, dims=2):
    """F.conv{1,2}d in float64 with one thing done wrong (or nothing), returned in X's dtype."""
    conv = F.conv2d if dims == 2 else F.conv1d
    X64, K64 = X.double(), K.double()
    b64 = b.double() if (b is not None and bias) else None
    if flip:
        K64 = K64.flip(list(range(2, K64.dim())))
    s = 1 if stride_ignored else stride
    if pad == "both":
        Y = conv(X64, K64, b64, stride=s, padding=padding)
    else:   # all the padding on the far side(s): "2p at the end" or "p at the end"
        p = 2 * padding if pad == "far 2p" else padding
        Y = conv(F.pad(X64, (0, p) * dims), K64, b64, stride=s)
    if drop_last:
        Y = Y[..., :-1, :-1] if dims == 2 else Y[..., :-1]
    return Y.to(X.dtype)


def ref_conv2d(X, K, b=None, stride=1, padding=0):
    """torch.nn.functional.conv2d in float64."""
    return _conv(X, K, b, stride, padding)


def conv2d_cases(gen):
    return [
        Case("1 channel, 5x5 image, 3x3 kernel", (randn(gen, 1, 1, 5, 5), randn(gen, 1, 1, 3, 3))),
        Case("3 -> 4 channels, bias", (randn(gen, 2, 3, 6, 6), randn(gen, 4, 3, 3, 3), randn(gen, 4))),
        Case("stride 2", (randn(gen, 2, 2, 7, 7), randn(gen, 3, 2, 3, 3)), {"stride": 2}),
        Case("padding 1", (randn(gen, 1, 2, 5, 5), randn(gen, 2, 2, 3, 3), randn(gen, 2)), {"padding": 1}),
        Case("stride 2, padding 2, 2x3 kernel, 7x9 image", (randn(gen, 2, 2, 7, 9), randn(gen, 3, 2, 2, 3),
                                                            randn(gen, 3)), {"stride": 2, "padding": 2}),
        Case("kernel as large as the image", (randn(gen, 2, 3, 4, 4), randn(gen, 2, 3, 4, 4)), note="one output pixel"),
        Case("1x1 kernel", (randn(gen, 1, 4, 3, 5), randn(gen, 2, 4, 1, 1), randn(gen, 2))),
        Case("float64, 8 -> 6 channels, 5x5 kernel",
             (randn(gen, 2, 8, 12, 12, dtype=F64), randn(gen, 6, 8, 5, 5, dtype=F64), randn(gen, 6, dtype=F64)),
             {"stride": 1, "padding": 2}),
    ]


def _conv_mistakes(dims):
    return (
        KnownMistake("kernel flipped (true convolution)", "deep-learning convolution is cross-correlation: "
                     "K[..., 0, 0] multiplies the window's first element; do not flip the kernel",
                     lambda X, K, b=None, stride=1, padding=0: _conv(X, K, b, stride, padding, flip=True, dims=dims)),
        KnownMistake("padding on one side only", "pad each side with `padding` zeros (F.pad with "
                     "(p, p, p, p)); all of it went to the end", lambda X, K, b=None, stride=1, padding=0:
                     _conv(X, K, b, stride, padding, pad="far 2p", dims=dims)),
        KnownMistake("padding added at one end only", "padding adds p zeros at BOTH ends of each spatial axis: "
                     "the size grows by 2p, not p", lambda X, K, b=None, stride=1, padding=0:
                     _conv(X, K, b, stride, padding, pad="far p", dims=dims)),
        KnownMistake("stride arithmetic off by one", "the number of windows is (size + 2p - k) // stride + 1 "
                     "(the +1 counts the first window): the last window is missing",
                     lambda X, K, b=None, stride=1, padding=0:
                     _conv(X, K, b, stride, padding, drop_last=True, dims=dims)),
        KnownMistake("stride ignored", "step the window by `stride` positions (output size "
                     "(size + 2p - k) // stride + 1)", lambda X, K, b=None, stride=1, padding=0:
                     _conv(X, K, b, stride, padding, stride_ignored=True, dims=dims)),
        KnownMistake("bias ignored", "add b[o] to every position of output channel o", lambda X, K, b=None, stride=1,
                     padding=0: _conv(X, K, b, stride, padding, bias=False, dims=dims)),
    )


CONV2D = ExerciseSpec(
    id="cnn.conv2d",
    points=3,
    cases=conv2d_cases,
    reference=ref_conv2d,
    reference_source="torch.nn.functional.conv2d in float64",
    tolerance={F32: (1e-4, 1e-4)},
    heatmaps=("output",),
    forbidden=(CONVOLUTION,),
    mistakes=_conv_mistakes(2),
)


# ---------------------------------------------------------------------------------- pooling
def pool_cases(gen):
    return [
        Case("2x2 on 4x4", (randn(gen, 1, 1, 4, 4), 2)),
        Case("2x2 on 5x5: the edge is dropped", (randn(gen, 2, 3, 5, 5), 2), note="a partial window is not pooled"),
        Case("3x3, stride 2 (overlapping)", (randn(gen, 2, 2, 7, 7), 3), {"stride": 2}),
        Case("all negative", (-randn(gen, 1, 2, 6, 6).abs() - 1, 3), note="every value below 0"),
        Case("2x2, stride 1", (randn(gen, 1, 2, 5, 4), 2), {"stride": 1}),
        Case("kernel 1", (randn(gen, 2, 1, 3, 3), 1)),
        Case("float64, 4x4 windows on 9x12", (randn(gen, 2, 3, 9, 12, dtype=F64), 4)),
    ]


def ref_max_pool2d(X, kernel_size, stride=None):
    return F.max_pool2d(X, kernel_size, stride)


def ref_avg_pool2d(X, kernel_size, stride=None):
    return F.avg_pool2d(X.double(), kernel_size, stride).to(X.dtype)


def _pool(kind, *, stride_one=False, ceil=False, clamp=False, divide="k2"):
    def fn(X, kernel_size, stride=None):
        s = (1 if stride_one else kernel_size) if stride is None else stride
        X64 = X.double()
        if kind == "max":
            Y = F.max_pool2d(X64, kernel_size, s, ceil_mode=ceil)
            Y = Y.clamp(min=0) if clamp else Y
        else:
            Y = F.avg_pool2d(X64, kernel_size, s, ceil_mode=ceil)
            Y = Y * {"k2": 1, "sum": kernel_size ** 2, "k": kernel_size}[divide]
        return Y.to(X.dtype)
    return fn


MAX_POOL2D = ExerciseSpec(
    id="cnn.max_pool2d",
    points=2,
    cases=pool_cases,
    reference=ref_max_pool2d,
    reference_source="torch.nn.functional.max_pool2d",
    heatmaps=("output",),
    forbidden=(MAX_POOL,),
    mistakes=(
        KnownMistake("stride defaults to 1", "stride=None means stride = kernel_size: windows side by side",
                     _pool("max", stride_one=True)),
        KnownMistake("average instead of max", "max pooling keeps each window's largest value", _pool("avg")),
        KnownMistake("running max started at 0", "start the max from the window's first value (or -inf): "
                     "with all-negative inputs, 0 is never the answer", _pool("max", clamp=True)),
        KnownMistake("partial windows kept", "a window must fit entirely: (H - k) // s + 1 outputs, the edge "
                     "that does not fill a window is dropped", _pool("max", ceil=True)),
    ),
)

AVG_POOL2D = ExerciseSpec(
    id="cnn.avg_pool2d",
    points=1,
    cases=pool_cases,
    reference=ref_avg_pool2d,
    reference_source="torch.nn.functional.avg_pool2d in float64",
    heatmaps=("output",),
    forbidden=(AVG_POOL,),
    mistakes=(
        KnownMistake("stride defaults to 1", "stride=None means stride = kernel_size: windows side by side",
                     _pool("avg", stride_one=True)),
        KnownMistake("sum instead of mean", "divide each window's sum by the number of values in it, k * k",
                     _pool("avg", divide="sum")),
        KnownMistake("divided by k instead of k^2", "a k x k window holds k * k values", _pool("avg", divide="k")),
        KnownMistake("max instead of average", "average pooling takes each window's mean", _pool("max")),
        KnownMistake("partial windows kept", "a window must fit entirely: (H - k) // s + 1 outputs",
                     _pool("avg", ceil=True)),
    ),
)


# ----------------------------------------------------------------------------------- conv1d
def ref_conv1d(x, k, b=None, stride=1, padding=0):
    """torch.nn.functional.conv1d in float64."""
    return _conv(x, k, b, stride, padding, dims=1)


def prices(gen, n, length):
    """A dogecoin-like series: a random walk around 1."""
    return (1 + 0.05 * torch.randn(n, 1, length, generator=gen, dtype=F64).cumsum(-1)).to(F32)


def conv1d_cases(gen):
    return [
        Case("prices, a 5-day window", (prices(gen, 2, 20), randn(gen, 1, 1, 5)), note="one channel of daily prices"),
        Case("2 -> 3 channels, bias", (randn(gen, 2, 2, 9), randn(gen, 3, 2, 3), randn(gen, 3))),
        Case("stride 2", (randn(gen, 1, 2, 11), randn(gen, 2, 2, 3)), {"stride": 2}),
        Case("padding 2", (randn(gen, 2, 1, 8), randn(gen, 2, 1, 5), randn(gen, 2)), {"padding": 2}),
        Case("stride 3, padding 1, width 4", (randn(gen, 2, 3, 13), randn(gen, 2, 3, 4), randn(gen, 2)),
             {"stride": 3, "padding": 1}),
        Case("float64, 6 -> 4 channels", (randn(gen, 3, 6, 30, dtype=F64), randn(gen, 4, 6, 7, dtype=F64),
                                          randn(gen, 4, dtype=F64)), {"padding": 3}),
    ]


CONV1D = ExerciseSpec(
    id="cnn.conv1d",
    points=2,
    cases=conv1d_cases,
    reference=ref_conv1d,
    reference_source="torch.nn.functional.conv1d in float64",
    tolerance={F32: (1e-4, 1e-4)},
    forbidden=(CONVOLUTION,),
    depends=substitutes("conv2d"),
    mistakes=_conv_mistakes(1),
)

SPECS = (CONV2D, MAX_POOL2D, AVG_POOL2D, CONV1D)
