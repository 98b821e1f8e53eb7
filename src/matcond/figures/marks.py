"""The papers' values on a figure: marked where the figure draws the point they are about
(:func:`mark_paper`), with the band where a mean of the paper's number of our trials falls,
and the legends that name them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from matcond.figures.style import PAPER_THRESHOLD, PAPER_VALUES, Tables

# How each source of a paper's value is marked and named in the legend (the condition-number
# paper, its slides and its review report means; the figures draw the headline statistic).
PAPER_MARKS = {
    "paper": ("*", "paper's value (its mean)"),
    "slides": ("X", "paper's slides (their mean)"),
    "peer review": ("P", "peer review's value (mean)"),
    "GN paper": ("*", "GN paper's value"),
}
# Beside a paper's mean: the values its verdict accepts as a mean of as many of our trials
# (matcond.jobs.plot.with_accepted_values).
OURS_BAND_LABEL = "ours: values consistent with\nmeans of the paper's number of trials"
# The columns of a paper's value that are not its filter (matcond.claims.check.paper_values).
MARK_COLUMNS = ("table", "source", "low", "high", "field", "claim", "pool", "paper_n")
MARK_COLUMNS += ("ours_low", "ours_high")


def paper_rows(tables: Tables, names, field: str | None = "error") -> pd.DataFrame:
    """The papers' values on the tables ``names`` about column ``field`` (``None``: any),
    the paper's effective-rank threshold named as in :func:`product_rows`."""
    paper = tables.get(PAPER_VALUES)
    if paper is None or paper.empty:
        return pd.DataFrame()
    paper = paper[paper["table"].isin(list(names))]
    if field is not None:
        paper = paper[paper["field"] == field]
    if "component" in paper:
        paper = paper.assign(
            component=paper["component"].replace(PAPER_THRESHOLD, "effective_rank")
        )
    return paper


def _same(a, b) -> bool:
    """Two cells of a filter and a table are the same setting (numbers by value)."""
    if isinstance(a, str) or isinstance(b, str):
        return str(a) == str(b)
    return bool(np.isclose(float(a), float(b)))


def mark_paper(ax, paper: pd.DataFrame, rows: pd.DataFrame, x: str) -> bool:
    """Mark each paper's value (rows of :func:`paper_rows`) at the drawn point it is about: a
    black star (a '+' for the peer review), a vertical line for a range; behind it, where the
    row has one, a grey bar from ``ours_low`` to ``ours_high`` (:data:`OURS_BAND_LABEL`).
    ``rows`` are the drawn rows with their x coordinate in column ``x``; a value is about the
    rows that match every key of its filter (no epoch: the last drawn), and is marked where
    those rows share one x. Returns whether a value was marked."""
    marked = False
    keys = [k for k in paper.columns if k not in MARK_COLUMNS]
    for _, value in paper.iterrows():
        where = {k: value[k] for k in keys if pd.notna(value[k])}
        match = rows
        if "epoch" in rows and "epoch" not in where:
            match = match[match["epoch"] == rows["epoch"].max()]
        if not set(where) <= set(rows.columns):
            continue
        for key, setting in where.items():
            match = match[np.array([_same(cell, setting) for cell in match[key]], dtype=bool)]
        positions = match[x].unique()
        if len(positions) != 1:
            continue
        marker, label = PAPER_MARKS[value["source"]]
        labels = ax.get_legend_handles_labels()[1]
        if label in labels:
            label = None
        ours = [value.get("ours_low", np.nan), value.get("ours_high", np.nan)]
        if np.isfinite(np.asarray(ours, dtype=float)).all():
            ax.plot(
                [positions[0]] * 2,
                ours,
                color="0.45",
                alpha=0.45,
                linewidth=7,
                solid_capstyle="butt",
                zorder=5,
                label=None if OURS_BAND_LABEL in labels else OURS_BAND_LABEL,
            )
        ax.plot(
            [positions[0]] * 2,
            [value["low"], value["high"]],
            color="black",
            marker=marker if value["low"] == value["high"] else "_",
            markersize=9 if value["low"] == value["high"] else 14,
            markerfacecolor="none",
            markeredgewidth=1.5,
            linestyle="-",
            linewidth=2,
            zorder=6,
            label=label,
        )
        marked = True
    return marked


def legend_entries(axes, only=None) -> tuple[list, list]:
    """The labelled handles of ``axes``, each label once, in order (only the labels in
    ``only`` where given)."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if only is None or label in only:
                entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def paper_legend(fig: plt.Figure, axes) -> None:
    """A legend below the panels naming each kind of paper's value marked on ``axes`` (none if
    none is)."""
    marks = {label for _, label in PAPER_MARKS.values()} | {OURS_BAND_LABEL}
    handles, labels = legend_entries(axes, only=marks)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=3)


def legend_outside(ax, **kw) -> None:
    """A legend beside the axes, off the data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)
