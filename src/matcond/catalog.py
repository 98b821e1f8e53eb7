"""The figures: the experiment tables each one draws, its report group and its caption.

Light on purpose (no plotting imports): the Snakefile reads it at parse time. The drawing code
is in matcond.plotting, one function per figure under the same name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A figure: the experiments whose tables it reads, its report category and caption."""

    experiments: tuple[str, ...]
    category: str
    caption: str


FIGURES = {
    "fig1_dimension": Figure(
        ("exp1_dimension",),
        "Experiment 1: dimension",
        "Relative error of each component at the last epoch vs dimension, mean ± 1 std over trials "
        "(symmetric-log axis).",
    ),
    "fig2_optimizer": Figure(
        ("exp2_optimizer",),
        "Experiment 2: optimizer",
        "SGD vs Adam: relative error of each component at the last epoch, mean ± 1 std.",
    ),
    "fig3_gradient": Figure(
        ("exp3_gradient",),
        "Experiment 3: gradient signal",
        "Left: |dL/d sigma_i| = |u_i^T grad v_i| of the last batch of each epoch for top, middle "
        "and bottom singular values (mean over trials). Right: those singular values (solid) and "
        "the target's (dashed). The title gives the median over epochs of the top/bottom ratio.",
    ),
    "fig4_strategies": Figure(
        ("exp4_strategies",),
        "Experiment 4: corrective strategies",
        "Relative error per strategy at the last epoch, mean ± 1 std; the legend gives each "
        "strategy's improvement over standard training for row norms and condition number.",
    ),
    "fig5_dynamics": Figure(
        ("exp5_dynamics",),
        "Experiment 5: dynamics",
        "Relative error of each component at every epoch, mean ± 1 std band.",
    ),
    "fig6_structures": Figure(
        ("exp6_structures",),
        "Experiment 6: multipliers across structures",
        "Standard training vs learnable multipliers, paired on identical targets and data, per "
        "target structure; mean ± 1 std at the last epoch.",
    ),
    "fig7_depth": Figure(
        ("exp7_depth",),
        "Experiment 7: depth",
        "Left: condition-number error of the end-to-end (product) matrix per model, mean ± 1 std "
        "and median (dot). Middle: condition number of the product and of each layer (median over "
        "trials) against the target's (line). Right: overall error of the product.",
    ),
    "fig8_sensitivity": Figure(
        ("exp8_lr", "exp8_wd"),
        "Experiment 8: hyper-parameters",
        "Condition-number and row-norm errors at the last epoch vs learning rate (left) and "
        "weight decay (right), mean ± 1 std; the dotted line is their ratio (right axis).",
    ),
    "fig9_long": Figure(
        ("exp9_long",),
        "Experiment 9: long training",
        "Left: errors along 1000 epochs, mean ± 1 std. Right: condition-number error over "
        "row-norm error (ratio of means).",
    ),
    "ctrl_effective_rank": Figure(
        ("exp1_dimension",),
        "Review controls",
        "Effective-rank error vs dimension for each threshold t (#{i: s_i > t s_1}).",
    ),
    "ctrl_noise": Figure(
        ("ctrl_noise",),
        "Review controls",
        "Component errors at the last epoch vs label-noise standard deviation.",
    ),
    "ctrl_multiplier_lr": Figure(
        ("ctrl_multiplier_lr",),
        "Review controls",
        "Component errors with learnable multipliers vs the multipliers' learning-rate ratio.",
    ),
    "ctrl_optimizer_dims": Figure(
        ("ctrl_optimizer_dims",),
        "Review controls",
        "SGD (solid) vs Adam (dashed) per component across dimensions, mean over trials.",
    ),
}
