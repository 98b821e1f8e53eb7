"""What every figure shares: saving, axes, lines and bars of a statistic with its interval.

Statistics come from the experiment tables (matcond.stats.summary): each row has the component's
headline statistic (``estimate``: the median for heavy-tailed components, the mean for norms)
and its 95 % bootstrap interval (``ci_low``, ``ci_high``), never a mean ± std band; a
statistic is a point or line with its interval, never a bar (a bar's length means nothing on a
log axis). An error axis is logarithmic where what is drawn spans more than a decade
(symmetric-log from 0, linear below 1e-4, where a value is exactly zero), else linear from 0,
so that a 7 % drift does not look like a collapse. Intervals over fewer than
:data:`MIN_INTERVAL_N` values are not drawn: the values themselves are. The papers' values
(:data:`PAPER_VALUES`) are marked where a figure draws the point they are about. Every figure
states n in its title.
"""

from __future__ import annotations

import io
import math
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import PIL.Image  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from matcond.figures.axes import apply_integer_ticks, decade_scale, mark_integer  # noqa: E402
from matcond.figures.layout import layout_problems  # noqa: E402
from matcond.stats.summary import bootstrap_ci  # noqa: E402

# The paper's eight components (effective rank at threshold 0.01) with their plot labels.
PAPER_COMPONENTS = {
    "row_norms": "row norms",
    "col_norms": "column norms",
    "singular_values": "singular values",
    "condition_number": "condition number",
    "effective_rank": "effective rank",
    "spectral_gap": "spectral gap",
    "frobenius_norm": "Frobenius norm",
    "overall": "overall matrix",
}
PAPER_THRESHOLD = "effective_rank_t0.01"
MIN_INTERVAL_N = 5  # fewer values than this get their points drawn, not a 95 % interval
# The tables' key of the papers' values a figure marks (matcond.claims.check.paper_values).
PAPER_VALUES = "paper_values"
ERROR_LABEL = "relative error\n(median or mean, 95% CI)"
DPI = 130
Tables = dict[str, pd.DataFrame]


def product_rows(table: pd.DataFrame, epoch: str = "last") -> pd.DataFrame:
    """Rows of the product matrix, at the last recorded epoch (or all epochs with ``epoch="all"``).

    The paper's effective-rank threshold (0.01, else the first one) is renamed ``effective_rank``.
    """
    rows = table[table["matrix"] == "product"]
    if epoch == "last":
        rows = rows[rows["epoch"] == rows["epoch"].max()]
    ranks = sorted(c for c in rows["component"].unique() if c.startswith("effective_rank_t"))
    if ranks:
        chosen = PAPER_THRESHOLD if PAPER_THRESHOLD in ranks else ranks[0]
        rows = rows.assign(component=rows["component"].replace(chosen, "effective_rank"))
    return rows


def n_label(rows: pd.DataFrame) -> str:
    """'n = 10 trials per point' (a range if it varies, and the diverged ones)."""
    trials = rows["n"] + rows["n_nonfinite"]  # trials that did not diverge
    lo, hi = int(trials.min()), int(trials.max())
    n = f"n = {lo}" if lo == hi else f"n = {lo}-{hi}"
    diverged = int(rows["n_diverged"].max())
    return n + (f", up to {diverged} diverged" if diverged else "") + " trials per point"


def error_axis(ax, label: str = ERROR_LABEL) -> None:
    """Call after drawing: a log axis where what is drawn spans more than a decade
    (symmetric-log from 0 where a value is 0 or below), else a linear axis from 0
    (:func:`matcond.figures.axes.decade_scale`)."""
    decade_scale(ax, "y")
    ax.set_ylabel(label)


def save(fig: plt.Figure, png: str, pdf: str) -> None:
    """Write the figure as PNG (for the report) and PDF (for papers, no timestamp) and close
    it; print what :func:`layout_problems` finds (to the job's log). Axes marked integer get
    their integer ticks first (:func:`matcond.figures.axes.apply_integer_ticks`).

    The check's draw lays the figure out and renders it at :data:`DPI` (the figure's own dpi,
    see :func:`figure`): the PNG is that image cropped to the tight bounding box (what
    ``bbox_inches="tight"`` would find), and the PDF keeps that layout and box, so the figure
    is laid out once and drawn twice (PNG and PDF) instead of 5 times. The layout engine is
    then removed (``None``; ``"none"`` leaves a placeholder engine, for which ``savefig`` draws
    the figure once more before it writes).
    """
    apply_integer_ticks(fig)
    for problem in layout_problems(fig):
        print(f"layout: {problem}", file=sys.stderr)
    tight = fig.get_tightbbox(fig.canvas.get_renderer())
    bbox = tight.padded(plt.rcParams["savefig.pad_inches"])
    with plt.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)  # what these rcParams would otherwise put in its place
    _write_drawn_png(fig, tight, bbox, png)
    fig.savefig(pdf, bbox_inches=bbox, metadata={"CreationDate": None})
    plt.close(fig)


def _write_drawn_png(fig: plt.Figure, tight: Bbox, bbox: Bbox, path: str) -> None:
    """The figure as its canvas last drew it, cut to ``bbox`` (inches; what lies beyond the
    canvas is the figure's background), as a PNG. Drawn again by ``savefig`` where an artist
    reaches beyond the canvas (``tight``, the artists' box, is not inside it)."""
    image = np.asarray(fig.canvas.buffer_rgba())
    height, width = image.shape[:2]
    x0, y0, x1, y1 = tight.extents * fig.dpi  # display pixels, origin at the bottom left
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height or fig.dpi != DPI:
        fig.savefig(path, dpi=DPI, bbox_inches=bbox)
        return
    x0, y0, x1, y1 = bbox.extents * fig.dpi
    left, top = math.floor(x0), math.floor(height - y1)
    size = (math.ceil(x1) - left, math.ceil(height - y0) - top)
    background = tuple(round(255 * c) for c in fig.get_facecolor())
    png = PIL.Image.new("RGBA", size, background)
    png.paste(PIL.Image.fromarray(image), (-left, -top))
    png.save(path, dpi=(DPI, DPI))


def warm_up() -> None:
    """Draw one small figure in the house style (log axis, mathtext, legend) and write it as
    PNG and PDF to memory: fills the caches a process fills on its first figure (fonts, the
    mathtext parser). The job server calls it once, so that every plot job forked from it
    starts with them."""
    fig, axes = figure(2, width=3.0, height=2.0)
    for ax in axes.flat:
        ax.semilogy([1, 2, 3], [1e-3, 1e-1, 10.0], label=r"median $\kappa$")
        ax.set(xlabel=r"epoch $t$", ylabel="error", title="warm-up")
        ax.legend()
    fig.suptitle("warm-up")
    for fmt in ("png", "pdf"):
        fig.savefig(io.BytesIO(), format=fmt, dpi=DPI)
    plt.close(fig)


def plain(text: object) -> str:
    """``text`` (anyone's: a layer's or a file's name) as matplotlib shows it, itself: every
    ``$`` escaped so that mathtext never parses it, and a leading ``_`` (which hides a legend
    entry) behind a zero-width space."""
    shown = str(text).replace("$", r"\$")
    return "\u200b" + shown if shown.startswith("_") else shown


def figure(ncols: int = 1, width: float = 7.0, nrows: int = 1, height: float = 4.5):
    """A grid of axes (always 2-D) in the house style."""
    sns.set_theme(style="whitegrid")
    return plt.subplots(
        nrows,
        ncols,
        figsize=(width * ncols, height * nrows),
        dpi=DPI,
        squeeze=False,
        layout="constrained",
    )


def palette(n: int) -> list:
    """``n`` distinct colours (at least one)."""
    return sns.color_palette("tab10", max(n, 1))


def interval_line(ax, x, estimate, low, high, color, label: str | None = None, **style) -> None:
    """A line of estimates with its interval as a band."""
    ax.plot(x, estimate, color=color, label=label, **style)
    ax.fill_between(x, low, high, color=color, alpha=0.15, linewidth=0)


def whiskers(ax, x, estimate, low, high, capsize: float = 3, **style) -> None:
    """Estimates as points, their intervals as whiskers (none where an end is missing)."""
    estimate = np.asarray(estimate, dtype=float)
    yerr = np.vstack([estimate - np.asarray(low, float), np.asarray(high, float) - estimate])
    yerr = np.nan_to_num(np.clip(yerr, 0, None))
    ax.errorbar(x, estimate, yerr=yerr, fmt="o", capsize=capsize, **style)


def median_line(
    ax, rows: pd.DataFrame, x: str, column: str, color, label: str, band: bool = True, **style
) -> None:
    """The median of ``column`` over the rows (seeds) at each value of ``x``, with its 95 %
    bootstrap interval as a band, or, where a value of ``x`` has fewer than
    :data:`MIN_INTERVAL_N` rows, those rows' values as points (for tables with one row per
    trial, e.g. the GN sweeps). NaN values (a κ that does not exist, e.g. of a zero GN matrix)
    are left out."""
    mark_integer(ax.xaxis, x)
    rows = rows[rows[column].notna()]
    groups = [(value, part[column].to_numpy(float)) for value, part in rows.groupby(x)]
    xs = [value for value, _ in groups]
    estimate = [np.median(values) for _, values in groups]
    ax.plot(xs, estimate, color=color, label=label or None, **style)
    mark_unreliable(ax, rows, x, column)
    if not band:
        return
    few = rows.groupby(x)[column].transform("size") < MIN_INTERVAL_N
    if few.any():
        ax.scatter(rows.loc[few, x], rows.loc[few, column], color=color, s=8, alpha=0.5)
    intervals = [
        bootstrap_ci([values], np.median) if len(values) >= MIN_INTERVAL_N else (np.nan, np.nan)
        for _, values in groups
    ]
    low, high = (np.array([ci[k] for ci in intervals], dtype=float) for k in (0, 1))
    ax.fill_between(xs, low, high, color=color, alpha=0.15, linewidth=0)


def spread_label(rows: pd.DataFrame) -> str:
    """What a figure's bands are: a 95 % interval, or the values themselves (fewer than
    :data:`MIN_INTERVAL_N` seeds per point)."""
    if rows["seed"].nunique() >= MIN_INTERVAL_N:
        return "median, 95% CI"
    return "median and each seed"


def mark_unreliable(ax, rows: pd.DataFrame, x: str, column: str) -> None:
    """Red crosses on the values of ``column`` whose exact κ is flagged as unreliable
    (column ``reliable`` of the GN tables), so that no doubtful κ passes for a clean one."""
    if "reliable" not in rows or column != "kappa":
        return
    doubtful = rows[~rows["reliable"].astype(bool)]
    doubtful = doubtful[np.isfinite(doubtful[column].to_numpy(float))]
    if len(doubtful):
        ax.scatter(
            doubtful[x],
            doubtful[column],
            marker="x",
            color="red",
            s=30,
            zorder=5,
            label="unreliable κ (flagged)",
        )


def lines(ax, rows: pd.DataFrame, x: str, components: dict[str, str], **style) -> None:
    """Each component's headline statistic with its interval against column ``x``; markers
    (one shape per component) only where there are few points (a marker per epoch of a long
    run would bury the line)."""
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    mark_integer(ax.xaxis, x)
    if rows[x].nunique() > 30:
        style = {"marker": None, **style}
    for i, (color, (component, label)) in enumerate(
        zip(palette(len(components)), components.items(), strict=False)
    ):
        part = rows[rows["component"] == component].sort_values(x)
        if part.empty:
            continue
        interval_line(
            ax,
            part[x],
            part["estimate"],
            part["ci_low"],
            part["ci_high"],
            color,
            label,
            **{"marker": markers[i % len(markers)], **style},
        )


def grouped_lines(ax, rows: pd.DataFrame, x: str, by: str, label=str) -> None:
    """One line of the headline statistic with its interval per value of column ``by``."""
    mark_integer(ax.xaxis, x)
    values = list(dict.fromkeys(rows.sort_values(by)[by]))
    for color, value in zip(palette(len(values)), values, strict=True):
        one = rows[rows[by] == value].sort_values(x)
        interval_line(
            ax,
            one[x],
            one["estimate"],
            one["ci_low"],
            one["ci_high"],
            color,
            label(value),
            marker="o",
        )


def interval_points(
    ax, rows: pd.DataFrame, x: str, groups: dict, hue: str | None = None, labels: dict | None = None
) -> pd.DataFrame:
    """The headline statistic with its interval as points with whiskers: one tick per value of
    column ``x`` (the keys of ``groups``, in that order, labelled by its values), one point per
    value of column ``hue`` there (side by side, a colour each; one point without ``hue``).
    Returns the drawn rows with their x coordinate (column ``position``), for
    :func:`mark_paper`. Call :func:`error_axis` after."""
    hues = list(dict.fromkeys(rows[hue])) if hue else [None]
    width = 0.8 / len(hues)
    ticks = {value: k for k, value in enumerate(groups)}
    drawn = []
    for color, (i, value) in zip(palette(len(hues)), enumerate(hues), strict=False):
        part = rows[rows[x].isin(list(groups))]
        part = part[part[hue] == value] if hue else part
        part = part.assign(position=part[x].map(ticks) + (i - (len(hues) - 1) / 2) * width)
        whiskers(
            ax,
            part["position"],
            part["estimate"],
            part["ci_low"],
            part["ci_high"],
            capsize=2,
            color=color if hue else "C0",
            label=(labels or {}).get(value, value) if hue else None,
        )
        drawn.append(part)
    ax.set_xticks(range(len(groups)), list(groups.values()), rotation=30, ha="right")
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_xlabel(x.replace("_", " "))
    return pd.concat(drawn, ignore_index=True)
