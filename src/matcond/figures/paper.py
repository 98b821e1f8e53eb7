"""The condition-number paper's figures 1-9 and the review's first controls.

Each function takes {table name: table} (experiment tables of matcond.stats.summary, and per-trial
tables under ``{experiment}_per_trial``) and writes a PNG and a PDF.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from matcond.core.arms import arm
from matcond.figures.axes import decade_scale, integer_axis, sweep_axis
from matcond.figures.marks import (
    legend_entries,
    legend_outside,
    mark_paper,
    paper_legend,
    paper_rows,
)
from matcond.figures.style import (
    ERROR_LABEL,
    PAPER_COMPONENTS,
    Tables,
    error_axis,
    figure,
    grouped_lines,
    interval_points,
    lines,
    n_label,
    palette,
    product_rows,
    save,
)


def small_multiples(
    rows: pd.DataFrame,
    x: str,
    components: dict[str, str],
    title: str,
    log_x: str | None,
    paper: pd.DataFrame | None = None,
):
    """One panel per component (so that components with equal errors do not hide each other),
    its headline statistic with the 95 % interval against ``x``, and the papers' values
    (:func:`matcond.figures.marks.paper_rows`) where ``paper`` has some."""
    ncols = 4
    nrows = -(-len(components) // ncols)
    fig, axes = figure(ncols, width=3.6, nrows=nrows, height=3.0)
    marked = False
    for ax, (component, label) in zip(axes.flat, components.items(), strict=False):
        lines(ax, rows, x, {component: label})
        if paper is not None and not paper.empty:
            part = paper[paper["component"] == component]
            marked |= mark_paper(ax, part, rows[rows["component"] == component], x)
        if log_x == "log2":
            sweep_axis(ax, rows[x])
        elif log_x == "symlog":
            ax.set_xscale("symlog", linthresh=min(v for v in rows[x].unique() if v > 0))
        error_axis(ax, "relative error")
        ax.set_title(label)
        ax.set_xlabel(x.replace("_", " "))
    for ax in axes.flat[len(components) :]:
        ax.set_visible(False)
    if marked:
        paper_legend(fig, axes.flat)
    fig.suptitle(f"{title}; median (spectral) or mean (norms), 95% CI ({n_label(rows)})")
    return fig


def fig1_dimension(tables: Tables, png: str, pdf: str) -> None:
    """Figure 1: final relative error of each component vs dimension (exp1 and larger dims)."""
    parts = [product_rows(tables[n]) for n in ("exp1_dimension", "exp1_large_dims") if n in tables]
    rows = pd.concat(parts, ignore_index=True)
    paper = paper_rows(tables, ["exp1_dimension"])
    fig = small_multiples(
        rows, "dim", PAPER_COMPONENTS, "Component errors vs dimension", "log2", paper
    )
    save(fig, png, pdf)


def optimizer_labels(rows: pd.DataFrame) -> pd.DataFrame:
    """The optimizer column as 'sgd (lr 0.01)'."""
    return rows.assign(optimizer=rows["optimizer"] + " (lr " + rows["lr"].map("{:g}".format) + ")")


def fig2_optimizer(tables: Tables, png: str, pdf: str) -> None:
    """Figure 2: final relative error of each component per optimizer."""
    rows = product_rows(tables["exp2_optimizer"]).sort_values("optimizer")
    rows = rows.assign(arm=optimizer_labels(rows)["optimizer"])
    fig, ((ax,),) = figure(width=8)
    drawn = interval_points(ax, rows, "component", PAPER_COMPONENTS, hue="arm")
    mark_paper(ax, paper_rows(tables, ["exp2_optimizer"]), drawn, "position")
    error_axis(ax)
    ax.set_title(f"Optimizer comparison ({n_label(rows)})")
    legend_outside(ax)
    save(fig, png, pdf)


def _spectrum(rows: pd.DataFrame, prefix: str) -> pd.DataFrame:
    part = rows[rows["component"].str.startswith(prefix)]
    return part.assign(index=part["component"].str.removeprefix(prefix).astype(int))


def fig3_gradient(tables: Tables, png: str, pdf: str) -> None:
    """Figure 3: gradient per singular value, singular values along training, and the
    per-trial gradient ratio against the target's condition number."""
    rows = product_rows(tables["exp3_gradient"], "all")
    grads, sigmas = _spectrum(rows, "grad_sigma_"), _spectrum(rows, "sigma_")
    q = int(grads["index"].max())
    picks = sorted({1, max(q // 4, 1), max(q // 2, 1), max(3 * q // 4, 1), q})
    fig, ((left, middle, right),) = figure(3, width=4.8)
    colors = palette(len(picks))
    for color, i in zip(colors, picks, strict=True):
        g = grads[(grads["index"] == i) & (grads["epoch"] > 0)].sort_values("epoch")
        left.plot(g["epoch"], g["trained_median"], color=color, label=f"sigma_{i}")
        s = sigmas[sigmas["index"] == i].sort_values("epoch")
        middle.plot(s["epoch"], s["trained_median"], color=color, label=f"sigma_{i}")
        middle.axhline(s["target_mean"].iloc[0], color=color, ls="--", lw=0.8)
    decade_scale(left)
    integer_axis(left.xaxis, middle.xaxis)
    left.set_xlabel("epoch")
    left.set_ylabel("|dL/d sigma_i| (median over trials)")
    left.set_title("gradient felt by singular value i")
    middle.set_xlabel("epoch")
    middle.set_ylabel("sigma_i, median (dashed: target)")
    middle.set_title("singular value i")
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncol=len(picks))
    per_trial = tables["exp3_gradient_per_trial"]
    ratio = arm(per_trial, {"component": "gradient_ratio"})
    kappa = arm(per_trial, {"component": "condition_number", "field": "target"})
    ratio, kappa = ratio.align(kappa, join="inner")
    right.plot(kappa, ratio, "o", color="C0")
    span = np.array([kappa.min(), kappa.max()])
    right.plot(span, span, "k--", lw=0.8, label="ratio = target kappa")
    decade_scale(right, "x")
    decade_scale(right, "y")
    for _, claim in paper_rows(tables, ["exp3_gradient"]).iterrows():  # the paper's 10-100x
        label = f"paper: {claim['low']:g}-{claim['high']:g}x"
        right.axhspan(claim["low"], claim["high"], color="grey", alpha=0.2, label=label)
    rho = scipy_stats.spearmanr(kappa, ratio).statistic
    right.set_xlabel("target condition number kappa(W*)")
    right.set_ylabel("gradient ratio |g_1| / |g_min| (per trial)")
    right.set_title(f"Spearman rho = {rho:.2f}")
    right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.18))
    fig.suptitle(
        f"Gradient signal: top/bottom ratio {np.median(ratio):.0f} (median over trials "
        f"of the median over epochs; {n_label(grads)})"
    )
    save(fig, png, pdf)


def strategy_improvement(rows: pd.DataFrame, component: str) -> dict[str, float]:
    """1 - mean(strategy) / mean(standard) for one component, per strategy: the paper's
    statistic, as its claims (exp4_*_kappa) are judged."""
    means = rows[rows["component"] == component].set_index("strategy")["mean"]
    return {s: float(1 - means[s] / means["standard"]) for s in means.index}


def fig4_strategies(tables: Tables, png: str, pdf: str) -> None:
    """Figure 4: errors per corrective strategy, with the improvements of their means over
    standard in the legend."""
    rows = product_rows(tables["exp4_strategies"])
    norms = strategy_improvement(rows, "row_norms")
    kappa = strategy_improvement(rows, "condition_number")
    labels = {s: f"{s} (means: norms {norms[s]:+.0%}, kappa {kappa[s]:+.0%})" for s in norms}
    shown = ["row_norms", "condition_number", "log_condition_number", "spectral_gap", "overall"]
    fig, ((ax,),) = figure(width=8)
    groups = {c: c.replace("_", " ") for c in shown}
    drawn = interval_points(ax, rows, "component", groups, hue="strategy", labels=labels)
    mark_paper(ax, paper_rows(tables, ["exp4_strategies"]), drawn, "position")
    error_axis(ax)
    ax.set_title(f"Corrective strategies ({n_label(rows)})")
    legend_outside(ax, fontsize=8)
    save(fig, png, pdf)


def fig5_dynamics(tables: Tables, png: str, pdf: str) -> None:
    """Figure 5: error of every component at every epoch."""
    rows = product_rows(tables["exp5_dynamics"], "all")
    rows = rows[rows["epoch"] > 0]
    fig = small_multiples(rows, "epoch", PAPER_COMPONENTS, "Error dynamics", None)
    save(fig, png, pdf)


def fig6_structures(tables: Tables, png: str, pdf: str) -> None:
    """Figure 6: standard vs multipliers per target structure."""
    rows = product_rows(tables["exp6_structures"])
    structures = list(dict.fromkeys(rows["structure"]))
    fig, axes = figure(len(structures), width=4.6)
    shown = ["row_norms", "col_norms", "pseudo_condition_number", "spectral_gap", "overall"]
    paper = paper_rows(tables, ["exp6_structures"])
    for ax, structure in zip(axes[0], structures, strict=True):
        part = rows[rows["structure"] == structure]
        groups = {c: c.replace("_", " ") for c in shown}
        drawn = interval_points(ax, part, "component", groups, hue="strategy")
        mark_paper(ax, paper, drawn, "position")
        error_axis(ax)
        imp = strategy_improvement(part, "overall")
        ax.set_title(f"{structure}: multipliers {imp.get('multipliers', np.nan):+.0%} overall")
    fig.legend(*legend_entries(axes.flat), loc="outside right upper")
    fig.suptitle(f"Multipliers across structures ({n_label(rows)})")
    save(fig, png, pdf)


def _depth_arms(table: pd.DataFrame) -> pd.DataFrame:
    """exp7's rows with column ``layers``, a network's number of weight matrices (its
    ``layer*`` matrices; 1 for the single matrix), and ``arm``, its label."""
    depth = table["depth"].fillna(0).astype(str) if "depth" in table else ""
    network = table["model"] + " " + depth
    is_layer = table["matrix"].str.startswith("layer")
    counts = table[is_layer].groupby(network[is_layer])["matrix"].nunique()
    layers = network.map(counts).fillna(1).astype(int)
    names = {"linear": "linear", "deep_linear": "deep linear", "relu_mlp": "ReLU MLP"}
    name = table["model"].map(names).fillna(table["model"])
    return table.assign(layers=layers, arm=name + " L=" + layers.astype(str))


def fig7_depth(tables: Tables, png: str, pdf: str) -> None:
    """Figure 7: condition-number error and per-layer condition numbers vs depth, linear
    networks by depth (1, 2, 3, ...) then the others."""
    table = tables["exp7_depth"]
    last = _depth_arms(table[table["epoch"] == table["epoch"].max()])
    linear = last["model"].isin(["linear", "deep_linear"])
    order = last.assign(linear=~linear).sort_values(["linear", "layers", "model"])
    arms = {a: a for a in dict.fromkeys(order["arm"])}
    fig, ((left, middle, right),) = figure(3, width=5)
    product = last[last["matrix"] == "product"]
    for ax, component in ((left, "condition_number"), (right, "overall")):
        drawn = interval_points(ax, product[product["component"] == component], "arm", arms)
        mark_paper(ax, paper_rows(tables, ["exp7_depth"]), drawn, "position")
    error_axis(left, "relative error (median, 95% CI)")
    left.set_title("condition number of the product")
    error_axis(right, "relative error (mean, 95% CI)")
    right.set_title("overall error of the product")
    kappas = last[last["component"] == "condition_number"].sort_values("matrix")
    matrices = kappas["matrix"].unique()
    drawn = interval_points(
        middle,
        kappas.assign(estimate=kappas["trained_median"], ci_low=np.nan, ci_high=np.nan),
        "arm",
        arms,
        hue="matrix",
        labels={m: f"{m} (trained)" for m in matrices},
    )
    mark_paper(middle, paper_rows(tables, ["exp7_depth"], field="trained"), drawn, "position")
    middle.axhline(
        float(kappas.loc[kappas["matrix"] == "product", "target_mean"].iloc[0]),
        color="black",
        lw=1,
        label="target (product)",
    )
    decade_scale(middle)
    middle.set_ylabel("condition number (median over trials)")
    middle.set_title("trained matrices vs the target")
    for ax in (left, middle, right):
        ax.set_xlabel("network")
    # one legend below the panels: the middle panel's matrices, then the papers' marks
    entries = legend_entries([middle, left, right])
    fig.legend(*entries, loc="outside lower center", ncol=min(len(entries[0]), 5), fontsize=8)
    fig.suptitle(f"Depth ({n_label(product)})")
    save(fig, png, pdf)


# fig8's ratios: the paper's (a ratio of means, its point values) and the law's (a ratio of
# medians, on which "the kappa error exceeds the norm error" is judged)
RATIO_LINES = [
    ("mean", "k:", "mean kappa / mean norm error (the paper's ratio)"),
    ("median", "k--", "median kappa / median norm error (the law's)"),
]


def fig8_sensitivity(tables: Tables, png: str, pdf: str) -> None:
    """Figure 8: condition-number and row-norm errors vs learning rate and weight decay."""
    fig, axes = figure(2, width=6)
    for ax, (name, x) in zip(
        axes[0], [("exp8_lr", "lr"), ("exp8_wd", "weight_decay")], strict=True
    ):
        rows = product_rows(tables[name])
        shown = {"condition_number": "condition number", "row_norms": "row norms"}
        lines(ax, rows, x, shown)
        mark_paper(ax, paper_rows(tables, [name]), rows, x)
        ax.set_xscale("symlog", linthresh=1e-4) if x == "weight_decay" else decade_scale(ax, "x")
        error_axis(ax)
        ax.set_xlabel(x.replace("_", " "))
        twin = ax.twinx()
        for statistic, style, label in RATIO_LINES:
            values = rows.pivot_table(index=x, columns="component", values=statistic)
            ratio = values["condition_number"] / values["row_norms"]
            twin.plot(ratio.index, ratio, style, marker="x", label=label)
        error_axis(twin, "kappa / norm error ratio")
        twin.grid(False)
        ax.set_title(f"{x.replace('_', ' ')} ({n_label(rows)})")
    lines_, labels = ax.get_legend_handles_labels()
    twin_lines, twin_labels = twin.get_legend_handles_labels()
    fig.legend(lines_ + twin_lines, labels + twin_labels, loc="outside lower center", ncol=3)
    save(fig, png, pdf)


def fig9_long(tables: Tables, png: str, pdf: str) -> None:
    """Figure 9: errors over 1000 epochs and the cond/norm error ratio."""
    rows = product_rows(tables["exp9_long"], "all")
    rows = rows[rows["epoch"] > 0]
    fig, ((left, right),) = figure(2, width=6)
    shown = {"row_norms": "row norms", "condition_number": "condition number", "overall": "overall"}
    lines(left, rows, "epoch", shown, marker=None)
    mark_paper(left, paper_rows(tables, ["exp9_long"]), rows, "epoch")
    decade_scale(left)
    left.set_xlabel("epoch")
    left.set_ylabel(ERROR_LABEL)
    left.set_title("errors of the product")
    legend_outside(left)
    means = rows.pivot_table(index="epoch", columns="component", values="mean")
    right.plot(means.index, means["condition_number"] / means["row_norms"])
    decade_scale(right)
    integer_axis(right.xaxis)
    right.set_xlabel("epoch")
    right.set_ylabel("mean kappa error /\nmean row-norm error")
    right.set_title("condition-number error over norm error")
    fig.suptitle(f"Long training ({n_label(rows)})")
    save(fig, png, pdf)


def ctrl_effective_rank(tables: Tables, png: str, pdf: str) -> None:
    """Control: effective-rank error vs dimension at every threshold."""
    rows = tables["exp1_dimension"]
    rows = rows[(rows["matrix"] == "product") & (rows["epoch"] == rows["epoch"].max())]
    ranks = sorted(c for c in rows["component"].unique() if c.startswith("effective_rank_t"))
    fig, axes = figure(len(ranks), width=4)
    for ax, rank in zip(axes[0], ranks, strict=True):
        lines(ax, rows, "dim", {rank: "threshold " + rank.removeprefix("effective_rank_t")})
        sweep_axis(ax, rows["dim"])
        ax.set_xlabel("dimension d")
        error_axis(ax, "relative error (median, 95% CI)")
        ax.set_title("threshold " + rank.removeprefix("effective_rank_t"))
    fig.suptitle(f"Effective rank by threshold ({n_label(rows)})")
    save(fig, png, pdf)


def _components_vs(tables: Tables, png: str, pdf: str, name: str, x: str, title: str) -> None:
    """One panel per component against setting ``x`` of experiment ``name`` (norm errors lie
    within 0.1 % of one another: in one panel their lines and bands hide each other)."""
    rows = product_rows(tables[name])
    log_x = "symlog" if any(v > 0 for v in rows[x].unique()) else None
    save(small_multiples(rows, x, PAPER_COMPONENTS, title, log_x), png, pdf)


def ctrl_noise(tables: Tables, png: str, pdf: str) -> None:
    """Control: component errors vs label noise."""
    _components_vs(tables, png, pdf, "ctrl_noise", "noise_std", "Errors vs label noise")


def ctrl_multiplier_lr(tables: Tables, png: str, pdf: str) -> None:
    """Control: component errors vs the multipliers' learning-rate ratio."""
    _components_vs(
        tables, png, pdf, "ctrl_multiplier_lr", "multiplier_lr_ratio", "Multiplier learning rate"
    )


def ctrl_optimizer_dims(tables: Tables, png: str, pdf: str) -> None:
    """Control: SGD vs Adam per component across dimensions, one panel per component."""
    rows = optimizer_labels(product_rows(tables["ctrl_optimizer_dims"]))
    shown = ["row_norms", "condition_number", "overall"]
    fig, axes = figure(len(shown), width=4.4)
    for ax, component in zip(axes[0], shown, strict=True):
        grouped_lines(ax, rows[rows["component"] == component], "dim", "optimizer")
        sweep_axis(ax, rows["dim"])
        ax.set_xlabel("dimension d")
        error_axis(ax)
        ax.set_title(PAPER_COMPONENTS[component])
        ax.legend(fontsize=8)
    fig.suptitle(f"SGD vs Adam across dimensions ({n_label(rows)})")
    save(fig, png, pdf)
