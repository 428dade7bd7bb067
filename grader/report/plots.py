"""The report's charts, drawn by matplotlib (the `report` extra) as SVG images inside the page.

Each chart becomes a data: URI for an <img>: the page stays one self-contained file, and an SVG
shown as an image can run no script whatever text it holds. Without matplotlib every function
returns a Plot with no image and the reason, and the page shows its tables alone.
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Mapping, Sequence

INSTALL_HINT = "pip install 'kernel-grader[report]'"
_SUBMISSION, _REFERENCE, _BASELINE, _OTHER = "#d9480f", "#1c7ed6", "#868e96", "#495057"
_FONT_SIZE = 9
MAX_LABEL = 40  # characters of a category's name on a chart's axis


@dataclass(frozen=True)
class Plot:
    """One chart: the image as a data: URI (None when it could not be drawn), its text
    alternative, and why it is missing."""

    uri: str | None
    alt: str
    missing: str = ""


def number(value: float) -> str:
    """1,450 for a count, 0.1234 for a time: what a bar's label and the alt text show."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def available() -> str:
    """"" when matplotlib can draw, else why not."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"matplotlib is not installed, so the page has no charts ({INSTALL_HINT} adds them)"
    return ""


def preload() -> None:
    """Import the plotting library now, where it is installed (about 0.6 CPU-seconds), so that the
    first chart does not wait for it."""
    if not available():
        _pyplot()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)  # no display: draw to files only
    import matplotlib.pyplot as plt

    return plt


def _figure(width: float, height: float, left_labels: Sequence[str] | None = None):
    """A figure of one axes. With `left_labels` (a chart whose y axis names categories) its margins are
    set from those labels' measured width; otherwise constrained layout places everything. That
    layout measures every artist before the real drawing: it was half of a bar chart's time, and a
    class's pages are mostly bar charts."""
    plt = _pyplot()
    with plt.rc_context({"svg.fonttype": "none", "font.size": _FONT_SIZE, "svg.hashsalt": "kernel-grader"}):
        fig, ax = plt.subplots(figsize=(width, height), layout=None if left_labels is not None else "constrained")
    if left_labels is not None:
        _leave_room(fig, left_labels)
    return plt, fig, ax


def _labels(names: Sequence[str]) -> list[str]:
    """Category names as a chart's axis shows them: at most MAX_LABEL characters (the alt text and
    the table beside the chart give them whole)."""
    return [n if len(n) <= MAX_LABEL else n[:MAX_LABEL - 1] + "\u2026" for n in map(str, names)]


def _leave_room(fig, labels: Sequence[str]) -> None:
    """Margins, in inches, for the labels on the left, a title above and the x axis's ticks and label
    below (one line each)."""
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=_FONT_SIZE)
    widest = max((renderer.get_text_width_height_descent(str(label), font, ismath=False)[0] for label in labels),
                 default=0.0) / fig.dpi
    width, height = fig.get_size_inches()
    left = min(widest + 0.25, width * 0.6)  # labels are at most MAX_LABEL characters (_labels)
    fig.subplots_adjust(left=left / width, right=1 - 0.2 / width, top=1 - 0.35 / height, bottom=0.5 / height)


def _finish(plt, fig, alt: str) -> Plot:
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kernel-grader"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    data = base64.b64encode(buf.getvalue().encode("utf-8")).decode("ascii")
    return Plot("data:image/svg+xml;base64," + data, alt)


def bars(title: str, categories: Sequence[str], series: Mapping[str, Sequence[float]], unit: str) -> Plot:
    """Grouped horizontal bars: one group per category, one bar per series (submission, reference...)."""
    alt = f"{title}: " + "; ".join(f"{c}: " + ", ".join(f"{name} {number(values[i])}" for name, values in series.items())
                                   for i, c in enumerate(categories))
    why = available()
    if why:
        return Plot(None, alt, why)
    labels = _labels(categories)
    plt, fig, ax = _figure(6.0, 0.5 + 0.45 * len(categories) * max(len(series), 1), left_labels=labels)
    colors = {"submission": _SUBMISSION, "reference": _REFERENCE, "baseline": _BASELINE}
    height = 0.8 / max(len(series), 1)
    for k, (name, values) in enumerate(series.items()):
        ys = [i + (k - (len(series) - 1) / 2) * height for i in range(len(categories))]
        drawn = ax.barh(ys, values, height=height * 0.9, label=name, color=colors.get(name, _OTHER))
        ax.bar_label(drawn, labels=[number(v) for v in values], padding=3, fontsize=8)
    ax.set_yticks(range(len(categories)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=10)
    ax.margins(x=0.18)
    ax.legend(loc="lower right", fontsize=8)
    return _finish(plt, fig, alt)


def histogram(title: str, values: Sequence[float], top: float, bins: int = 10) -> Plot:
    """How many values fall in each of `bins` equal bands from 0 to `top`."""
    alt = f"{title}: {len(values)} values from 0 to {top:g}"
    why = available()
    if why:
        return Plot(None, alt, why)
    plt, fig, ax = _figure(6.0, 2.6)
    edges = [top * i / bins for i in range(bins + 1)] if top > 0 else bins
    ax.hist(values, bins=edges, color=_SUBMISSION, edgecolor="white")
    ax.set_xlabel("score")
    ax.set_ylabel("submissions")
    ax.set_title(title, fontsize=10)
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _finish(plt, fig, alt)


def rates(title: str, names: Sequence[str], fractions: Sequence[float]) -> Plot:
    """One horizontal bar per name: the fraction (0..1) shown as a percentage."""
    alt = f"{title}: " + "; ".join(f"{n} {f:.0%}" for n, f in zip(names, fractions))
    why = available()
    if why:
        return Plot(None, alt, why)
    labels = _labels(names)
    plt, fig, ax = _figure(6.0, 0.6 + 0.32 * len(names), left_labels=labels)
    drawn = ax.barh(range(len(names)), [100 * f for f in fractions], color=_REFERENCE)
    ax.bar_label(drawn, labels=[f"{f:.0%}" for f in fractions], padding=3, fontsize=8)
    ax.set_yticks(range(len(names)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xlabel("passed (%)")
    ax.set_title(title, fontsize=10)
    return _finish(plt, fig, alt)


def scatter(title: str, points: Sequence[tuple[float, float]], reference: tuple[float, float] | None,
            xlabel: str, ylabel: str) -> Plot:
    """Submissions as dots, the reference solution as a marked point (no student names: the table
    beside the chart has them)."""
    alt = f"{title}: {len(points)} submissions" + (f"; reference at {number(reference[0])}, {number(reference[1])}" if reference else "")
    why = available()
    if why:
        return Plot(None, alt, why)
    plt, fig, ax = _figure(6.0, 3.6)
    if points:
        ax.scatter([p[0] for p in points], [p[1] for p in points], color=_SUBMISSION, alpha=0.7, label="submissions")
    if reference:
        ax.scatter([reference[0]], [reference[1]], color=_REFERENCE, marker="*", s=220, label="reference", zorder=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _finish(plt, fig, alt)
