"""The figures, drawn from the aggregated experiment tables (see matcond.stats, matcond.catalog).

Each figure function takes {experiment: table} and writes a PNG and a PDF. Errors span decades
and can be exactly zero (effective rank), so error axes are symmetric-log: linear below 1e-4,
logarithmic above, starting at 0 (lower error bars are clipped at 0). Every figure states n,
the trials per point, in its title.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from matcond.claims import gradient_ratio  # noqa: E402

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
SPECTRAL = ["row_norms", "condition_number", "log_condition_number", "spectral_gap", "overall"]
PAPER_THRESHOLD = "effective_rank_t0.01"
LINEAR_THRESHOLD = 1e-4
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


def _n_label(rows: pd.DataFrame) -> str:
    trials = rows["n"] + rows["n_nonfinite"]  # trials that did not diverge
    lo, hi = int(trials.min()), int(trials.max())
    n = f"n = {lo}" if lo == hi else f"n = {lo}-{hi}"
    diverged = int(rows["n_diverged"].max())
    return n + (f", up to {diverged} diverged" if diverged else "") + " trials per point"


def _error_axis(ax, label: str = "relative error (mean ± 1 std)") -> None:
    ax.set_yscale("symlog", linthresh=LINEAR_THRESHOLD)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(label)


def _save(fig: plt.Figure, png: str, pdf: str) -> None:
    fig.savefig(png, dpi=130, bbox_inches="tight")
    fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)


def _figure(ncols: int = 1, width: float = 7.0):
    sns.set_theme(style="whitegrid")
    return plt.subplots(1, ncols, figsize=(width * ncols, 4.5), squeeze=False)


def _lines(ax, rows: pd.DataFrame, x: str, components: dict[str, str], **style) -> None:
    """Mean ± 1 std of each component's error against column ``x``."""
    palette = sns.color_palette("tab10", len(PAPER_COMPONENTS) + 2)
    for color, (component, label) in zip(palette, components.items(), strict=False):
        part = rows[rows["component"] == component].sort_values(x)
        if part.empty:
            continue
        ax.plot(part[x], part["mean"], color=color, label=label, **style)
        std = part["std"].fillna(0)
        ax.fill_between(
            part[x], np.maximum(part["mean"] - std, 0), part["mean"] + std, color=color, alpha=0.12
        )


def _bars(
    ax, rows: pd.DataFrame, arm: str, components: dict[str, str], labels: dict | None = None
) -> None:
    """Grouped bars: one group per component, one bar per value of column ``arm``."""
    arms = list(dict.fromkeys(rows[arm]))
    x = np.arange(len(components))
    width = 0.8 / max(len(arms), 1)
    for i, value in enumerate(arms):
        part = rows[rows[arm] == value].set_index("component").reindex(list(components))
        std = part["std"].fillna(0)
        yerr = [np.minimum(std, part["mean"].fillna(0)), std]
        label = (labels or {}).get(value, value)
        ax.bar(
            x + (i - (len(arms) - 1) / 2) * width,
            part["mean"],
            width,
            yerr=yerr,
            label=label,
            capsize=2,
        )
    ax.set_xticks(x, list(components.values()), rotation=30, ha="right")
    _error_axis(ax)


def fig1_dimension(tables: Tables, png: str, pdf: str) -> None:
    """Figure 1: final relative error of each component vs dimension, mean ± 1 std."""
    rows = product_rows(tables["exp1_dimension"])
    fig, ((ax,),) = _figure()
    _lines(ax, rows, "dim", PAPER_COMPONENTS, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    _error_axis(ax)
    ax.set_title(f"Component errors vs dimension ({_n_label(rows)})")
    ax.legend(fontsize=8, ncol=2)
    _save(fig, png, pdf)


def _optimizer_labels(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(optimizer=rows["optimizer"] + " (lr " + rows["lr"].map("{:g}".format) + ")")


def fig2_optimizer(tables: Tables, png: str, pdf: str) -> None:
    """Figure 2: final relative error of each component per optimizer, mean ± 1 std."""
    rows = _optimizer_labels(product_rows(tables["exp2_optimizer"]))
    fig, ((ax,),) = _figure(width=8)
    _bars(ax, rows.sort_values("optimizer"), "optimizer", PAPER_COMPONENTS)
    ax.set_title(f"Optimizer comparison ({_n_label(rows)})")
    ax.legend()
    _save(fig, png, pdf)


def _spectrum(rows: pd.DataFrame, prefix: str) -> pd.DataFrame:
    part = rows[rows["component"].str.startswith(prefix)]
    return part.assign(index=part["component"].str.removeprefix(prefix).astype(int))


def fig3_gradient(tables: Tables, png: str, pdf: str) -> None:
    """Figure 3: gradient per singular value (left) and singular values (right) along training."""
    rows = product_rows(tables["exp3_gradient"], "all")
    grads, sigmas = _spectrum(rows, "grad_sigma_"), _spectrum(rows, "sigma_")
    q = int(grads["index"].max())
    picks = sorted({1, max(q // 4, 1), max(q // 2, 1), max(3 * q // 4, 1), q})
    fig, ((left, right),) = _figure(2)
    colors = sns.color_palette("viridis", len(picks))
    for color, i in zip(colors, picks, strict=True):
        g = grads[grads["index"] == i].sort_values("epoch")
        left.plot(g["epoch"], g["trained_mean"], color=color, label=f"sigma_{i}")
        s = sigmas[sigmas["index"] == i].sort_values("epoch")
        right.plot(s["epoch"], s["trained_mean"], color=color, label=f"sigma_{i}")
        right.axhline(s["target_mean"].iloc[0], color=color, ls="--", lw=0.8)
    left.set_yscale("log")
    left.set_xlabel("epoch")
    left.set_ylabel("|dL/d sigma_i| (mean over trials)")
    left.legend(fontsize=8)
    right.set_xlabel("epoch")
    right.set_ylabel("sigma_i (dashed: target)")
    ratio = gradient_ratio(tables["exp3_gradient"])
    fig.suptitle(
        f"Gradient signal: top/bottom ratio {ratio:.1f} (median over epochs; {_n_label(grads)})"
    )
    _save(fig, png, pdf)


def strategy_improvement(rows: pd.DataFrame, component: str) -> dict[str, float]:
    """1 - mean error(strategy) / mean error(standard) for one component, per strategy."""
    means = rows[rows["component"] == component].set_index("strategy")["mean"]
    return {s: float(1 - means[s] / means["standard"]) for s in means.index}


def fig4_strategies(tables: Tables, png: str, pdf: str) -> None:
    """Figure 4: errors per corrective strategy, with improvements over standard in the legend."""
    rows = product_rows(tables["exp4_strategies"])
    norms, kappa = (
        strategy_improvement(rows, "row_norms"),
        strategy_improvement(rows, "condition_number"),
    )
    labels = {s: f"{s} (norms {norms[s]:+.0%}, kappa {kappa[s]:+.0%})" for s in norms}
    fig, ((ax,),) = _figure(width=9)
    _bars(ax, rows, "strategy", {c: c.replace("_", " ") for c in SPECTRAL}, labels)
    ax.set_title(f"Corrective strategies ({_n_label(rows)})")
    ax.legend(fontsize=7)
    _save(fig, png, pdf)


def fig5_dynamics(tables: Tables, png: str, pdf: str) -> None:
    """Figure 5: error of every component at every epoch, mean ± 1 std."""
    rows = product_rows(tables["exp5_dynamics"], "all")
    rows = rows[rows["epoch"] > 0]
    fig, ((ax,),) = _figure(width=8)
    _lines(ax, rows, "epoch", PAPER_COMPONENTS)
    ax.set_xlabel("epoch")
    _error_axis(ax)
    ax.set_title(f"Error dynamics ({_n_label(rows)})")
    ax.legend(fontsize=8, ncol=2)
    _save(fig, png, pdf)


def fig6_structures(tables: Tables, png: str, pdf: str) -> None:
    """Figure 6: standard vs multipliers per target structure."""
    rows = product_rows(tables["exp6_structures"])
    structures = list(dict.fromkeys(rows["structure"]))
    fig, axes = _figure(len(structures), width=5)
    components = {c: c.replace("_", " ") for c in [*SPECTRAL, "col_norms"]}
    for ax, structure in zip(axes[0], structures, strict=True):
        part = rows[rows["structure"] == structure]
        _bars(ax, part, "strategy", components)
        imp = strategy_improvement(part, "overall")
        ax.set_title(f"{structure}: multipliers {imp.get('multipliers', np.nan):+.0%} overall")
        ax.legend(fontsize=8)
    fig.suptitle(f"Multipliers across structures ({_n_label(rows)})")
    _save(fig, png, pdf)


def _model_label(rows: pd.DataFrame) -> pd.Series:
    depth = rows["depth"].astype("Int64").astype(str) if "depth" in rows else ""
    return np.where(rows["model"] == "deep_linear", "deep linear L=" + depth, rows["model"])


def fig7_depth(tables: Tables, png: str, pdf: str) -> None:
    """Figure 7: condition-number error and per-layer condition numbers vs depth."""
    table = tables["exp7_depth"]
    last = table[table["epoch"] == table["epoch"].max()].copy()
    last["arm"] = _model_label(last)
    arms = list(
        dict.fromkeys(last.sort_values(["model", "depth"] if "depth" in last else "model")["arm"])
    )
    fig, ((left, middle, right),) = _figure(3, width=5)
    product = last[last["matrix"] == "product"].set_index(["arm", "component"])
    kappa = product.xs("condition_number", level="component").reindex(arms)
    left.bar(
        arms, kappa["mean"], yerr=[np.minimum(kappa["std"], kappa["mean"]), kappa["std"]], capsize=3
    )
    left.plot(arms, kappa["median"], "o", color="black", label="median")
    left.set_yscale("log")
    left.set_ylabel("condition-number error of the product")
    left.legend()
    matrices = sorted(last["matrix"].unique())
    width = 0.8 / len(matrices)
    kappas = last[last["component"] == "condition_number"].set_index(["arm", "matrix"])
    for j, matrix in enumerate(matrices):
        values = kappas["trained_median"].reindex([(a, matrix) for a in arms])
        middle.bar(
            np.arange(len(arms)) + (j - (len(matrices) - 1) / 2) * width,
            values,
            width,
            label=matrix,
        )
    middle.axhline(
        float(kappa["target_mean"].iloc[0]), color="black", lw=1, label="target (product)"
    )
    middle.set_xticks(np.arange(len(arms)), arms)
    middle.set_yscale("log")
    middle.set_ylabel("condition number (median over trials)")
    middle.legend(fontsize=7)
    overall = product.xs("overall", level="component").reindex(arms)
    right.bar(arms, overall["mean"], yerr=overall["std"], capsize=3)
    right.set_ylabel("overall error of the product")
    for ax in (left, middle, right):
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(f"Depth ({_n_label(product.reset_index())})")
    _save(fig, png, pdf)


def fig8_sensitivity(tables: Tables, png: str, pdf: str) -> None:
    """Figure 8: condition-number and row-norm errors vs learning rate and weight decay."""
    fig, axes = _figure(2)
    for ax, (name, x) in zip(
        axes[0], [("exp8_lr", "lr"), ("exp8_wd", "weight_decay")], strict=True
    ):
        rows = product_rows(tables[name])
        _lines(
            ax,
            rows,
            x,
            {"condition_number": "condition number", "row_norms": "row norms"},
            marker="o",
        )
        ax.set_xscale("symlog", linthresh=1e-4) if x == "weight_decay" else ax.set_xscale("log")
        _error_axis(ax)
        ax.set_xlabel(x.replace("_", " "))
        means = rows.pivot_table(index=x, columns="component", values="mean")
        twin = ax.twinx()
        twin.plot(means.index, means["condition_number"] / means["row_norms"], "k:", marker="x")
        twin.set_ylabel("cond / norm error ratio")
        twin.grid(False)
        ax.legend(fontsize=8)
        ax.set_title(_n_label(rows))
    _save(fig, png, pdf)


def fig9_long(tables: Tables, png: str, pdf: str) -> None:
    """Figure 9: errors over 1000 epochs and the cond/norm error ratio."""
    rows = product_rows(tables["exp9_long"], "all")
    rows = rows[rows["epoch"] > 0]
    fig, ((left, right),) = _figure(2)
    shown = {"row_norms": "row norms", "condition_number": "condition number", "overall": "overall"}
    _lines(left, rows, "epoch", shown)
    left.set_yscale("log")
    left.set_xlabel("epoch")
    left.set_ylabel("relative error (mean ± 1 std)")
    left.legend()
    means = rows.pivot_table(index="epoch", columns="component", values="mean")
    right.plot(means.index, means["condition_number"] / means["row_norms"])
    right.set_yscale("log")
    right.set_xlabel("epoch")
    right.set_ylabel("condition-number error / row-norm error")
    fig.suptitle(f"Long training ({_n_label(rows)})")
    _save(fig, png, pdf)


def ctrl_effective_rank(tables: Tables, png: str, pdf: str) -> None:
    """Control: effective-rank error vs dimension at every threshold."""
    rows = tables["exp1_dimension"]
    rows = rows[(rows["matrix"] == "product") & (rows["epoch"] == rows["epoch"].max())]
    ranks = sorted(c for c in rows["component"].unique() if c.startswith("effective_rank_t"))
    fig, ((ax,),) = _figure()
    _lines(
        ax,
        rows,
        "dim",
        {c: "threshold " + c.removeprefix("effective_rank_t") for c in ranks},
        marker="o",
    )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    _error_axis(ax)
    ax.set_title(f"Effective rank by threshold ({_n_label(rows)})")
    ax.legend()
    _save(fig, png, pdf)


def _sweep(tables: Tables, png: str, pdf: str, name: str, x: str, log_x: bool) -> None:
    rows = product_rows(tables[name])
    fig, ((ax,),) = _figure()
    _lines(ax, rows, x, PAPER_COMPONENTS, marker="o")
    if log_x:
        ax.set_xscale("symlog", linthresh=min(v for v in rows[x].unique() if v > 0))
    ax.set_xlabel(x.replace("_", " "))
    _error_axis(ax)
    ax.set_title(f"{name} ({_n_label(rows)})")
    ax.legend(fontsize=8, ncol=2)
    _save(fig, png, pdf)


def ctrl_noise(tables: Tables, png: str, pdf: str) -> None:
    """Control: component errors vs label noise."""
    _sweep(tables, png, pdf, "ctrl_noise", "noise_std", log_x=True)


def ctrl_multiplier_lr(tables: Tables, png: str, pdf: str) -> None:
    """Control: component errors vs the multipliers' learning-rate ratio."""
    _sweep(tables, png, pdf, "ctrl_multiplier_lr", "multiplier_lr_ratio", log_x=True)


def ctrl_optimizer_dims(tables: Tables, png: str, pdf: str) -> None:
    """Control: SGD vs Adam per component across dimensions."""
    rows = _optimizer_labels(product_rows(tables["ctrl_optimizer_dims"]))
    fig, ((ax,),) = _figure(width=8)
    for arm, style in zip(sorted(rows["optimizer"].unique()), ["--", "-"], strict=False):
        part = rows[rows["optimizer"] == arm]
        shown = {
            c: f"{PAPER_COMPONENTS[c]} [{arm}]"
            for c in ["row_norms", "condition_number", "overall"]
        }
        _lines(ax, part, "dim", shown, ls=style, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("dimension d")
    _error_axis(ax)
    ax.set_title(f"SGD vs Adam across dimensions ({_n_label(rows)})")
    ax.legend(fontsize=7)
    _save(fig, png, pdf)


FIGURES = {
    f.__name__: f
    for f in (
        fig1_dimension,
        fig2_optimizer,
        fig3_gradient,
        fig4_strategies,
        fig5_dynamics,
        fig6_structures,
        fig7_depth,
        fig8_sensitivity,
        fig9_long,
        ctrl_effective_rank,
        ctrl_noise,
        ctrl_multiplier_lr,
        ctrl_optimizer_dims,
    )
}
