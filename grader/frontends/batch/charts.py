"""The class report's charts that need a plotting library: matplotlib figures (Agg, no pyplot
state) as base64 PNG data URIs, so the report is one self-contained file that opens offline.
What is a table (the student x exercise grid, pass rates, the modules' distributions) is HTML,
drawn by the template: readable at any width, sortable, linked."""
from __future__ import annotations

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

GREEN, RED, BLUE, INK = "#1f8a4c", "#c0392b", "#2b6cb0", "#1d2330"


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def score_histogram(scores: list[float], max_score: float) -> str:
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    top = max(max_score, max(scores, default=0.0), 1.0)
    if top <= 20:       # one bar per point, centred on it: 8 and 9 of 9 are told apart
        bins = [i - 0.5 for i in range(int(math.ceil(top)) + 2)]
    else:
        bins = [top * i / 20 for i in range(21)]
    ax.hist(scores, bins=bins, color=BLUE, edgecolor="white")
    ax.set_xlabel(f"score (out of {max_score:g})")
    ax.set_ylabel("students")
    ax.set_title(f"Scores of {len(scores)} students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _png(fig)


def performance(labels: list[str], ratios: list[list[float]], thresholds: list[float | None]) -> str:
    """One box (and its points) per timed check: student time / reference time, log scale."""
    fig = Figure(figsize=(7, 0.6 * len(labels) + 1.4))
    ax = fig.add_subplot()
    y = list(range(1, len(labels) + 1))[::-1]
    ax.boxplot(ratios, positions=y, orientation="horizontal", widths=0.5, showfliers=False)
    for yi, values, limit in zip(y, ratios, thresholds):
        ax.scatter(values, [yi] * len(values), s=10, alpha=0.5, color=BLUE)
        if limit:
            ax.plot([limit, limit], [yi - 0.35, yi + 0.35], color=RED, linestyle="--")
    ax.set_yticks(y, labels)
    ax.set_xscale("log")
    ax.set_xlabel("time ratio to the reference (lower is faster; dashed: the limit)")
    ax.set_title("Performance")
    return _png(fig)
