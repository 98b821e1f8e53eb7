"""The Gauss-Newton paper's figures on training: the bounds along training, the pruning
figures and the per-layer training dynamics (GN Figs. 1, 10-16, 18), drawn like those of
:mod:`matcond.figures.gauss_newton`.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import seaborn as sns

from matcond.figures.axes import decade_scale, integer_axis
from matcond.figures.gauss_newton import BOUND_LABELS, _data_label, _json_list, _seeds
from matcond.figures.marks import legend_outside, mark_paper, paper_rows
from matcond.figures.style import Tables, figure, interval_line, median_line, save


def _net_label(model: str, depth: int) -> str:
    return "ReLU MLP" if model == "relu_mlp" else f"linear L={depth}"


def gn_along_training(tables: Tables, png: str, pdf: str) -> None:
    """κ (top) and each bound's tightness (bottom) vs epoch along the workflow's own training
    runs, one column per inputs; median and interquartile range over the trials."""
    table = tables["gn_along_training"]
    inputs = sorted(table["inputs"].unique())
    fig, axes = figure(len(inputs), width=5.5, nrows=2, height=3.8)
    nets = list(dict.fromkeys(zip(table["model"], table["depth"], strict=True)))
    colors = dict(zip(nets, sns.color_palette("tab10"), strict=False))
    styles = {"lemma2_convex": "-", "lemma2_max": ":", "lemma1": "--", "lemma4": "-."}
    for (top, bottom), name in zip(axes.T, inputs, strict=True):
        rows = table[table["inputs"] == name]
        for (model, depth), color in colors.items():
            net = rows[(rows["model"] == model) & (rows["depth"] == depth)]
            one = net[net["bound"] == net["bound"].iloc[0]]  # κ repeats along the bounds
            label = f"{_net_label(model, depth)} (n={one['n_samples'].iloc[0]})"
            interval_line(
                top, one["epoch"], one["kappa_median"], one["kappa_q25"], one["kappa_q75"],
                color, label, marker="o", ms=3,
            )  # fmt: skip
            flagged = one[one["n_unreliable"] > 0]
            top.plot(flagged["epoch"], flagged["kappa_median"], "x", color="red", ms=8)
            for bound, cell in net.groupby("bound", sort=False):
                bottom.plot(
                    cell["epoch"], cell["tightness_median"], styles[bound], color=color,
                    label=f"{label}: {BOUND_LABELS[bound]}",
                    **({"marker": "x", "ms": 6} if bound == "lemma1" else {}),
                )  # fmt: skip
        flagged_note = " (red crosses: κ flagged unreliable)" if rows["n_unreliable"].any() else ""
        top.set_title(f"{name} inputs{flagged_note}", fontsize=9)
        decade_scale(top)
        top.set_ylabel("exact GN κ")
        top.set_xlabel("epoch")
        top.legend(fontsize=7)
        bottom.set_title("crosses: Lemma 1 (equal to Lemma 2 convex at L = 2)", fontsize=9)
        decade_scale(bottom)
        bottom.set_ylabel("tightness bound / exact")
        bottom.set_xlabel("epoch")
        bottom.legend(fontsize=6)
        integer_axis(top.xaxis, bottom.xaxis)
    trials = int(table["n"].max())
    fig.suptitle(
        f"GN κ and bound tightness along training ({table['experiment'].iloc[0]}, "
        f"{trials} trials per point, median and interquartile range)",
        fontsize=10,
    )
    save(fig, png, pdf)


def _pruning(table: pd.DataFrame, png: str, pdf: str) -> None:
    """Figs. 1, 13-16: training loss (left) and GN κ at init (right) per magnitude-prune rate."""
    fig, ((left, right),) = figure(2, width=5.5, height=4.2)
    rates = sorted(table["prune_rate"].unique())
    palette = sns.color_palette("viridis", len(rates))
    for color, rate in zip(palette, rates, strict=True):
        cell = table[table["prune_rate"] == rate]
        median_line(left, cell, "epoch", "train_loss", color, f"{rate:.0%} pruned")
    decade_scale(left)
    left.set_xlabel("epoch")
    left.set_ylabel("training loss (MSE to one-hot)")
    left.legend(fontsize=7)
    init = table[table["epoch"] == 0]
    median_line(right, init, "prune_rate", "kappa", "C0", "GN κ at init", marker="o", ms=4)
    decade_scale(right)
    right.set_xlabel("prune rate (per layer, by magnitude)")
    right.set_ylabel("GN κ at init")
    twin = right.twinx()
    rank = init.groupby("prune_rate")["rank"].median()
    twin.plot(rank.index, rank.to_numpy(), "s:", color="C1", label="GN rank (median)")
    twin.set_ylabel("GN rank (dotted)")
    integer_axis(twin.yaxis)
    twin.grid(False)
    lines = right.get_legend_handles_labels()
    extra = twin.get_legend_handles_labels()
    right.legend(
        lines[0] + extra[0],
        lines[1] + extra[1],
        fontsize=8,
        loc="lower left",
        bbox_to_anchor=(0, 1),
        ncol=2,
    )
    first = table.iloc[0]
    fig.suptitle(
        f"Magnitude pruning at init, {first['network']} on {_data_label(table)},\n"
        f"{first['optimizer']} lr {first['lr']:g}, κ on {first['gn_samples']} rows "
        f"({_seeds(table)})",
        fontsize=10,
    )
    save(fig, png, pdf)


def gn_fig1_pruning(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 1: pruning the ReLU MLP."""
    _pruning(tables["gn_fig1_pruning"], png, pdf)


def gn_fig13_pruning_vit(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 13: pruning the ViT stand-in."""
    _pruning(tables["gn_fig13_pruning_vit"], png, pdf)


def gn_fig14_pruning_resnet20(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 14: pruning the ResNet-20 stand-in."""
    _pruning(tables["gn_fig14_pruning_resnet20"], png, pdf)


def gn_fig15_pruning_resnet32(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 15: pruning the ResNet-32 stand-in."""
    _pruning(tables["gn_fig15_pruning_resnet32"], png, pdf)


def gn_fig16_pruning_vgg5(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 16: pruning the VGG-5 stand-in."""
    _pruning(tables["gn_fig16_pruning_vgg5"], png, pdf)


def _per_layer(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Long form of a JSON per-layer column: one row per (row, layer l = 1..L), ``value``."""
    out = rows.drop(columns=column).assign(
        value=[_json_list(v) for v in rows[column]],
        layer=[list(range(1, len(json.loads(v)) + 1)) for v in rows[column]],
    )
    return out.explode(["value", "layer"]).astype({"value": float, "layer": int})


def _layer_lines(ax, long: pd.DataFrame, ylabel: str) -> None:
    """One median line per layer of the positive values of ``long`` vs epoch, on a log axis;
    zeros (a rank-deficient partial product) and infinities are left out and said so."""
    shown = long[np.isfinite(long["value"]) & (long["value"] > 0)]
    layers = sorted(long["layer"].unique())
    for layer, color in zip(layers, sns.color_palette("tab10"), strict=False):
        cell = shown[shown["layer"] == layer]
        if len(cell):
            median_line(ax, cell, "epoch", "value", color, f"l = {layer}")
    if len(shown) < len(long):
        ax.text(
            0.02,
            0.02,
            f"{len(long) - len(shown)} values 0 or inf left out",
            transform=ax.transAxes,
            fontsize=7,
        )
    if len(shown):
        decade_scale(ax)
        legend_outside(ax, fontsize=7)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(ylabel, fontsize=9)


def _training_title(rows: pd.DataFrame, what: str) -> str:
    first = rows.iloc[0]
    return (
        f"{what} on {_data_label(rows)}: SGD lr {first['lr']:g}, batch {first['batch_size']}, "
        f"{first['init']} init ({_seeds(rows)})"
    )


def gn_fig10_linear_training(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 10: training loss (left) and GN κ with Lemma 2 (right) during training, per depth."""
    table = tables["gn_fig10_linear_training"]
    fig, ((left, right),) = figure(2, width=5.5, height=4.2)
    depths = sorted(table["depth"].unique())
    for depth, color in zip(depths, sns.color_palette("tab10"), strict=False):
        rows = table[table["depth"] == depth]
        label = f"L = {depth}, m = {rows['width'].iloc[0]}"
        median_line(left, rows, "epoch", "train_loss", color, label)
        median_line(right, rows, "epoch", "kappa", color, f"κ, {label}", marker="o", ms=3)
        median_line(right, rows, "epoch", "bound_convex", color, "Lemma 2", band=False, ls="--")
    decade_scale(left)
    left.set_xlabel("epoch")
    left.set_ylabel("training loss (MSE to one-hot)")
    left.legend(fontsize=8)
    paper = paper_rows(tables, ["gn_fig10_linear_training"], field="kappa")
    mark_paper(right, paper, table, "epoch")  # the paper's κ range, at the last epoch
    decade_scale(right)
    right.set_xlabel("epoch")
    right.set_ylabel("GN κ (solid),\nLemma 2 convex form (dashed)")
    legend_outside(right, fontsize=8)
    fig.suptitle(_training_title(table, "Deep linear net"), fontsize=10)
    save(fig, png, pdf)


def gn_fig11_partial_products(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 11: κ² and σ_min² of W^{l-1:1} and W^{L:l+1} per layer during training."""
    table = tables["gn_fig10_linear_training"]
    rows = table[table["depth"] == table["depth"].max()]
    panels = [
        ("kappa_sq_inner_per_layer", r"$\kappa^2(W^{l-1:1})$"),
        ("kappa_sq_outer_per_layer", r"$\kappa^2(W^{L:l+1})$"),
        ("lambda_min_inner_per_layer", r"$\sigma^2_{\min}(W^{l-1:1})$"),
        ("lambda_min_outer_per_layer", r"$\sigma^2_{\min}(W^{L:l+1})$"),
    ]
    fig, axes = figure(2, width=5.0, nrows=2, height=3.6)
    for ax, (column, label) in zip(axes.flatten(), panels, strict=True):
        _layer_lines(ax, _per_layer(rows[["epoch", "seed", column]], column), label)
    fig.suptitle(
        _training_title(rows, f"Partial products of the depth-{rows['depth'].iloc[0]} linear net"),
        fontsize=10,
    )
    save(fig, png, pdf)


def gn_fig12_self_balancing(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 12: Lemma 2's per-layer terms without (left) and with (right) their weights γ_l."""
    table = tables["gn_fig10_linear_training"]
    rows = table[table["depth"] == table["depth"].max()]
    terms = _per_layer(rows[["epoch", "seed", "term_per_layer"]], "term_per_layer")
    gammas = _per_layer(rows[["epoch", "seed", "gamma_per_layer"]], "gamma_per_layer")
    weighted = terms.assign(value=terms["value"].to_numpy() * gammas["value"].to_numpy())
    fig, ((left, right),) = figure(2, width=5.5, height=4.2)
    for ax, long, label in (
        (left, terms, r"$\kappa^2(W^{L:l+1})\,\kappa^2(W^{l-1:1})$"),
        (right, weighted, r"$\gamma_l\,\kappa^2(W^{L:l+1})\,\kappa^2(W^{l-1:1})$"),
    ):
        _layer_lines(ax, long, label)
    fig.suptitle(
        _training_title(rows, f"Lemma 2's terms, depth-{rows['depth'].iloc[0]} linear net"),
        fontsize=10,
    )
    save(fig, png, pdf)


def gn_fig18_relu_training(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 18: training loss (left) and GN κ (right) of one-hidden-layer ReLU nets per width."""
    table = tables["gn_fig18_relu_training"]
    fig, ((left, right),) = figure(2, width=5.5, height=4.2)
    widths = sorted(table["width"].unique())
    for width, color in zip(widths, sns.color_palette("viridis", len(widths)), strict=True):
        rows = table[table["width"] == width]
        label = f"m = {width} (lr {rows['lr'].iloc[0]:g})"
        median_line(left, rows, "epoch", "train_loss", color, label)
        median_line(right, rows, "epoch", "kappa", color, label, marker="o", ms=3)
    decade_scale(left)
    left.set_xlabel("epoch")
    left.set_ylabel("training loss (MSE to one-hot)")
    left.legend(fontsize=8)
    decade_scale(right)
    right.set_xlabel("epoch")
    right.set_ylabel(f"GN κ on {table['gn_samples'].iloc[0]} training rows")
    right.legend(fontsize=8)
    first = table.iloc[0]
    title = (
        f"One-hidden-layer ReLU nets on {_data_label(table)}: SGD, batch {first['batch_size']}, "
        f"{first['init']} init ({_seeds(table)})"
    )
    fig.suptitle(title, fontsize=10)
    save(fig, png, pdf)


def gn_fig9_spectrum(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 9: the GN spectrum at init and after training with the rank cut (star), and the
    condition number λ_1 / λ_r as a function of the rank r chosen."""
    table = tables["gn_fig18_relu_training"]
    rows = table[table["eigenvalues"] != ""].sort_values("epoch")
    fig, ((left, right),) = figure(2, width=5.5, height=4.2)
    for (_, row), color in zip(rows.iterrows(), ("C0", "C3"), strict=False):
        values = np.array(_json_list(row["eigenvalues"]))
        positive = values[values > 0]
        order = np.arange(1, positive.size + 1)
        label = f"epoch {row['epoch']}"
        left.plot(order, positive, color=color, label=label)
        left.plot(row["rank"], positive[row["rank"] - 1], "*", color=color, ms=12)
        right.plot(order, positive[0] / positive, color=color, label=label)
        right.plot(row["rank"], row["kappa"], "*", color=color, ms=12)
    for ax, ylabel in ((left, "eigenvalue λ_r"), (right, "κ(r) = λ_1 / λ_r")):
        decade_scale(ax)
        ax.set_xlabel("index r (descending)")
        integer_axis(ax.xaxis)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, title="★ numerical rank", title_fontsize=8)
    first = rows.iloc[0]
    fig.suptitle(
        f"GN spectrum of a one-hidden-layer ReLU net, m = {first['width']}, seed {first['seed']}, "
        f"on {first['gn_samples']} rows of {_data_label(table)}",
        fontsize=10,
    )
    save(fig, png, pdf)
