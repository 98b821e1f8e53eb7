"""The axis rules every figure follows, and their check.

A value axis is logarithmic only where what is drawn on it spans more than a decade
(:data:`DECADE`; symmetric-log from 0 where a value is 0 or below), else linear (a y axis from
0), so that a 7 % drift does not look like a collapse: :func:`decade_scale`, called after
drawing. An axis whose quantity is an integer (depth, epoch, dimension, width, batch size, ...)
is marked by :func:`integer_axis` and gets integer ticks only when the figure is saved
(:func:`apply_integer_ticks`). :func:`label_values` labels every plotted value of a measured
axis (a sweep's dimensions). :func:`axis_problems` finds what breaks these rules.
"""

from __future__ import annotations

import matplotlib.ticker as mticker
import numpy as np
from matplotlib.collections import PathCollection

LINEAR_THRESHOLD = 1e-4
DECADE = 10.0  # an axis is logarithmic where what it draws spans more than this factor
INTEGER = "_matcond_integer"  # the attribute integer_axis sets on an axis
# Table columns whose values are integers: an axis that draws one is marked (mark_integer).
INTEGER_COLUMNS = frozenset(
    {"depth", "layers", "layer", "epoch", "dim", "width", "batch_size", "seed", "step",
     "kernel_size", "filters", "index"}
)  # fmt: skip


class _SparseMinorLabels(mticker.LogFormatterSciNotation):
    """Matplotlib's minor labels of a log axis (it shows them where the axis spans a few
    decades at most), kept at 2 and 5 x 10^k where it spans more than one: 3, 4, 6 x 10^k
    crowd each other there. Within one decade every minor label stays (no major one shows),
    written plainly (16, not 1.6 x 10^1: four of those side by side overlap)."""

    def __call__(self, value, pos=None):
        low, high = sorted(self.axis.get_view_interval())
        mantissa = value / 10 ** np.floor(np.log10(value))
        if high > 10 * low:
            return super().__call__(value, pos) if round(mantissa) in (2, 5) else ""
        return f"{value:.3g}"


def sparse_log_labels(*axes) -> None:
    """Give log axes (``ax.xaxis``, ``ax.yaxis``) the minor labels of
    :class:`_SparseMinorLabels`."""
    for axis in axes:
        axis.set_minor_formatter(_SparseMinorLabels())


def _in_data(transform, ax, which: str) -> bool:
    """Whether coordinate ``which`` of an artist with ``transform`` is in data units (not the
    axes' fraction of an ``axhline``'s x or an ``axvline``'s y)."""
    return transform.contains_branch_seperately(ax.transData)["xy".index(which)]


def _own_values(ax, which: str) -> list[np.ndarray]:
    k = "xy".index(which)
    values = [
        np.asarray(line.get_xydata(), float).reshape(-1, 2)[:, k]
        for line in ax.lines
        if _in_data(line.get_transform(), ax, which)
    ]
    for collection in ax.collections:
        if isinstance(collection, PathCollection):  # points: their paths are marker shapes
            if _in_data(collection.get_offset_transform(), ax, which):
                values.append(np.asarray(collection.get_offsets(), float).reshape(-1, 2)[:, k])
        elif _in_data(collection.get_transform(), ax, which):
            values += [np.asarray(p.vertices, float)[:, k] for p in collection.get_paths()]
    return values


def drawn_values(ax, which: str = "y") -> np.ndarray:
    """The finite ``which`` ("x" or "y") values of what is drawn on ``ax`` and the axes that
    share that axis with it: lines, bands, whiskers and points (in data units)."""
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    values = [v for other in shared.get_siblings(ax) for v in _own_values(other, which)]
    values = np.concatenate(values) if values else np.array([])
    return values[np.isfinite(values)]


def spans_decades(values: np.ndarray) -> bool:
    """Whether the positive ``values`` span more than :data:`DECADE`."""
    positive = values[values > 0]
    return bool(positive.size) and positive.max() > DECADE * positive.min()


def decade_scale(ax, which: str = "y", base: float = 10) -> bool:
    """Call after drawing: make axis ``which`` logarithmic (``base``) where what is drawn on
    it spans more than :data:`DECADE` (symmetric-log from 0 where a value is 0 or below),
    else linear, a y axis from 0 (unless a value is negative). Returns whether it is log."""
    values = drawn_values(ax, which)
    set_scale = ax.set_xscale if which == "x" else ax.set_yscale
    axis = ax.xaxis if which == "x" else ax.yaxis
    if spans_decades(values):
        if (values <= 0).any():
            set_scale("symlog", linthresh=LINEAR_THRESHOLD, base=base)
            if which == "y":
                ax.set_ylim(bottom=0)
        else:
            set_scale("log", base=base)
            if base == 10:
                sparse_log_labels(axis)
        return True
    set_scale("linear")
    if which == "y" and not (values < 0).any():
        top = values.max(initial=0.0)
        ax.set_ylim(0, 1.1 * top if top > 0 else None)
    return False


def integer_axis(*axes) -> None:
    """Mark axes (``ax.xaxis``, ``ax.yaxis``) whose quantity is an integer: they get integer
    ticks only (:func:`apply_integer_ticks`, which :func:`matcond.figures.style.save` calls,
    whatever their scale by then)."""
    for axis in axes:
        setattr(axis, INTEGER, True)


def mark_integer(axis, column: str) -> None:
    """:func:`integer_axis` where table column ``column`` is in :data:`INTEGER_COLUMNS`."""
    if column in INTEGER_COLUMNS:
        integer_axis(axis)


def is_integer_axis(axis) -> bool:
    """Whether :func:`integer_axis` marked ``axis``."""
    return getattr(axis, INTEGER, False)


class _IntegerOnly(mticker.Formatter):
    """A formatter's labels of integer values only (a log axis's 0.5 or 1.5 is not a depth)."""

    def __init__(self, inner: mticker.Formatter):
        self.inner = inner

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def set_locs(self, locs):
        self.inner.set_locs(locs)

    def get_offset(self):
        return self.inner.get_offset()

    def __call__(self, value, pos=None):
        return self.inner(value, pos) if _is_integer(value) else ""


def _is_integer(value: float) -> bool:
    return bool(np.isfinite(value)) and abs(value - round(value)) < 1e-9 * max(1.0, abs(value))


def apply_integer_ticks(fig) -> None:
    """Give every axis that :func:`integer_axis` marked integer ticks: a linear axis's
    automatic ticks at integers, and no label of a non-integer tick on any other (ticks a
    figure placed itself stay)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not is_integer_axis(axis):
                continue
            if type(axis.get_major_locator()) is mticker.AutoLocator:
                axis.set_major_locator(
                    mticker.MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True)
                )
            for formatter, setter in (
                (axis.get_major_formatter(), axis.set_major_formatter),
                (axis.get_minor_formatter(), axis.set_minor_formatter),
            ):
                if not isinstance(formatter, (_IntegerOnly, mticker.FixedFormatter)):
                    setter(_IntegerOnly(formatter))


def label_values(axis, values, base: float | None = None) -> None:
    """Label every value of ``values`` (those plotted, e.g. a sweep's dimensions) on ``axis``,
    and nothing else; a power of ``base`` (a log axis's) as one (2^10, not 1024: seven
    dimensions' numbers side by side overlap)."""
    shown = sorted({float(v) for v in values if np.isfinite(v)})
    axis.set_ticks(shown, [_power_label(v, base) for v in shown])
    axis.set_minor_locator(mticker.NullLocator())


def _power_label(value: float, base: float | None) -> str:
    exponent = np.log(value) / np.log(base) if base and value > 0 else np.nan
    if np.isfinite(exponent) and _is_integer(exponent):
        return f"${base:g}^{{{round(exponent)}}}$"
    return f"{value:g}"


def sweep_axis(ax, values, base: float = 2) -> None:
    """Call after drawing: the x axis of a sweep over ``values`` (e.g. dimensions 32, 64, ...),
    logarithmic (``base``) where they span more than a decade, each value labelled."""
    label_values(ax.xaxis, values, base if decade_scale(ax, "x", base=base) else None)


def drawn_ticks(axis) -> list:
    """(location, tick) of the ticks an axis draws: those within its view interval (compared
    on the axis's scale, so that a log axis's slack is not decades wide)."""
    scale = axis.get_transform()
    low, high = sorted(scale.transform(np.asarray(axis.get_view_interval(), float)))
    slack = 1e-9 * (high - low)
    drawn = []
    for locs, ticks in (
        (axis.get_majorticklocs(), axis.get_major_ticks),
        (axis.get_minorticklocs(), axis.get_minor_ticks),
    ):
        with np.errstate(all="ignore"):
            places = scale.transform(np.asarray(locs, float))
        for loc, place, tick in zip(locs, places, ticks(len(locs)), strict=True):
            if low - slack <= place <= high + slack:
                drawn.append((float(loc), tick))
    return drawn


def axis_problems(fig) -> list[str]:
    """What breaks the axis rules, on a drawn figure: a log axis over what spans less than a
    decade, a non-integer tick label on an axis marked integer."""
    problems = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            values = drawn_values(ax, which)
            if axis.get_scale() == "log" and values[values > 0].size > 1:
                if not spans_decades(values):
                    problems.append(
                        f"{which} axis of {ax.get_title()!r} is log over less than a decade"
                    )
            if is_integer_axis(axis):
                fractional = [
                    loc
                    for loc, tick in drawn_ticks(axis)
                    if tick.label1.get_visible() and tick.label1.get_text()
                    if not _is_integer(loc)
                ]
                if fractional:
                    problems.append(
                        f"{which} axis of {ax.get_title()!r} (an integer) labels {fractional[0]:g}"
                    )
    return problems
