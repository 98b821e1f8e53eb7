"""The figures of analysed weights (matcond.own_weights): every matrix's spectrum and, for a
folder of checkpoints, each matrix's condition number along the run; and a panel per matrix
with its name (:func:`plot_layer_spectra`)."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib
import numpy as np
import pandas as pd

from matcond.figures.style import figure, plain, save


def _lines(ax, fig, series: Mapping[str, tuple], what: str) -> None:
    """One line per entry (x, y), coloured in order; a legend for up to 12, else a colorbar."""
    colors = matplotlib.colormaps["viridis"](np.linspace(0, 0.95, max(len(series), 1)))
    for (name, (x, y)), color in zip(series.items(), colors, strict=False):
        ax.plot(x, y, color=color, lw=1.2, label=plain(name), marker="o" if len(x) < 30 else None)
    if len(series) <= 12:
        ax.legend(fontsize=7, loc="best")
    else:
        norm = matplotlib.colors.Normalize(1, len(series))
        mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap="viridis")
        fig.colorbar(mappable, ax=ax, label=f"{what} (order in the file)")


def plot_own_weights(
    table: pd.DataFrame,
    spectra: Mapping[str, Mapping[str, np.ndarray]],
    title: str,
    png: str,
    pdf: str,
) -> None:
    """Left: s_i against i (log y; zero singular values not drawn) of every matrix of the last
    checkpoint. Right, when there are several checkpoints: each matrix's condition number
    against the step (the checkpoint's order when a name holds no step)."""
    checkpoints = list(spectra)
    fig, axes = figure(ncols=1 + (len(checkpoints) > 1), width=7)
    ax = axes[0][0]
    last = spectra[checkpoints[-1]] if checkpoints else {}
    if last:
        shown = {k: (np.arange(1, s.size + 1), np.where(s > 0, s, np.nan)) for k, s in last.items()}
        _lines(ax, fig, shown, "matrix")
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no 2-D weights", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value $s_i$")
    which = f" ({checkpoints[-1]})" if len(checkpoints) > 1 else ""
    ax.set_title(f"{plain(title + which)}: singular values of {len(last)} matrices")
    if len(checkpoints) > 1:
        ax = axes[0][1]
        order = {name: i for i, name in enumerate(checkpoints)}
        x = table["step"].astype("float64").fillna(table["checkpoint"].map(order))
        series = {
            layer: (x[rows.index].to_numpy(), rows["condition_number"].to_numpy())
            for layer, rows in table.groupby("layer", sort=False)
        }
        _lines(ax, fig, series, "matrix")
        ax.set_yscale("log")
        no_step = table["step"].isna().any()
        ax.set_xlabel("checkpoint (order)" if no_step else "step")
        ax.set_ylabel(r"condition number $\kappa$")
        ax.set_title(f"{plain(title)}: condition number along {len(checkpoints)} checkpoints")
    save(fig, png, pdf)


# Panels of the per-layer figure: beyond these the figure says how many it leaves out.
MAX_PANELS = 48


def plot_layer_spectra(
    table: pd.DataFrame,
    spectra: Mapping[str, Mapping[str, np.ndarray]],
    title: str,
    png: str,
    pdf: str,
) -> None:
    """One panel per matrix of the last checkpoint, in the file's order, titled with its
    layer name and condition number: s_i against i (log y; zero singular values not drawn).
    At most MAX_PANELS panels; the title says how many matrices are left out."""
    checkpoints = list(spectra)
    last = spectra[checkpoints[-1]] if checkpoints else {}
    names = list(last)[:MAX_PANELS]
    ncols = min(6, max(len(names), 1))
    nrows = max(1, -(-len(names) // ncols))
    fig, axes = figure(ncols=ncols, nrows=nrows, width=2.6, height=2.2)
    rows = table[table["checkpoint"] == checkpoints[-1]] if checkpoints else table
    kappa = {
        row.layer: (
            f"$\\kappa$ = {row.condition_number:.3g}"
            if np.isfinite(row.condition_number)
            else f"pseudo-$\\kappa$ = {row.pseudo_condition_number:.3g}"
        )
        for row in rows.itertuples()
    }
    for ax, name in zip(axes.flat, names, strict=False):
        s = last[name]
        ax.plot(np.arange(1, s.size + 1), np.where(s > 0, s, np.nan), lw=1.2)
        ax.set_yscale("log")
        ax.set_title(f"{plain(name)}\n{kappa.get(name, '')}", fontsize=7)
        ax.set_xlabel("index i", fontsize=6)
        ax.set_ylabel("$s_i$", fontsize=6)
        ax.tick_params(which="both", labelsize=6)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    if not names:
        axes[0][0].set_visible(True)
        axes[0][0].text(0.5, 0.5, "no 2-D weights", ha="center", va="center")
    left = len(last) - len(names)
    more = f"; {left} more not drawn (see the table)" if left else ""
    fig.suptitle(f"{plain(title)}: singular values per matrix{more}", fontsize=9)
    save(fig, png, pdf)
