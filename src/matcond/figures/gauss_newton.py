"""The Gauss-Newton paper's figures, drawn from the tables of :mod:`matcond.gn_experiments`.

One function per figure, named like its table (``gn_exp7``, ``gn_fig2_depth``, ...); each takes
{table name: table} and writes a PNG and a PDF. Sweep tables hold one row per network (seed);
lines are the median over seeds with a 95 % bootstrap band, or each seed's value where a point
has fewer than 5 seeds (matcond.figures.style.median_line), dashed lines the median bound.
Every panel names its data (n, d, k) and every title the number of seeds per point.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import seaborn as sns

from matcond.figures.axes import decade_scale, integer_axis
from matcond.figures.marks import legend_entries
from matcond.figures.style import Tables, figure, median_line, save, spread_label

BOUND_LABELS = {
    "lemma1": "Lemma 1",
    "lemma2_convex": "Lemma 2 (convex)",
    "lemma2_max": "Lemma 2 (max)",
    "lemma4": "Lemma 4",
}


def _data_label(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    white = ", whitened" if bool(first["whitened"]) else ""
    return f"{first['dataset']}{white} (n={first['n_samples']}, d={first['d']}, k={first['k']})"


def _seeds(rows: pd.DataFrame) -> str:
    return f"{rows['seed'].nunique()} seeds per point, {spread_label(rows)}"


def _inputs(table: pd.DataFrame, keys: list[str] | None = None):
    """The table's row groups per data set (and per ``keys``), in a stable order."""
    return list(table.groupby(keys or ["dataset", "whitened"], sort=True))


def gn_exp7(tables: Tables, png: str, pdf: str) -> None:
    """exp7: per network and stage, per inputs, the exact κ (median with its interquartile
    range over trials) and every bound (median) above, each bound's tightness bound / κ
    (median, whiskers from the smallest to the largest trial) below."""
    table = tables["gn_exp7"]
    inputs = sorted(table["inputs"].unique())
    fig, axes = figure(len(inputs), width=7.5, nrows=2, height=3.4)
    for (top, bottom), name in zip(axes.T, inputs, strict=True):
        rows = table[table["inputs"] == name]
        keys = list(zip(rows["model"], rows["depth"], rows["stage"], strict=True))
        cells = list(dict.fromkeys(keys))
        rows = rows.assign(cell=[cells.index(key) for key in keys])
        bounds = [b for b in BOUND_LABELS if b in set(rows["bound"])]
        width = 0.8 / (len(bounds) + 1)
        colors = sns.color_palette("tab10", len(bounds) + 1)
        exact = rows.drop_duplicates("cell")
        top.errorbar(
            exact["cell"] - len(bounds) / 2 * width,
            exact["kappa_median"],
            yerr=[
                exact["kappa_median"] - exact["kappa_q25"],
                exact["kappa_q75"] - exact["kappa_median"],
            ],
            fmt="o",
            color=colors[0],
            capsize=2,
            label="exact κ (median, IQR)",
        )
        for j, bound in enumerate(bounds, start=1):
            part = rows[(rows["bound"] == bound) & np.isfinite(rows["bound_median"])]
            xs = part["cell"] + (j - len(bounds) / 2) * width
            top.plot(xs, part["bound_median"], "s", color=colors[j], label=BOUND_LABELS[bound])
            middle = part["tightness_median"]
            bottom.errorbar(
                xs,
                middle,
                yerr=[middle - part["tightness_min"], part["tightness_max"] - middle],
                fmt="s",
                color=colors[j],
                capsize=2,
            )
        bottom.axhline(1.0, color="black", lw=0.8, ls=":")
        labels = [f"{'ReLU MLP' if m == 'relu_mlp' else f'linear L={d}'}\n{s}" for m, d, s in cells]
        for ax in (top, bottom):
            ax.set_xticks(np.arange(len(cells)), labels, fontsize=8)
            decade_scale(ax)
        top.tick_params(labelbottom=False)
        bottom.set_xlabel("network and weights")
        top.set_ylabel("GN condition number")
        bottom.set_ylabel("bound / exact κ")
        samples = ", ".join(
            f"{m}: n={k}" for m, k in rows.groupby("model")["n_samples"].first().items()
        )
        top.set_title(f"inputs: {name} ({samples}); {int(rows['n'].max())} trials", fontsize=9)
    fig.legend(*legend_entries(axes[0]), loc="outside lower center", ncol=len(BOUND_LABELS) + 1)
    fig.suptitle("exp7 weights: exact GN κ and bounds (medians), and how tight each bound is")
    save(fig, png, pdf)


def gn_fig2_depth(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 2: κ and Lemma 2 vs depth, per fixed width (a) and for width ∝ depth (b)."""
    table = tables["gn_fig2_depth"]
    groups = _inputs(table)
    fig, axes = figure(2, width=5.5, nrows=len(groups), height=4.2)
    for row, (_, rows) in zip(axes, groups, strict=True):
        for ax, rule in zip(row, ["fixed", "proportional"], strict=True):
            part = rows[rows["width_rule"] == rule]
            params = sorted(part["width_param"].unique())
            palette = sns.color_palette("viridis", max(len(params), 1))
            for color, param in zip(palette, params, strict=False):
                cell = part[part["width_param"] == param]
                label = f"m = {param}" if rule == "fixed" else f"m = {param} L"
                median_line(ax, cell, "depth", "kappa", color, label, marker="o", ms=3)
                median_line(ax, cell, "depth", "bound_convex", color, "", band=False, ls="--")
            decade_scale(ax)
            ax.set_xlabel("depth L")
            ax.set_ylabel("GN κ (solid), Lemma 2 convex (dashed)")
            kind = "fixed width" if rule == "fixed" else "width ∝ depth"
            ax.set_title(f"{kind}: {_data_label(rows)}", fontsize=9)
            if params:
                ax.legend(fontsize=7)
    fig.suptitle(f"Linear nets at Kaiming init: κ vs depth ({_seeds(table)})")
    save(fig, png, pdf)


def gn_fig3_bounds(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 3: convex vs max form of Lemma 2; right: per-layer terms at the largest depth."""
    table = tables["gn_fig3_bounds"]
    groups = _inputs(table)
    fig, axes = figure(2, width=5.5, nrows=len(groups), height=4.2)
    palette = sns.color_palette("tab10", 3)
    for (left, right), (_, rows) in zip(axes, groups, strict=True):
        for color, (column, label) in zip(
            palette,
            [("kappa", "exact κ"), ("bound_convex", "convex form"), ("bound_max", "max form")],
            strict=True,
        ):
            median_line(left, rows, "depth", column, color, label, marker="o", ms=3)
        decade_scale(left)
        left.set_xlabel("depth L")
        left.set_ylabel("GN κ and Lemma 2 bounds")
        left.set_title(f"m = {rows['width'].iloc[0]}: {_data_label(rows)}", fontsize=9)
        left.legend(fontsize=8)
        deepest = rows[rows["depth"] == rows["depth"].max()]
        terms = np.array([_json_list(v) for v in deepest["term_per_layer"]])
        gammas = np.array([_json_list(v) for v in deepest["gamma_per_layer"]])
        layers = np.arange(1, terms.shape[1] + 1)
        term = r"$\kappa^2(W^{L:l+1})\,\kappa^2(W^{l-1:1})$"
        right.plot(layers, terms.mean(axis=0), "o-", label=term)
        right.plot(layers, (gammas * terms).mean(axis=0), "s--", label=r"$\gamma_l\,\times$ term")
        decade_scale(right)
        integer_axis(right.xaxis)
        right.set_xlabel("layer l")
        right.set_ylabel("term (mean over seeds)")
        right.set_title(f"terms of Lemma 2 at L = {int(deepest['depth'].iloc[0])}", fontsize=9)
        right.legend(fontsize=8)
    fig.suptitle(f"Convex combination vs maximum bound ({_seeds(table)})")
    save(fig, png, pdf)


def _json_list(value: str) -> list[float]:
    return [float(v) for v in json.loads(value)]


def gn_fig5_residual(tables: Tables, png: str, pdf: str) -> None:
    """Figs. 5 and 20: linear vs residual (β = 1), and every β rule, vs depth."""
    table = tables["gn_fig5_residual"]
    groups = _inputs(table)
    fig, axes = figure(2, width=5.5, nrows=len(groups), height=4.2)
    labels = BETA_LABELS
    for (left, right), (_, rows) in zip(axes, groups, strict=True):
        rules = [r for r in labels if r in set(rows["beta_rule"])]
        palette = dict(zip(rules, sns.color_palette("tab10", len(rules)), strict=True))
        for ax, shown in ((left, [r for r in ("0", "1") if r in rules]), (right, rules)):
            for rule in shown:
                cell = rows[rows["beta_rule"] == rule]
                median_line(
                    ax, cell, "depth", "kappa", palette[rule], labels[rule], marker="o", ms=3
                )
                median_line(
                    ax, cell, "depth", "bound_convex", palette[rule], "", band=False, ls="--"
                )
            decade_scale(ax)
            ax.set_xlabel("depth L")
            ax.set_ylabel("GN κ (solid), Eq. 7 bound (dashed)")
            ax.set_title(f"m = {rows['width'].iloc[0]}: {_data_label(rows)}", fontsize=9)
            ax.legend(fontsize=8)
    fig.suptitle(f"Residual connections (W_l + β I) ({_seeds(table)})")
    save(fig, png, pdf)


BETA_LABELS = {"0": "linear (β = 0)", "1": "β = 1", "1/sqrt(L)": "β = 1/√L", "1/L": "β = 1/L"}


def _residual_by_beta(table: pd.DataFrame, dataset: str, png: str, pdf: str) -> None:
    """κ and Eq. 7 per β rule vs depth (one panel each), the linear net in grey, on one data
    set's whitened inputs (raw ones if the sweep has no whitened inputs)."""
    rows = table[table["dataset"] == dataset]
    if rows["whitened"].any():
        rows = rows[rows["whitened"]]
    rules = [r for r in BETA_LABELS if r in set(rows["beta_rule"]) and r != "0"]
    fig, axes = figure(len(rules), width=4.2, height=4.0)
    linear = rows[rows["beta_rule"] == "0"]
    for ax, rule, color in zip(axes[0], rules, sns.color_palette("tab10"), strict=False):
        cell = rows[rows["beta_rule"] == rule]
        median_line(ax, linear, "depth", "kappa", "grey", BETA_LABELS["0"], marker=".", ms=3)
        median_line(ax, cell, "depth", "kappa", color, f"κ, {BETA_LABELS[rule]}", marker="o", ms=3)
        median_line(ax, cell, "depth", "bound_convex", color, "Eq. 7", band=False, ls="--")
        decade_scale(ax)
        ax.set_xlabel("depth L")
        ax.set_ylabel("GN κ (solid), Eq. 7 bound (dashed)")
        ax.set_title(BETA_LABELS[rule])
        ax.legend(fontsize=8)
    fig.suptitle(
        f"Residual nets per β, m = {rows['width'].iloc[0]}, {_data_label(rows)} ({_seeds(rows)})",
        fontsize=10,
    )
    save(fig, png, pdf)


def gn_fig20_residual_beta(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 20: residual nets per β with Eq. 7, on the digits (for MNIST)."""
    _residual_by_beta(tables["gn_fig5_residual"], "digits", png, pdf)


def gn_fig22_residual_beta_gaussian(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 22: residual nets per β with Eq. 7, on Gaussian samples (for CIFAR-10)."""
    _residual_by_beta(tables["gn_fig5_residual"], "gaussian", png, pdf)


def gn_fig21_residual_vs_linear(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 21: κ(residual) / κ(linear) on the same weights vs depth, one panel per β (columns)
    and data set (rows), so that no interval hides another."""
    table = tables["gn_fig5_residual"]
    keys = ["dataset", "whitened", "depth", "seed"]
    linear = table[table["beta_rule"] == "0"].set_index(keys)["kappa"]
    residual = table[table["beta_rule"] != "0"]
    ratio = (
        residual["kappa"].to_numpy()
        / linear.loc[pd.MultiIndex.from_frame(residual[keys])].to_numpy()
    )
    paired = residual.assign(ratio=ratio)
    rules = [r for r in BETA_LABELS if r in set(paired["beta_rule"])]
    groups = _inputs(paired)
    fig, axes = figure(len(rules), width=3.6, nrows=len(groups), height=3.0)
    for row, (_, rows) in zip(axes, groups, strict=True):
        for ax, rule, color in zip(row, rules, sns.color_palette("tab10"), strict=False):
            cell = rows[rows["beta_rule"] == rule]
            median_line(ax, cell, "depth", "ratio", color, "", marker="o", ms=3)
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_xlabel("depth L")
            ax.set_ylabel("κ(residual) / κ(linear)")
            ax.set_title(f"{BETA_LABELS[rule]}; {_data_label(rows)}", fontsize=8)
    for ax in axes.flat[1:]:
        ax.sharey(axes.flat[0])
    decade_scale(axes.flat[0])  # on what every panel draws: they share their y axis
    fig.suptitle(
        f"Residual vs linear on the same weights, paired by seed, m = {table['width'].iloc[0]} "
        f"({_seeds(table)})"
    )
    save(fig, png, pdf)


def _leaky_panels(table: pd.DataFrame, x: str, hue: str, palette: str, xlabel: str):
    """κ (solid) and Lemma 4 (dashed) of one-hidden-layer leaky-ReLU nets vs ``x``, per ``hue``.

    Returns the figure and (axis, rows drawn on it) per data set.
    """
    groups = _inputs(table)
    fig, axes = figure(len(groups), width=5.5, height=4.2)
    for ax, (_, rows) in zip(axes[0], groups, strict=True):
        values = sorted(rows[hue].unique())
        colors = sns.color_palette(palette, len(values))
        for color, value in zip(colors, values, strict=True):
            cell = rows[rows[hue] == value]
            label = f"κ, {'α' if hue == 'alpha' else 'm'} = {value:g}"
            median_line(ax, cell, x, "kappa", color, label, marker="o", ms=3)
            median_line(ax, cell, x, "bound", color, "Lemma 4", band=False, ls="--")
        decade_scale(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("GN κ (solid), Lemma 4 (dashed)")
        ax.set_title(_data_label(rows), fontsize=9)
    return fig, [(ax, rows) for ax, (_, rows) in zip(axes[0], groups, strict=True)]


def gn_fig6_leaky_width(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 6: one-hidden-layer leaky ReLU, κ and Lemma 4 vs width."""
    table = tables["gn_fig6_leaky_width"]
    fig, panels = _leaky_panels(table, "width", "alpha", "tab10", "hidden width m")
    for ax, rows in panels:
        ax.axvline(rows["n_samples"].iloc[0], color="grey", lw=0.8, ls=":", label="m = n")
        decade_scale(ax, "x")
        ax.legend(fontsize=8)
    fig.suptitle(f"Leaky-ReLU net, one hidden layer: κ vs width ({_seeds(table)})")
    save(fig, png, pdf)


def gn_fig23_leaky_alpha(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 23: one-hidden-layer leaky ReLU, κ vs the slope α (0 = ReLU, 1 = linear)."""
    table = tables["gn_fig23_leaky_alpha"]
    xlabel = "negative slope α (0: ReLU, 1: linear)"
    fig, panels = _leaky_panels(table, "alpha", "width", "viridis", xlabel)
    for ax, _ in panels:
        ax.legend(fontsize=8)
    fig.suptitle(f"Leaky-ReLU net, one hidden layer: κ vs α ({_seeds(table)})")
    save(fig, png, pdf)


def _bound_panels(table: pd.DataFrame, bounds: dict[str, str], ylabel: str):
    """Per data set (dataset, whitened): κ (solid) and each bound column of ``bounds``
    ({column: label}, dashed) vs hidden width, with κ(Σ) dotted; returns the figure."""
    groups = _inputs(table)
    fig, axes = figure(len(groups), width=5.5, height=4.2)
    styles = ["--", "-.", ":"]
    for ax, (_, rows) in zip(axes[0], groups, strict=True):
        median_line(ax, rows, "width", "kappa", "C0", "exact κ", marker="o", ms=3)
        for (column, label), color, style in zip(
            bounds.items(), ["C1", "C2", "C3"], styles, strict=False
        ):
            median_line(ax, rows, "width", column, color, label, band=False, ls=style)
        ax.axhline(rows["kappa_sigma"].iloc[0], color="grey", lw=0.8, ls=":", label="κ(Σ)")
        decade_scale(ax, "x", base=2)
        decade_scale(ax)
        ax.set_xlabel("hidden width m")
        ax.set_ylabel(ylabel)
        ax.set_title(_data_label(rows), fontsize=9)
        ax.legend(fontsize=8)
    return fig


def gn_appF_functional_hessian(tables: Tables, png: str, pdf: str) -> None:
    """Appendix F: κ of the functional Hessian of ``W V x`` and Eq. (18) vs width."""
    table = tables["gn_appF_functional_hessian"]
    fig = _bound_panels(table, {"bound": "Eq. 18"}, "κ(H_F) (solid), Eq. 18 (dashed)")
    fig.suptitle(
        f"Functional Hessian of W V x, teacher Z x: closed form vs autodiff within "
        f"{table['reference_error'].max():.1e} ({_seeds(table)})",
        fontsize=10,
    )
    save(fig, png, pdf)


def gn_appG_init_bounds(tables: Tables, png: str, pdf: str) -> None:
    """Appendix G: κ of ``W V x`` at Kaiming init vs width with Lemmas 1, 7 and G.2."""
    table = tables["gn_appG_init_bounds"]
    labels = {
        "bound_lemma1": "Lemma 1",
        "bound_lemma7": f"Lemma 7 (t = {table['t'].iloc[0]:.2f})",
        "bound_asymptotic_g2": "G.2 (asymptotic)",
    }
    fig = _bound_panels(table, labels, "GN κ (solid) and bounds")
    fig.suptitle(f"W V x at Kaiming init: κ → κ(Σ) as m grows ({_seeds(table)})")
    save(fig, png, pdf)


def gn_fig19_whitening(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 19: κ vs depth with and without whitening the inputs."""
    table = tables["gn_fig19_whitening"]
    groups = _inputs(table, ["dataset"])
    fig, axes = figure(len(groups), width=5.5, height=4.2)
    for ax, (dataset, rows) in zip(axes[0], groups, strict=True):
        for whitened, style, color in ((False, "--", "C3"), (True, "-", "C0")):
            cell = rows[rows["whitened"] == whitened]
            if cell.empty:
                continue
            kappa_sigma = cell["kappa_sigma"].iloc[0]
            label = f"{'whitened' if whitened else 'raw'} (κ(Σ) = {kappa_sigma:.3g})"
            median_line(ax, cell, "depth", "kappa", color, label, marker="o", ms=3, ls=style)
        decade_scale(ax)
        ax.set_xlabel("depth L")
        ax.set_ylabel("GN κ")
        first = rows.iloc[0]
        ax.set_title(
            f"{dataset[0]} (n={first['n_samples']}, d={first['d']}, k={first['k']}), "
            f"m = {first['width']}",
            fontsize=9,
        )
        ax.legend(fontsize=8)
    fig.suptitle(f"Whitened vs raw inputs, linear nets ({_seeds(table)})")
    save(fig, png, pdf)


def gn_fig7_batchnorm(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 7: one-hidden-layer linear net with and without BatchNorm, κ vs width."""
    table = tables["gn_fig7_batchnorm"]
    groups = _inputs(table)
    fig, axes = figure(len(groups), width=5.5, height=4.2)
    for ax, (_, rows) in zip(axes[0], groups, strict=True):
        for batchnorm, color, label in ((False, "C3", "W V x"), (True, "C0", "W BN(V x)")):
            cell = rows[rows["batchnorm"] == batchnorm]
            median_line(ax, cell, "width", "kappa", color, label, marker="o", ms=3)
        decade_scale(ax, "x", base=2)
        decade_scale(ax)
        ax.set_xlabel("hidden width m")
        ax.set_ylabel("GN κ (autodiff reference)")
        ax.set_title(_data_label(rows), fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"BatchNorm (eval mode, full-batch statistics) at init ({_seeds(table)})")
    save(fig, png, pdf)


def gn_fig8_linear_cnn(tables: Tables, png: str, pdf: str) -> None:
    """Fig. 8: linear CNN κ vs kernel size per filters (left) and vs filters per size (right),
    one row per reading of the second layer (``head``)."""
    table = tables["gn_fig8_linear_cnn"]
    heads = sorted(table["head"].unique(), reverse=True)  # linear first
    fig, axes = figure(2, width=5.5, nrows=len(heads), height=4.0)
    second = {"linear": "linear read-out to 10 classes", "conv": "second conv to one map"}
    for (left, right), head in zip(axes, heads, strict=True):
        rows = table[table["head"] == head]
        for ax, x, hue, xlabel, name in (
            (left, "kernel_size", "filters", "kernel size s", "F"),
            (right, "filters", "kernel_size", "filters F", "s"),
        ):
            values = sorted(rows[hue].unique())
            for value, color in zip(values, sns.color_palette("viridis", len(values)), strict=True):
                cell = rows[rows[hue] == value]
                median_line(ax, cell, x, "kappa", color, f"{name} = {value}", marker="o", ms=3)
            decade_scale(ax)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"GN κ ({head} head)")
            ax.set_title(second[head], fontsize=9)
            ax.legend(fontsize=8)
        if rows["filters"].nunique() > 1:
            decade_scale(right, "x", base=2)
    fig.suptitle(f"Linear CNN at init, {_data_label(table)} ({_seeds(table)})")
    save(fig, png, pdf)
