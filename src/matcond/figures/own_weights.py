"""The figures of analysed weights (matcond.own_weights): the spectra of a checkpoint's
matrices, a panel per layer type, and for a folder of checkpoints each matrix's condition
number along the run (:func:`plot_own_weights`); and a panel per matrix with its name
(:func:`plot_layer_spectra`). Both name the checkpoint they draw, and neither draws a singular
value at numerical zero (:func:`drawn_singular_values`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd

from matcond.figures.axes import decade_scale, integer_axis
from matcond.figures.style import figure, palette, plain, save

EPS = np.finfo(np.float64).eps  # the spectra are computed in float64
ZERO_NOTE = r"$s_i < s_1\,\epsilon\,\max(m, n)$ (numerical zero) not drawn"
PRODUCTS = ("attention_qk", "attention_ov")  # per-head products: rank <= head size of d x d
MAX_LEGEND = 8  # lines a panel names in a legend; beyond, a colorbar names some of them
# Panels of the per-layer figure: beyond these the figure says how many it leaves out.
MAX_PANELS = 48


def drawn_singular_values(s: np.ndarray, largest_dimension: int) -> np.ndarray:
    """``s`` with the values at numerical zero (below s_1 eps max(m, n), the tolerance of
    ``numpy.linalg.matrix_rank`` and WeightWatcher's ``matrix_rank``) as NaN: on a log axis
    they would be rounding noise, down to 1e-20 for a rank-64 product of 768 x 768."""
    s = np.asarray(s, dtype=np.float64)
    cut = (s[0] if s.size else 0.0) * EPS * max(largest_dimension, s.size)
    return np.where((s > cut) & (s > 0), s, np.nan)


def _checkpoint_rows(table: pd.DataFrame, checkpoint: str | None) -> pd.DataFrame:
    """The rows of ``checkpoint`` (every row when the table has no such column)."""
    if checkpoint is None or "checkpoint" not in table:
        return table
    return table[table["checkpoint"] == checkpoint]


def _drawn(
    spectra: Mapping[str, np.ndarray], rows: pd.DataFrame
) -> tuple[dict[str, np.ndarray], int]:
    """Each matrix's drawn singular values (:func:`drawn_singular_values`, with max(m, n) from
    the table's ``rows`` and ``cols``, else the spectrum's length) and how many were left out."""
    sizes = {}
    if {"layer", "rows", "cols"} <= set(rows.columns):
        sizes = dict(zip(rows["layer"], np.maximum(rows["rows"], rows["cols"]), strict=True))
    drawn = {
        name: drawn_singular_values(s, int(sizes.get(name, s.size))) for name, s in spectra.items()
    }
    left = sum(int(np.isnan(d).sum()) for d in drawn.values())
    return drawn, left


def _affixes(names: Sequence[str]) -> tuple[str, str]:
    """The prefix and suffix, whole dot-separated parts, that all ``names`` share (no more
    than leaves each name a part of its own)."""
    if len(names) < 2:
        return "", ""
    parts = [n.split(".") for n in names]
    shortest = min(len(p) for p in parts) - 1
    front = next((i for i in range(shortest) if len({p[i] for p in parts}) > 1), shortest)
    back = next(
        (i for i in range(shortest - front) if len({p[-1 - i] for p in parts}) > 1),
        shortest - front,
    )
    prefix = ".".join(parts[0][:front]) + "." * bool(front)
    suffix = "." * bool(back) + ".".join(parts[0][len(parts[0]) - back :])
    return prefix, suffix


def _named_lines(ax, fig, series: Mapping[str, tuple]) -> None:
    """One line per entry (x, y), coloured in order; named in a legend (up to MAX_LEGEND) or
    on a colorbar, each by what its name does not share with the others (the shared part,
    ``*`` for the rest, is the legend's or colorbar's title)."""
    names = list(series)
    prefix, suffix = _affixes(names)
    short = [n[len(prefix) : len(n) - len(suffix)] for n in names]
    template = f"{prefix}*{suffix}" if prefix or suffix else "layer"
    colors = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, max(len(names), 1)))
    for (x, y), label, color in zip(series.values(), short, colors, strict=False):
        ax.plot(x, y, color=color, lw=1.1, label=plain(label), marker="o" if len(x) < 12 else None)
    if len(names) <= MAX_LEGEND:
        ax.legend(fontsize=6, title=plain(template), title_fontsize=6, loc="best")
        return
    norm = matplotlib.colors.Normalize(0, len(names) - 1)
    bar = fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax)
    ticks = np.unique(np.linspace(0, len(names) - 1, min(len(names), 6)).round().astype(int))
    bar.set_ticks(ticks, labels=[plain(short[i]) for i in ticks], fontsize=6)
    bar.set_label(plain(template) + " (file order)", fontsize=7)


def _types(rows: pd.DataFrame, names: Sequence[str]) -> dict[str, list[str]]:
    """``names`` by layer type (the table's; ``other`` where it has none), the per-head
    products last."""
    known = (
        dict(zip(rows["layer"], rows["layer_type"], strict=True)) if "layer_type" in rows else {}
    )
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(known.get(name, "other"), []).append(name)
    return dict(sorted(groups.items(), key=lambda g: g[0] in PRODUCTS))


def _run_panel(ax, table: pd.DataFrame, checkpoints: list[str], title: str) -> None:
    """Each weight matrix's condition number against the step (the checkpoint's order when a
    name holds no step), coloured by layer type; the per-head products (kappa inf) left out."""
    rows = table[~table["layer_type"].isin(PRODUCTS)] if "layer_type" in table else table
    order = {name: i for i, name in enumerate(checkpoints)}
    x = rows["step"].astype("float64").fillna(rows["checkpoint"].map(order))
    kinds = list(dict.fromkeys(rows.get("layer_type", pd.Series("other", rows.index))))
    colors = dict(zip(kinds, palette(len(kinds)), strict=False))
    for _, one in rows.groupby("layer", sort=False):
        kind = one["layer_type"].iloc[0] if "layer_type" in one else "other"
        ax.plot(x[one.index], one["condition_number"], color=colors[kind], lw=1.1, marker="o")
    for kind in kinds:
        ax.plot([], [], color=colors[kind], label=plain(kind))
    ax.legend(fontsize=6, loc="best")
    decade_scale(ax)
    integer_axis(ax.xaxis)
    ax.set_xlabel("checkpoint (order)" if rows["step"].isna().any() else "step")
    ax.set_ylabel(r"condition number $\kappa$")
    ax.set_title(
        f"{plain(title)}: condition number along {len(checkpoints)} checkpoints\n"
        "(per-head products, of kappa inf, left out)",
        fontsize=8,
    )


def plot_own_weights(
    table: pd.DataFrame,
    spectra: Mapping[str, Mapping[str, np.ndarray]],
    title: str,
    png: str,
    pdf: str,
) -> None:
    """The singular values s_i against i (numerical zeros not drawn; log y over more than a
    decade, :func:`~matcond.figures.axes.decade_scale`) of every matrix of
    the last checkpoint, a panel per layer type (the per-head products in their own), each line
    named in a legend or on a colorbar; and, when there are several checkpoints, a panel of each
    matrix's condition number against the step. The title names the checkpoint drawn."""
    checkpoints = list(spectra)
    checkpoint = checkpoints[-1] if checkpoints else None
    last = spectra[checkpoint] if checkpoints else {}
    rows = _checkpoint_rows(table, checkpoint)
    drawn, left = _drawn(last, rows)
    groups = _types(rows, list(drawn))
    cells = max(len(groups), 1) + (len(checkpoints) > 1)
    ncols = min(cells, 3)
    fig, axes = figure(ncols=ncols, nrows=-(-cells // ncols), width=4.2, height=3.4)
    flat = list(axes.flat)
    for ax, (kind, names) in zip(flat, groups.items(), strict=False):
        _named_lines(ax, fig, {n: (np.arange(1, drawn[n].size + 1), drawn[n]) for n in names})
        decade_scale(ax)
        integer_axis(ax.xaxis)
        ax.set_xlabel("index i")
        ax.set_ylabel("singular value $s_i$")
        many = "matrix" if len(names) == 1 else "matrices"
        ax.set_title(f"{plain(kind)}: {len(names)} {many}", fontsize=8)
    if not groups:
        flat[0].text(0.5, 0.5, "no 2-D weights", ha="center", va="center")
    if len(checkpoints) > 1:
        _run_panel(flat[len(groups)], table, checkpoints, title)
    for ax in flat[max(len(groups), 1) + (len(checkpoints) > 1) :]:
        ax.set_visible(False)
    zeros = f"; {left} values at {ZERO_NOTE}" if left else ""
    fig.suptitle(
        f"{plain(title)}, checkpoint {plain(checkpoint or '(none)')}: singular values of "
        f"{len(last)} matrices{zeros}",
        fontsize=9,
    )
    save(fig, png, pdf)


def plot_layer_spectra(
    table: pd.DataFrame,
    spectra: Mapping[str, Mapping[str, np.ndarray]],
    title: str,
    png: str,
    pdf: str,
) -> None:
    """One panel per matrix of the last checkpoint, in the file's order, titled with its
    layer name and condition number: s_i against i (numerical zeros not drawn; log y over more
    than a decade). At most
    MAX_PANELS panels; the title names the checkpoint and says how many are left out."""
    checkpoints = list(spectra)
    checkpoint = checkpoints[-1] if checkpoints else None
    last = spectra[checkpoint] if checkpoints else {}
    names = list(last)[:MAX_PANELS]
    ncols = min(6, max(len(names), 1))
    nrows = max(1, -(-len(names) // ncols))
    fig, axes = figure(ncols=ncols, nrows=nrows, width=2.6, height=2.2)
    rows = _checkpoint_rows(table, checkpoint)
    drawn, left = _drawn({name: last[name] for name in names}, rows)
    kappa = {
        row.layer: (
            f"$\\kappa$ = {row.condition_number:.3g}"
            if np.isfinite(row.condition_number)
            else f"pseudo-$\\kappa$ = {row.pseudo_condition_number:.3g}"
        )
        for row in rows.itertuples()
    }
    for ax, name in zip(axes.flat, names, strict=False):
        ax.plot(np.arange(1, drawn[name].size + 1), drawn[name], lw=1.2)
        decade_scale(ax)
        integer_axis(ax.xaxis)
        ax.set_title(f"{plain(name)}\n{kappa.get(name, '')}", fontsize=7)
        ax.set_xlabel("index i", fontsize=6)
        ax.set_ylabel("$s_i$", fontsize=6)
        ax.tick_params(which="both", labelsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    if not names:
        axes[0][0].set_visible(True)
        axes[0][0].text(0.5, 0.5, "no 2-D weights", ha="center", va="center")
    more = len(last) - len(names)
    more = f"; {more} more not drawn (see the table)" if more else ""
    zeros = f"\n{left} values at {ZERO_NOTE}" if left else ""
    fig.suptitle(
        f"{plain(title)}, checkpoint {plain(checkpoint or '(none)')}: singular values per "
        f"matrix{more}{zeros}",
        fontsize=9,
    )
    save(fig, png, pdf)
