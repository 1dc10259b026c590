"""The cnn chapter, graded end to end: convolutions and pooling written with loops or unfold,
strides and padding included.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, independent
solutions) is tests/chapter_checks.py; here are the chapter's tables and what its cases must hold.
"""
from __future__ import annotations

from chapter_checks import AlternativeChecks, ChapterChecks, ForbiddenChecks, without_float64_case


# (exercise id, variant in tests/fixtures/mistakes/cnn.py, diagnosis the grader must give)
MISTAKES = [
    ("cnn.conv2d", "flipped", "kernel flipped (true convolution)"),
    ("cnn.conv2d", "corner_padding", "padding on one side only"),
    ("cnn.conv2d", "pad_end_only", "padding added at one end only"),
    ("cnn.conv2d", "size_off_by_one", "stride arithmetic off by one"),
    ("cnn.conv2d", "no_stride", "stride ignored"),
    ("cnn.conv2d", "forgot_bias", "bias ignored"),
    ("cnn.max_pool2d", "stride_one", "stride defaults to 1"),
    ("cnn.max_pool2d", "mean", "average instead of max"),
    ("cnn.max_pool2d", "zero_start", "running max started at 0"),
    ("cnn.max_pool2d", "ceil_windows", "partial windows kept"),
    ("cnn.avg_pool2d", "avg_stride_one", "stride defaults to 1"),
    ("cnn.avg_pool2d", "window_sum", "sum instead of mean"),
    ("cnn.avg_pool2d", "divide_by_k", "divided by k instead of k^2"),
    ("cnn.avg_pool2d", "window_max", "max instead of average"),
    ("cnn.avg_pool2d", "avg_ceil_windows", "partial windows kept"),
    ("cnn.conv1d", "flipped_1d", "kernel flipped (true convolution)"),
    ("cnn.conv1d", "end_padding_1d", "padding on one side only"),
    ("cnn.conv1d", "one_end_1d", "padding added at one end only"),
    ("cnn.conv1d", "short_1d", "stride arithmetic off by one"),
    ("cnn.conv1d", "no_stride_1d", "stride ignored"),
    ("cnn.conv1d", "no_bias_1d", "bias ignored"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("cnn.conv2d", "uses_f_conv2d", "static"),
    ("cnn.conv2d", "aten_convolution", "run"),                  # torch.ops.aten.convolution: ATen net
    ("cnn.max_pool2d", "uses_nn_maxpool", "static"),
    ("cnn.avg_pool2d", "getattr_avg_pool", "run"),
    ("cnn.conv1d", "uses_conv1d", "static"),
    ("cnn.conv1d", "numpy_correlate", "static"),                # NumPy's: a library convolution too
    ("cnn.conv1d", "numpy_correlate_by_name", "run"),
]


class TestCnn(ChapterChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN = "cnn", MISTAKES, FORBIDDEN


def test_cases_include_float64():
    missing = without_float64_case("cnn")
    assert not missing, f"no float64 case: {missing}"
