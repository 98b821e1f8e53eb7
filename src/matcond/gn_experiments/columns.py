"""The columns of the GN sweeps' tables (:data:`SWEEP_COLUMNS`; the package docstring says
what they mean). Plain lists, importable without torch: the claims check reads them before
any job runs."""

from __future__ import annotations

GN_TABLE_PREFIX = "gn_"  # results/tables/gn_{sweep}: a sweep's table, as claims name it

EXACT_COLUMNS = [
    "kappa",
    "rank",
    "rank_source",
    "gap_at_cut",
    "relative_error",
    "reliable",
    "reliability",
    "solver",
]

PER_LAYER_COLUMNS = [
    "term_per_layer",
    "gamma_per_layer",
    "kappa_sq_outer_per_layer",
    "kappa_sq_inner_per_layer",
    "lambda_min_outer_per_layer",
    "lambda_min_inner_per_layer",
]

DATA_COLUMNS = ["sweep", "dataset", "whitened", "n_samples", "d", "k"]
LINEAR_COLUMNS = [
    *EXACT_COLUMNS,
    "bound_convex",
    "bound_max",
    "tightness_convex",
    "tightness_max",
    "kappa_sigma",
]
DEPTH_COLUMNS = [*DATA_COLUMNS, "width_rule", "width_param", "width", "depth", "seed"]
LEAKY_COLUMNS = [
    *DATA_COLUMNS,
    "width",
    "alpha",
    "seed",
    *EXACT_COLUMNS,
    "bound",
    "tightness",
    "sigma_min_sq_x",
    "sigma_min_sq_w",
    "lambda_min_gamma",
    "lambda_max_gamma",
]
TRAINING_COLUMNS = [*DATA_COLUMNS, "init", "lr", "batch_size", "seed", "width"]
PRUNING_COLUMNS = [
    *DATA_COLUMNS,
    "gn_samples",
    "network",
    "init",
    "optimizer",
    "lr",
    "prune_rate",
    "seed",
    "n_params",
    *EXACT_COLUMNS,
    "epoch",
    "train_loss",
]
INIT_BOUNDS = ["lemma1", "lemma7", "asymptotic_g2"]
# Appendix I.1's architectures (Figs. 13-16), one sweep each.
PRUNING_SWEEPS = [
    "fig13_pruning_vit",
    "fig14_pruning_resnet20",
    "fig15_pruning_resnet32",
    "fig16_pruning_vgg5",
]
# The columns of every sweep's table, in order (the module docstring says what they mean).
SWEEP_COLUMNS = {
    "fig1_pruning": PRUNING_COLUMNS,
    **dict.fromkeys(PRUNING_SWEEPS, PRUNING_COLUMNS),
    "fig2_depth": [*DEPTH_COLUMNS, *LINEAR_COLUMNS],
    "fig3_bounds": [*DEPTH_COLUMNS, *LINEAR_COLUMNS, *PER_LAYER_COLUMNS],
    "fig5_residual": [
        *DATA_COLUMNS,
        "width",
        "depth",
        "seed",
        "beta_rule",
        "beta",
        *LINEAR_COLUMNS,
    ],
    "fig6_leaky_width": LEAKY_COLUMNS,
    "fig7_batchnorm": [
        *DATA_COLUMNS,
        "width",
        "seed",
        "batchnorm",
        "n_params",
        *EXACT_COLUMNS,
    ],
    "fig19_whitening": [*DEPTH_COLUMNS, *LINEAR_COLUMNS],
    "fig23_leaky_alpha": LEAKY_COLUMNS,
    "fig8_linear_cnn": [
        *DATA_COLUMNS,
        "head",
        "kernel_size",
        "filters",
        "seed",
        *EXACT_COLUMNS,
    ],
    "fig10_linear_training": [
        *TRAINING_COLUMNS,
        "depth",
        "epoch",
        "train_loss",
        *LINEAR_COLUMNS,
        *PER_LAYER_COLUMNS,
    ],
    "appF_functional_hessian": [
        *DATA_COLUMNS,
        "width",
        "seed",
        *EXACT_COLUMNS,
        "reference_error",
        "kappa_residual",
        "kappa_sigma",
        "bound",
        "tightness",
    ],
    "appG_init_bounds": [
        *DATA_COLUMNS,
        "width",
        "seed",
        *EXACT_COLUMNS,
        "kappa_sigma",
        "t",
        *[f"{kind}_{b}" for kind in ("bound", "tightness") for b in INIT_BOUNDS],
    ],
    "fig18_relu_training": [
        *TRAINING_COLUMNS,
        "gn_samples",
        "epoch",
        "train_loss",
        *EXACT_COLUMNS,
        "eigenvalues",
    ],
}
