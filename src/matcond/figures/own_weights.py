"""The figure of an analysed weight file (matcond.checkpoints): every layer's spectrum."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib
import numpy as np

from matcond.figures.style import figure, save


def plot_spectra(spectra: Mapping[str, np.ndarray], title: str, png: str, pdf: str) -> None:
    """One line per layer: s_i against i, log y (zero singular values are not drawn)."""
    fig, ((ax,),) = figure(width=7)
    colors = matplotlib.colormaps["viridis"](np.linspace(0, 0.95, max(len(spectra), 1)))
    for (name, s), color in zip(spectra.items(), colors, strict=False):
        shown = np.where(s > 0, s, np.nan)
        ax.plot(np.arange(1, s.size + 1), shown, color=color, lw=1.2, label=name)
    if spectra:
        ax.set_yscale("log")
        if len(spectra) <= 12:
            ax.legend(fontsize=7, loc="best")
        else:
            norm = matplotlib.colors.Normalize(1, len(spectra))
            mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap="viridis")
            fig.colorbar(mappable, ax=ax, label="layer (order in the file)")
    else:
        ax.text(0.5, 0.5, "no 2-D weights", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value $s_i$")
    ax.set_title(f"{title}: singular values of {len(spectra)} weight matrices")
    save(fig, png, pdf)
