"""The layout check every saved figure goes through (:func:`layout_problems`): two texts
that overlap (rotated labels by their rotated boxes), a legend over the data, an axis
without a label, a labelled axis without tick labels; and what breaks the axis rules
(matcond.figures.axes.axis_problems: a log axis over less than a decade, a fractional tick
on an integer axis).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.transforms import Bbox

from matcond.figures.axes import axis_problems, drawn_ticks


def _drawn_ticklabels(axis) -> list:
    """The tick labels an axis draws: those of ticks within its view interval."""
    return [label for _, tick in drawn_ticks(axis) for label in (tick.label1, tick.label2)]


def _texts(fig: plt.Figure) -> list:
    """Every visible, non-empty text the figure draws: titles, axis and tick labels, legend
    entries, annotations, figure-level texts."""
    texts = [fig._suptitle, *fig.texts]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):
            texts += [axis.label, *_drawn_ticklabels(axis), axis.offsetText]
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    for legend in filter(None, legends):
        texts += [legend.get_title(), *legend.get_texts()]
    unique = {id(t): t for t in texts if t is not None}  # the suptitle is in fig.texts too
    return [t for t in unique.values() if t.get_visible() and t.get_text().strip()]


def _covers_data(ax, box) -> bool:
    """Whether display-space ``box`` covers a line vertex, scatter point, band vertex or bar
    of ``ax`` that lies within the axes."""
    points = [line.get_transform().transform(line.get_xydata()) for line in ax.lines]
    for c in ax.collections:
        if isinstance(c, PathCollection):
            points.append(c.get_offset_transform().transform(c.get_offsets()))
        else:
            points += [c.get_transform().transform(p.vertices) for p in c.get_paths()]
    stacked = [np.asarray(p, dtype=float).reshape(-1, 2) for p in points if len(p)]
    xy = np.concatenate(stacked) if stacked else np.empty((0, 2))
    area = ax.bbox.padded(-1)
    inside = (
        np.isfinite(xy).all(axis=1)
        & (xy[:, 0] >= area.x0)
        & (xy[:, 0] <= area.x1)
        & (xy[:, 1] >= area.y0)
        & (xy[:, 1] <= area.y1)
    )
    bars = [Bbox.intersection(p.get_window_extent(), area) for p in ax.patches]
    return bool(box.count_contains(xy[inside])) or any(
        bar is not None and bar.width > 0 and box.overlaps(bar) for bar in bars
    )


def _text_corners(text, renderer) -> np.ndarray:
    """The 4 display-space corners of a text's (possibly rotated) box, shrunk by half a pixel:
    recovered from its axis-aligned extent, width W = w cos t + h sin t and height
    H = w sin t + h cos t for a w x h box rotated by t (0 <= t < 45 or 45 < t <= 90 deg)."""
    box = text.get_window_extent(renderer)
    theta = np.deg2rad(text.get_rotation() % 180)
    c, s = abs(np.cos(theta)), abs(np.sin(theta))
    if abs(c - s) < 1e-3:  # 45 degrees: w and h are not determined, keep the extent
        c, s, theta = 1.0, 0.0, 0.0
    w = (box.width * c - box.height * s) / (c * c - s * s)
    h = (box.height * c - box.width * s) / (c * c - s * s)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [max(w - 1, 0), max(h - 1, 0)] / 2
    rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    return np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]) + half @ rotation.T


def _convex_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two convex polygons (corners in order) overlap (separating-axis test)."""
    for poly in (a, b):
        edges = np.roll(poly, -1, axis=0) - poly
        for normal in np.stack([-edges[:, 1], edges[:, 0]], axis=1):
            pa, pb = a @ normal, b @ normal
            if pa.max() <= pb.min() or pb.max() <= pa.min():
                return False
    return True


def layout_problems(fig: plt.Figure) -> list[str]:
    """What makes a figure unfit for a paper that its renderer can measure: two texts whose
    extents overlap, a legend over data points of its axes, an axis without a label (unless
    its tick labels are hidden too, as on the inner panels of a shared grid), a labelled
    axis without tick labels, and :func:`matcond.figures.axes.axis_problems`."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    shapes = [(t, _text_corners(t, renderer)) for t in _texts(fig)]
    problems = [
        f"text {a.get_text()!r} overlaps {b.get_text()!r}"
        for i, (a, corners_a) in enumerate(shapes)
        for b, corners_b in shapes[i + 1 :]
        if _convex_overlap(corners_a, corners_b)
    ]
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            box = legend.get_window_extent(renderer)
            twins = [o for o in fig.axes if o.bbox.bounds == ax.bbox.bounds]  # twinx too
            if any(_covers_data(other, box) for other in twins):
                problems.append(f"legend of {ax.get_title()!r} covers data")
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            drawn = [t for t in _drawn_ticklabels(axis) if t.get_visible() and t.get_text()]
            labelled = bool(axis.label.get_text().strip())
            if drawn and not labelled:
                problems.append(f"{name} axis of {ax.get_title()!r} has no label")
            if labelled and not drawn:
                problems.append(f"{name} axis of {ax.get_title()!r} has no tick labels")
    return problems + axis_problems(fig)
