"""The GN paper's sweeps at initialisation, one function per figure, and their tables
(package docstring: ``Sweeps``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from torch import nn

from matcond.gauss_newton.linear_cnn import linear_cnn_gn_spectrum
from matcond.gauss_newton.reference import reference_gn_spectrum
from matcond.gn_experiments.appendices import functional_hessian_sweep, init_bound_sweep
from matcond.gn_experiments.architectures import conv_pair
from matcond.gn_experiments.columns import PRUNING_SWEEPS, SWEEP_COLUMNS
from matcond.gn_experiments.data import Settings, digits_images, seed_list, sweep_inputs
from matcond.gn_experiments.during_training import linear_training_sweep, relu_training_sweep
from matcond.gn_experiments.networks import BETA_RULES, draw, kaiming_normal, one_hidden_linear
from matcond.gn_experiments.pruning import pruning_sweep
from matcond.gn_experiments.records import (
    leaky_record,
    linear_record,
    spectrum_columns,
)


def depth_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Lemma 2 of deep linear nets vs depth, per fixed and depth-proportional width."""
    schemes = [("fixed", m) for m in settings["widths"]]
    schemes += [("proportional", c) for c in settings.get("width_factors", [])]
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for rule, param in schemes:
            for depth in settings["depths"]:
                width = param if rule == "fixed" else param * depth
                dims = [d, *[width] * (depth - 1), k]
                for seed in seed_list(settings["seeds"]):
                    record = linear_record(
                        kaiming_normal(dims, seed),
                        inputs.x,
                        per_layer=settings.get("per_layer", False),
                    )
                    rows.append(
                        {
                            **inputs.columns(),
                            "width_rule": rule,
                            "width_param": param,
                            "width": width,
                            "depth": depth,
                            "seed": seed,
                            **record,
                        }
                    )
    return pd.DataFrame(rows)


def one_width(settings: Settings) -> dict[str, Any]:
    """Settings with a single ``width`` as the depth sweep's ``widths``."""
    return {**settings, "widths": [settings["width"]], "width_factors": []}


def residual_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Eq. (7) of linear residual nets per skip weight rule vs depth (and the plain net)."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for depth in settings["depths"]:
            dims = [d, *[settings["width"]] * (depth - 1), k]
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal(dims, seed)
                for rule in ["0", *settings["betas"]]:
                    beta = BETA_RULES[rule](depth)
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": settings["width"],
                            "depth": depth,
                            "seed": seed,
                            "beta_rule": rule,
                            "beta": beta,
                            **linear_record(weights, inputs.x, beta=beta),
                        }
                    )
    return pd.DataFrame(rows)


def leaky_relu_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ and Lemma 4 of one-hidden-layer leaky-ReLU nets per width and slope."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal([d, width, k], seed)
                for alpha in settings["alphas"]:
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": width,
                            "alpha": float(alpha),
                            "seed": seed,
                            **leaky_record(weights, inputs.x, float(alpha)),
                        }
                    )
    return pd.DataFrame(rows)


def batchnorm_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ of a one-hidden-layer linear net with and without BatchNorm per width (the autodiff
    reference on the span of the data: both nets are affine in their input)."""
    rows = []
    for inputs in sweep_inputs(settings, data):
        d, k = inputs.x.shape[1], inputs.outputs
        for width in settings["widths"]:
            for seed in seed_list(settings["seeds"]):
                weights = kaiming_normal([d, width, k], seed)
                for batchnorm in (False, True):
                    model = one_hidden_linear(weights, inputs.x, batchnorm)
                    spectrum = reference_gn_spectrum(model, inputs.x, affine=True)
                    rows.append(
                        {
                            **inputs.columns(),
                            "width": width,
                            "seed": seed,
                            "batchnorm": batchnorm,
                            "n_params": sum(p.numel() for p in model.parameters()),
                            **spectrum_columns(spectrum),
                        }
                    )
    return pd.DataFrame(rows)


def linear_cnn_sweep(settings: Settings, data: Settings) -> pd.DataFrame:
    """κ of two-layer linear CNNs on the digits' 8 x 8 images per kernel size and filters, for
    each ``head``: ``linear`` (a read-out to the classes, exact through the Jacobian) or
    ``conv`` (a second convolution to one output map, autodiff reference)."""
    rows = []
    for whitened in settings["whiten"]:
        inputs = digits_images(settings["n_samples"], whitened, data["seed"])
        side = int(round(inputs.x.shape[1] ** 0.5))
        images = inputs.x.reshape(-1, side, side)
        for head in settings["heads"]:
            for size in settings["kernel_sizes"]:
                for filters in settings["filters"]:
                    for seed in seed_list(settings["seeds"]):
                        second = (
                            (inputs.outputs, filters * side * side)
                            if head == "linear"
                            else (1, filters * size * size)
                        )
                        kernel, last = draw(
                            [(filters, size * size), second], seed, nn.init.kaiming_normal_
                        )
                        kernel = kernel.reshape(filters, size, size)
                        if head == "linear":
                            spectrum = linear_cnn_gn_spectrum(kernel, last, images)
                        else:
                            net = conv_pair(kernel, last.reshape(1, filters, size, size))
                            spectrum = reference_gn_spectrum(net, inputs.x)
                        rows.append(
                            {
                                **inputs.columns(),
                                "head": head,
                                "kernel_size": size,
                                "filters": filters,
                                "seed": seed,
                                **spectrum_columns(spectrum),
                            }
                        )
    return pd.DataFrame(rows)


SWEEPS: dict[str, Callable[[Settings, Settings], pd.DataFrame]] = {
    "fig1_pruning": pruning_sweep,
    **dict.fromkeys(PRUNING_SWEEPS, pruning_sweep),
    "fig2_depth": depth_sweep,
    "fig3_bounds": lambda s, d: depth_sweep({**one_width(s), "per_layer": True}, d),
    "fig5_residual": residual_sweep,
    "fig6_leaky_width": leaky_relu_sweep,
    "fig7_batchnorm": batchnorm_sweep,
    "fig19_whitening": lambda s, d: depth_sweep(one_width(s), d),
    "fig23_leaky_alpha": leaky_relu_sweep,
    "fig8_linear_cnn": linear_cnn_sweep,
    "fig10_linear_training": linear_training_sweep,
    "fig18_relu_training": relu_training_sweep,
    "appF_functional_hessian": functional_hessian_sweep,
    "appG_init_bounds": init_bound_sweep,
}


def run_sweep(name: str, settings: Settings, data: Settings) -> pd.DataFrame:
    """The table of sweep ``name`` (``SWEEPS``) with its name in column ``sweep``."""
    if name not in SWEEPS:
        raise ValueError(f"unknown sweep {name!r}; choose from {sorted(SWEEPS)}")
    table = SWEEPS[name](settings, data)
    table.insert(0, "sweep", name)
    return table[SWEEP_COLUMNS[name]]
