"""The class report's charts: matplotlib figures (Agg, no pyplot state) as base64 PNG data URIs,
so the report is one self-contained file that opens offline."""
from __future__ import annotations

import base64
import io
import math

import matplotlib

matplotlib.use("Agg")
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

GREEN, RED, BLUE, INK = "#1f8a4c", "#c0392b", "#2b6cb0", "#1d2330"
HEATMAP_MAX_ROWS = 400           # students shown in the score heatmap (the lowest totals first)
_POINTS_MAP = LinearSegmentedColormap.from_list("points", [RED, "#f4d03f", GREEN])


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


def pass_rates(ids: list[str], rates: list[float]) -> str:
    fig = Figure(figsize=(7, 0.45 * len(ids) + 1.2))
    ax = fig.add_subplot()
    y = list(range(len(ids)))[::-1]
    ax.barh(y, [100 * r for r in rates], color=[GREEN if r >= 0.5 else RED for r in rates])
    ax.set_yticks(y, ids)
    ax.set_xlim(0, 100)
    ax.set_xlabel("students who passed every case (%)")
    for yi, r in zip(y, rates):
        ax.text(min(100 * r + 1, 92), yi, f"{100 * r:.0f}%", va="center", fontsize=9, color=INK)
    ax.set_title("Pass rate per exercise")
    return _png(fig)


def score_heatmap(students: list[str], ids: list[str], fractions: list[list[float]]) -> str:
    """Students (rows) by exercises (columns), coloured by the fraction of points earned."""
    rows = len(students)
    fig = Figure(figsize=(max(4.0, 0.9 * len(ids) + 2.5), min(0.18 * rows + 1.8, 9.0)))
    ax = fig.add_subplot()
    image = ax.imshow(fractions, aspect="auto", cmap=_POINTS_MAP, vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks(range(len(ids)), [i.split(".", 1)[-1] for i in ids], rotation=30, ha="right")
    if rows <= 60:
        ax.set_yticks(range(rows), students, fontsize=7)
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{rows} students, lowest totals first")
    fig.colorbar(image, ax=ax, label="fraction of points", fraction=0.05)
    ax.set_title("Points per student and exercise")
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
