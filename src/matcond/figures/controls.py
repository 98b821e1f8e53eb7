"""Figures of our controls and analyses: the theory, the readings of the paper's ambiguous
settings, the spectral regulariser's regimes, batch size, structured weight decay and the
attention block."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
from matplotlib.patches import Patch, Rectangle

from matcond.claims.measure import THEORY_BAND
from matcond.claims.readings import measured_first
from matcond.core.arms import arm
from matcond.core.trials import format_value
from matcond.figures.axes import decade_scale, integer_axis, spans_decades, sweep_axis
from matcond.figures.marks import legend_outside
from matcond.figures.style import (
    ERROR_LABEL,
    Tables,
    error_axis,
    figure,
    grouped_lines,
    interval_line,
    interval_points,
    n_label,
    palette,
    product_rows,
    save,
    whiskers,
)
from matcond.stats.summary import headline

LOG_KAPPA_LINEAR = 1e-3  # ctrl_spectral_reg's trace: linear within this deviation of log kappa
VERDICT_COLORS = {
    "reproduced": "#4daf4a",
    "consistent": "#80cdc1",
    "direction only": "#b8e186",
    "inconclusive": "#d9d9d9",
    "not reproduced": "#e41a1c",
    "too few trials": "#f0f0f0",
    "settings differ": "#cab2d6",
    "not comparable": "#ffffff",
    "not configured": "#ffffff",
}
# The readings figure's cell of a claim its column's reading does not read (another
# experiment's arm): white, hatched in this grey, apart from every verdict's solid colour
# (a solid grey there made the figure mostly grey, half its cells being such)
NOT_READ = "#b0b0b0"
NOT_READ_HATCH = "////"


def _theory_panel(ax, rows: pd.DataFrame, x: str, by: str | None = None) -> None:
    """Measured statistic with its interval (markers) and the prediction (line) against x."""
    if rows.empty:
        return
    groups = [(None, rows)] if by is None else list(rows.groupby(by))
    for color, (value, part) in zip(palette(len(groups)), groups, strict=True):
        part = part.sort_values(x)
        suffix = "" if value is None else f" ({by} {format_value(value)})"
        label = "measured" + suffix
        whiskers(
            ax, part[x], part["measured"], part["ci_low"], part["ci_high"], color=color, label=label
        )
        ax.plot(part[x], part["predicted"], "--", color=color, label="predicted" + suffix)


def theory(tables: Tables, png: str, pdf: str) -> None:
    """The first-order theory against the measurements (docs/theory.md)."""
    table = tables["theory"]
    kappa = table[table["component"] == "condition_number"]
    last = kappa.groupby("experiment")["epoch"].transform("max") == kappa["epoch"]
    fig, axes = figure(2, width=6, nrows=2, height=4.2)
    (by_dim, by_epoch), (by_noise, by_batch) = axes
    dims = kappa[kappa["experiment"].isin(["exp1_dimension", "exp1_large_dims"]) & last]
    _theory_panel(by_dim, dims, "dim")
    sweep_axis(by_dim, dims["dim"])
    decade_scale(by_dim)
    by_dim.set_xlabel("dimension d")
    by_dim.set_title("kappa error vs d (exp1): median, 95% CI")
    long = table[table["experiment"].isin(["exp9_long", "ctrl_noise_free"])]
    for color, ((experiment, component), part) in zip(
        palette(4), long.groupby(["experiment", "component"]), strict=False
    ):
        part = part.sort_values("epoch")
        label = f"{experiment}, {component.replace('_', ' ')}"
        interval_line(
            by_epoch, part["epoch"], part["measured"], part["ci_low"], part["ci_high"], color, label
        )
        by_epoch.plot(part["epoch"], part["predicted"], "--", color=color, lw=1)
    decade_scale(by_epoch)
    integer_axis(by_epoch.xaxis)
    by_epoch.set_xlabel("epoch")
    by_epoch.set_title("d = 128 along training (dashed: predicted)")
    noise = kappa[(kappa["experiment"] == "ctrl_noise") & last]
    _theory_panel(by_noise, noise, "noise_std")
    by_noise.set_xscale("symlog", linthresh=1e-3)
    decade_scale(by_noise)
    by_noise.set_xlabel("label noise std")
    by_noise.set_title("kappa error vs label noise (d = 64)")
    batch = kappa[(kappa["experiment"] == "ctrl_batch_size") & last]
    _theory_panel(by_batch, batch, "batch_size", by="dim")
    sweep_axis(by_batch, batch["batch_size"])
    decade_scale(by_batch)
    by_batch.set_xlabel("batch size")
    by_batch.set_title("kappa error vs batch size")
    for ax in axes.flat:
        ax.set_ylabel(ERROR_LABEL)
        if ax.has_data():
            legend_outside(ax, fontsize=7)
        else:
            ax.set_visible(False)
    inside = kappa["agrees"]
    rows = table[table["component"] == "row_norms"]
    fig.suptitle(
        f"Theory vs measurement: kappa prediction inside the 95% CI in {int(inside.sum())} of "
        f"{len(inside)} cells; row-norm prediction within "
        f"{rows['deviation'].abs().max():.1%} of the measured mean"
    )
    save(fig, png, pdf)


def theory_held_out(tables: Tables, png: str, pdf: str) -> None:
    """The theory on the held-out grid: predicted / measured per cell against the step size
    relative to the batch, lr (d + 1) / B, and against d, with the checks' band."""
    table = tables["theory"]
    table = table[table["experiment"] == "theory_held_out"]
    fig, ((by_step, by_dim),) = figure(2, width=5)
    for component, color in zip(("condition_number", "row_norms"), palette(2), strict=True):
        rows = table[table["component"] == component]
        ratio = rows["predicted"] / rows["measured"]
        low, high = rows["predicted"] / rows["ci_high"], rows["predicted"] / rows["ci_low"]
        step = rows["lr"] * (rows["dim"] + 1) / rows["batch_size"]
        label = f"{component.replace('_', ' ')} ({headline(component)})"
        for ax, x in ((by_step, step), (by_dim, rows["dim"])):
            whiskers(ax, x, ratio, low, high, capsize=2, color=color, label=label)
    for ax, xlabel in ((by_step, "lr (d + 1) / batch size"), (by_dim, "dimension d")):
        ax.axhspan(*THEORY_BAND, color="0.85", zorder=0, label="band of the checks")
        ax.axhline(1.0, color="black", lw=0.8)
        if decade_scale(ax):
            ax.set_yticks([0.25, 0.5, THEORY_BAND[0], 1.0, THEORY_BAND[1], 2.0, 4.0])
            ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(mticker.NullFormatter())
        ax.set_xlabel(xlabel)
        ax.set_ylabel("predicted / measured")
    if decade_scale(by_step, "x"):
        by_step.xaxis.set_minor_formatter(mticker.NullFormatter())  # decades only: no overlaps
    else:
        by_step.xaxis.set_major_locator(mticker.MaxNLocator(4))  # 0.0025 ... side by side overlap
    decade_scale(by_dim, "x")  # held-out d are drawn at random: labelled by a locator
    integer_axis(by_dim.xaxis)
    legend_outside(by_dim, fontsize=7)
    kappa = table[table["component"] == "condition_number"]
    inside = ((kappa["predicted"] / kappa["ci_high"] >= THEORY_BAND[0])
              & (kappa["predicted"] / kappa["ci_low"] <= THEORY_BAND[1]))  # fmt: skip
    fig.suptitle(
        f"The theory off its grid: {len(kappa)} random cells, kappa's interval inside "
        f"[{THEORY_BAND[0]}, {THEORY_BAND[1]}] in {int(inside.sum())} "
        f"(n = {'-'.join(map(str, sorted({kappa['n'].min(), kappa['n'].max()})))} per cell)"
    )
    save(fig, png, pdf)


def readings(tables: Tables, png: str, pdf: str) -> None:
    """Which reading of the paper's ambiguous settings reproduces which claim."""
    table = measured_first(tables["readings"])
    table = table.assign(column=table["arm"])
    claims = list(dict.fromkeys(table["claim_id"]))
    columns = list(dict.fromkeys(table["column"]))
    verdicts = table.pivot(index="claim_id", columns="column", values="verdict")
    measured = table.pivot(index="claim_id", columns="column", values="measured")
    verdicts, measured = verdicts.reindex(claims)[columns], measured.reindex(claims)[columns]
    names = list(VERDICT_COLORS)
    # a reading that does not read a claim (another experiment's arm) leaves its cell hatched
    # (NOT_READ), apart from the plain white of a reading that reads it and cannot compare
    codes = verdicts.apply(lambda col: col.map({v: i for i, v in enumerate(names)})).to_numpy(float)
    cmap = mcolors.ListedColormap(list(VERDICT_COLORS.values())).with_extremes(bad="white")
    row = 0.32 if len(claims) <= 60 else 0.22
    fig, ((ax,),) = figure(width=1.0 * len(columns) + 4, height=row * len(claims) + 2.5)
    ax.imshow(codes, cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5, aspect="auto")
    for i, j in zip(*np.nonzero(np.isnan(codes)), strict=True):
        ax.add_patch(
            Rectangle(
                (j - 0.5, i - 0.5), 1, 1, fill=False, hatch=NOT_READ_HATCH, edgecolor=NOT_READ, lw=0
            )
        )
    for i in range(len(claims)):
        for j in range(len(columns)):
            value = measured.iat[i, j]
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(columns)), columns, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(claims)), claims, fontsize=7)
    ax.set_xlabel("reading (an arm of a control experiment)")
    ax.set_ylabel("claim")
    ax.grid(False)
    handles = [
        Patch(facecolor=VERDICT_COLORS[v], edgecolor="black", linewidth=0.5, label=v)
        for v in names
        if v in set(verdicts.stack().dropna())
    ]
    if np.isnan(codes).any():
        handles.append(
            Patch(facecolor="white", hatch=NOT_READ_HATCH, edgecolor=NOT_READ, label="not read")
        )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title("Verdict of each claim under each reading (cell: the measured value)")
    save(fig, png, pdf)


def _arms_vs_dim(
    tables: Tables,
    png: str,
    pdf: str,
    name: str,
    arm_of,
    title: str = "one line per reading of the paper's setting",
) -> None:
    """kappa and row-norm errors vs d per arm (``arm_of(rows)`` names it), per optimizer."""
    rows = product_rows(tables[name])
    rows = rows.assign(arm=arm_of(rows))
    if "optimizer" not in rows:  # an experiment of one optimizer: one column, no label
        rows = rows.assign(optimizer="")
    optimizers = sorted(rows["optimizer"].unique())
    fig, axes = figure(len(optimizers), width=5.5, nrows=2, height=3.8)
    for col, optimizer in enumerate(optimizers):
        for row, component in enumerate(["condition_number", "row_norms"]):
            ax = axes[row][col]
            part = rows[(rows["optimizer"] == optimizer) & (rows["component"] == component)]
            grouped_lines(ax, part, "dim", "arm")
            sweep_axis(ax, part["dim"])
            ax.set_xlabel("dimension d")
            error_axis(ax)
            ax.set_title(f"{optimizer}: " * bool(optimizer) + component.replace("_", " "))
        legend_outside(axes[0][col], fontsize=7)
    fig.suptitle(f"{name}: {title} ({n_label(rows)})")
    save(fig, png, pdf)


def _init_label(rows: pd.DataFrame) -> pd.Series:
    scale = rows["init_scale"].map(lambda v: "" if pd.isna(v) else f" {v:g}")
    return rows["init"] + scale


def ctrl_init(tables: Tables, png: str, pdf: str) -> None:
    """Control: the five readings of the paper's init across d, SGD and Adam."""
    _arms_vs_dim(tables, png, pdf, "ctrl_init", _init_label)


def ctrl_target_scale(tables: Tables, png: str, pdf: str) -> None:
    """Control: the target's row scale read as a std (0.25) or as a variance (std 0.5)."""
    _arms_vs_dim(
        tables, png, pdf, "ctrl_target_scale", lambda r: "row_log_std " + r["row_log_std"].map(str)
    )


def _momentum_label(rows: pd.DataFrame) -> pd.Series:
    nesterov = rows["nesterov"].map({True: ", Nesterov", False: ""})
    return (
        "momentum "
        + rows["momentum"].map("{:g}".format)
        + nesterov
        + ", lr "
        + rows["lr"].map("{:g}".format)
    )


def ctrl_momentum(tables: Tables, png: str, pdf: str) -> None:
    """Control: SGD with momentum (plain, Nesterov, at the effective step of plain SGD)."""
    _arms_vs_dim(tables, png, pdf, "ctrl_momentum", _momentum_label, "one line per SGD variant")


def _heatmap(
    ax, values: pd.DataFrame, fmt: str, title: str, log: bool, cmap: str, label: str
) -> None:
    data = values.to_numpy(float)
    if not log:
        norm = mcolors.TwoSlopeNorm(vcenter=0.0, vmin=-1.0, vmax=1.0)
    elif spans_decades(data[np.isfinite(data)]):
        norm = mcolors.LogNorm()
    else:  # the figures' rule: log only over more than a decade, else linear from 0
        norm = mcolors.Normalize(vmin=0.0, vmax=np.nanmax(data))
    image = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto")
    for (i, j), value in np.ndenumerate(data):
        red, green, blue, _ = image.cmap(norm(value))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        text = format(value, fmt)
        ax.text(
            j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black"
        )
    ax.set_xticks(range(values.shape[1]), [f"{v:g}" for v in values.columns])
    ax.set_yticks(range(values.shape[0]), [f"{v:g}" for v in values.index])
    ax.set_xlabel("gradient clip (Frobenius norm)")
    ax.set_ylabel("spectral_lambda")
    ax.set_title(title)
    ax.grid(False)
    colorbar = ax.figure.colorbar(image, ax=ax, shrink=0.8, label=label)
    colorbar.ax.yaxis.set_minor_formatter(mticker.NullFormatter())


def ctrl_spectral_reg(tables: Tables, png: str, pdf: str) -> None:
    """Control: spectral regularisation over weight x clip: kappa error and oscillation."""
    rows = product_rows(tables["ctrl_spectral_reg"])
    per_trial = tables["ctrl_spectral_reg_per_trial"]
    kappa = rows[rows["component"] == "condition_number"].pivot(
        index="spectral_lambda", columns="spectral_clip", values="estimate"
    )
    autocorr = kappa.copy()
    for lam in kappa.index:
        for clip in kappa.columns:
            where = {"component": "log_kappa_autocorrelation"}
            where |= {"spectral_lambda": float(lam), "spectral_clip": float(clip)}
            autocorr.loc[lam, clip] = float(np.median(arm(per_trial, where)))
    calm = autocorr >= 0
    chosen = kappa.where(calm).stack().idxmin() if calm.to_numpy().any() else None
    fig, ((left, middle, right),) = figure(3, width=4.8)
    _heatmap(
        left, kappa, ".2g", "median kappa error at the last epoch", True, "viridis", "kappa error"
    )
    _heatmap(
        middle,
        autocorr,
        ".2f",
        "lag-1 autocorrelation of log kappa error",
        False,
        "RdBu",
        "autocorrelation (< 0: oscillation)",
    )
    if chosen is not None:
        i, j = list(kappa.index).index(chosen[0]), list(kappa.columns).index(chosen[1])
        for ax in (left, middle):
            label = "lowest error without oscillation"
            frame = Rectangle(
                (j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="orange", linewidth=3, label=label
            )
            ax.add_patch(frame)
        left.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18), fontsize=7)
    seed = int(per_trial["seed"].min())
    # the chosen cell, the most oscillating one and the lowest error overall
    shown = [autocorr.stack().idxmin(), kappa.stack().idxmin()]
    shown = list(dict.fromkeys([*([chosen] if chosen is not None else []), *shown]))
    styles = [("o", "-"), ("s", "--"), ("^", ":")]
    for color, (lam, clip), (marker, line) in zip(palette(3), shown, styles, strict=False):
        one = per_trial[
            (per_trial["seed"] == seed)
            & np.isclose(per_trial["spectral_lambda"], lam)
            & np.isclose(per_trial["spectral_clip"], clip)
            & (per_trial["component"] == "log_condition_number")
        ].sort_values("epoch")
        tail = one.tail(50)
        right.plot(
            tail["epoch"],
            tail["trained"] - tail["target"],
            color=color,
            marker=marker,
            markersize=3,
            linestyle=line,
            label=f"lambda {lam:g}, clip {clip:g}",
            zorder=3,
        )
    # symmetric-log: a calm trial's deviations (~0.01) beside an oscillation's (~0.5)
    right.axhline(0, color="grey", lw=0.6, zorder=1)
    right.margins(y=0.1)
    right.set_yscale("symlog", linthresh=LOG_KAPPA_LINEAR)
    right.set_xlabel("epoch")
    right.set_ylabel(
        f"log kappa - log kappa* (seed {seed})\nsymmetric log, linear within ±{LOG_KAPPA_LINEAR:g}"
    )
    right.set_title("the last 50 epochs of one trial")
    right.legend(loc="upper left", bbox_to_anchor=(0.0, -0.18), fontsize=7)
    fig.suptitle(f"Spectral regularisation: weight x clip ({n_label(rows)})")
    save(fig, png, pdf)


def ctrl_batch_size(tables: Tables, png: str, pdf: str) -> None:
    """Control: kappa and row-norm errors vs batch size, per dimension."""
    rows = product_rows(tables["ctrl_batch_size"])
    fig, axes = figure(2, width=5.5)
    for ax, component in zip(axes[0], ["condition_number", "row_norms"], strict=True):
        part = rows[rows["component"] == component]
        grouped_lines(ax, part, "batch_size", "dim", lambda d: f"d = {d}")
        sweep_axis(ax, part["batch_size"])
        ax.set_xlabel("batch size")
        error_axis(ax)
        ax.set_title(component.replace("_", " "))
        ax.legend(fontsize=8)
    fig.suptitle(f"Batch size ({n_label(rows)})")
    save(fig, png, pdf)


def ctrl_structured_wd(tables: Tables, png: str, pdf: str) -> None:
    """Control: structured weight decay (on log kappa) against plain L2 weight decay."""
    rows = product_rows(tables["ctrl_structured_wd"])
    lam = rows["spectral_decay_lambda"] if "spectral_decay_lambda" in rows else np.nan
    label = np.where(
        rows["strategy"] == "spectral_decay",
        "log-kappa decay " + pd.Series(lam, index=rows.index).map("{:g}".format),
        "L2 weight decay " + rows["weight_decay"].map("{:g}".format),
    )
    rows = rows.assign(arm=label).sort_values("arm")
    shown = ["row_norms", "condition_number", "log_condition_number", "overall"]
    fig, ((ax,),) = figure(width=8)
    interval_points(ax, rows, "component", {c: c.replace("_", " ") for c in shown}, hue="arm")
    error_axis(ax)
    ax.set_title(f"Structured vs plain weight decay ({n_label(rows)})")
    legend_outside(ax, fontsize=8)
    save(fig, png, pdf)


def exp_attention(tables: Tables, png: str, pdf: str) -> None:
    """The attention block's recorded products against the single matrix, per optimizer."""
    table = tables["exp_attention"]
    rows = table[table["epoch"] == table["epoch"].max()]
    rows = rows.assign(
        arm=np.where(rows["model"] == "linear", "linear: W", "attention: " + rows["matrix"])
    )
    optimizers = sorted(rows["optimizer"].unique())
    fig, axes = figure(len(optimizers), width=6)
    shown = ["row_norms", "singular_values", "condition_number", "spectral_gap", "overall"]
    for ax, optimizer in zip(axes[0], optimizers, strict=True):
        part = rows[rows["optimizer"] == optimizer].sort_values("arm")
        groups = {c: c.replace("_", " ") for c in shown}
        interval_points(ax, part, "component", groups, hue="arm")
        error_axis(ax)
        ax.set_title(f"{optimizer} (lr {part['lr'].iloc[0]:g})")
    legend_outside(axes[0][-1], fontsize=8)
    fig.suptitle(f"Attention block vs one matrix ({n_label(rows)})")
    save(fig, png, pdf)
