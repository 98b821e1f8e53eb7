"""The paper's figures, drawn from the aggregated experiment tables (see matcond.stats).

Each figure function takes the experiment table and writes a PNG and a PDF. Errors span
decades and can be exactly zero (effective rank), so error axes are symmetric-log: linear
below 1e-4, logarithmic above, starting at 0 (lower error bars are clipped at 0). Every figure states n, the trials per point, in its title.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

# The paper's eight components (first effective-rank threshold) with their plot labels.
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
LINEAR_THRESHOLD = 1e-4


def final_epoch(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the last recorded epoch, with effective rank at its first threshold renamed."""
    rows = table[table["epoch"] == table["epoch"].max()].copy()
    ranks = sorted(c for c in rows["component"].unique() if c.startswith("effective_rank_t"))
    if ranks:
        rows["component"] = rows["component"].replace(ranks[0], "effective_rank")
    return rows[rows["component"].isin(PAPER_COMPONENTS)]


def _n_label(rows: pd.DataFrame) -> str:
    lo, hi = int(rows["n"].min()), int(rows["n"].max())
    n = f"n = {lo}" if lo == hi else f"n = {lo}-{hi}"
    diverged = int(rows.groupby("component")["n_diverged"].max().max())
    return n + (f", {diverged} diverged" if diverged else "") + " trials per point"


def _save(fig: plt.Figure, png: str, pdf: str) -> None:
    fig.savefig(png, dpi=150, bbox_inches="tight")
    fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)


def fig1_dimension(table: pd.DataFrame, png: str, pdf: str) -> None:
    """Figure 1: final relative error of each component vs dimension, mean +- 1 std."""
    rows = final_epoch(table)
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    palette = sns.color_palette("tab10", len(PAPER_COMPONENTS))
    for color, (component, label) in zip(palette, PAPER_COMPONENTS.items(), strict=True):
        part = rows[rows["component"] == component].sort_values("dim")
        if part.empty:
            continue
        ax.plot(part["dim"], part["mean"], marker="o", color=color, label=label)
        low = np.maximum(part["mean"] - part["std"].fillna(0), 0)
        ax.fill_between(
            part["dim"], low, part["mean"] + part["std"].fillna(0), color=color, alpha=0.15
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=LINEAR_THRESHOLD)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("dimension d")
    ax.set_ylabel("relative error (mean ± 1 std)")
    ax.set_title(f"Component errors vs dimension ({_n_label(rows)})")
    ax.legend(fontsize=8, ncol=2)
    _save(fig, png, pdf)


def fig2_optimizer(table: pd.DataFrame, png: str, pdf: str) -> None:
    """Figure 2: final relative error of each component per optimizer, mean +- 1 std."""
    rows = final_epoch(table).copy()
    rows["optimizer"] = rows["optimizer"] + " (lr " + rows["lr"].map("{:g}".format) + ")"
    arms = sorted(rows["optimizer"].unique())
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = np.arange(len(PAPER_COMPONENTS))
    width = 0.8 / max(len(arms), 1)
    for i, arm in enumerate(arms):
        part = rows[rows["optimizer"] == arm].set_index("component").reindex(list(PAPER_COMPONENTS))
        ax.bar(
            x + (i - (len(arms) - 1) / 2) * width,
            part["mean"],
            width,
            yerr=part["std"],
            label=arm,
            capsize=3,
        )
    ax.set_xticks(x, list(PAPER_COMPONENTS.values()), rotation=30, ha="right")
    ax.set_yscale("symlog", linthresh=LINEAR_THRESHOLD)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("relative error (mean ± 1 std)")
    ax.set_title(f"Optimizer comparison ({_n_label(rows)})")
    ax.legend()
    _save(fig, png, pdf)


FIGURES = {"fig1_dimension": fig1_dimension, "fig2_optimizer": fig2_optimizer}
