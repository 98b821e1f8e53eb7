"""Every figure of both papers: what it needs, its report category and its caption (reST).

One catalog for the rules, the drawing code (matcond.figures.drawing: the function of the same
name in the figure's ``module``) and the report. The captions are data, in
``figure_captions.yaml`` beside this module, by figure name. Light: the Snakefile reads it at
parse time.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from pathlib import Path

import yaml

CAPTIONS_FILE = Path(__file__).with_name("figure_captions.yaml")


@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure: the experiments it needs, its report category and caption.

    It is drawn when every experiment of ``experiments`` and every Gauss-Newton part of
    ``gauss_newton`` (a sweep of the config's ``gauss_newton.sweeps``, or ``exp7``) is
    configured, and reads their tables (``results/tables/{name}.parquet``; a GN part's is
    ``gn_{part}``), those of the ``optional`` experiments that are configured, the derived
    tables ``tables`` (e.g. ``theory``) and the per-trial tables of the experiments in
    ``per_trial`` (``results/per_trial/{name}.parquet``). ``module`` is the module of
    matcond.figures that draws it. ``caption`` is filled from :data:`CAPTIONS_FILE`.
    """

    experiments: tuple[str, ...]
    category: str
    optional: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    per_trial: tuple[str, ...] = ()
    gauss_newton: tuple[str, ...] = ()
    module: str = "paper"
    caption: str = ""


@functools.cache
def _caption_file() -> dict:
    return yaml.safe_load(CAPTIONS_FILE.read_text(encoding="utf-8"))


def caption(name: str, **values: str) -> str:
    """The caption ``name`` of :data:`CAPTIONS_FILE` (a figure's, or ``overview``), each
    ``${key}`` in it replaced by the shared sentence ``key`` or by ``values[key]``."""
    data = _caption_file()
    text = data["overview"] if name == "overview" else data["figures"][name]
    try:
        return string.Template(text).substitute(data["shared"], **values)
    except KeyError as err:
        raise KeyError(
            f"{CAPTIONS_FILE.name}: caption {name!r} names ${{{err.args[0]}}}, which is not in "
            f"shared ({', '.join(data['shared'])})"
        ) from None


CONTROLS = "Controls (the review's and ours)"
READINGS = "Readings of the paper's settings"
THEORY = "Why the condition number is poorly learned"
FIGURES = {
    "fig1_dimension": Figure(
        ("exp1_dimension",), "Experiment 1: dimension", optional=("exp1_large_dims",)
    ),
    "fig2_optimizer": Figure(("exp2_optimizer",), "Experiment 2: optimizer"),
    "fig3_gradient": Figure(
        ("exp3_gradient",), "Experiment 3: gradient signal", per_trial=("exp3_gradient",)
    ),
    "fig4_strategies": Figure(("exp4_strategies",), "Experiment 4: corrective strategies"),
    "fig5_dynamics": Figure(("exp5_dynamics",), "Experiment 5: dynamics"),
    "fig6_structures": Figure(("exp6_structures",), "Experiment 6: multipliers across structures"),
    "fig7_depth": Figure(("exp7_depth",), "Experiment 7: depth"),
    "fig8_sensitivity": Figure(("exp8_lr", "exp8_wd"), "Experiment 8: hyper-parameters"),
    "fig9_long": Figure(("exp9_long",), "Experiment 9: long training"),
    "ctrl_effective_rank": Figure(("exp1_dimension",), CONTROLS),
    "ctrl_noise": Figure(("ctrl_noise",), CONTROLS),
    "ctrl_multiplier_lr": Figure(("ctrl_multiplier_lr",), CONTROLS),
    "ctrl_optimizer_dims": Figure(("ctrl_optimizer_dims",), CONTROLS),
    "ctrl_batch_size": Figure(("ctrl_batch_size",), CONTROLS, module="controls"),
    "ctrl_structured_wd": Figure(("ctrl_structured_wd",), CONTROLS, module="controls"),
    "exp_attention": Figure(("exp_attention",), CONTROLS, module="controls"),
    "ctrl_init": Figure(("ctrl_init",), READINGS, module="controls"),
    "ctrl_target_scale": Figure(("ctrl_target_scale",), READINGS, module="controls"),
    "ctrl_momentum": Figure(("ctrl_momentum",), CONTROLS, module="controls"),
    "readings": Figure(("ctrl_readings",), READINGS, tables=("readings",), module="controls"),
    "ctrl_spectral_reg": Figure(
        ("ctrl_spectral_reg",),
        "Experiment 4: corrective strategies",
        per_trial=("ctrl_spectral_reg",),
        module="controls",
    ),
    "theory": Figure(("exp1_dimension",), THEORY, tables=("theory",), module="controls"),
    "theory_held_out": Figure(("theory_held_out",), THEORY, tables=("theory",), module="controls"),
    "depth_theory": Figure(
        ("exp_depth_theory",),
        THEORY,
        optional=("exp_depth_limits",),
        tables=("depth_theory",),
        module="depth",
    ),
}


def _gn(part: str, module: str = "gauss_newton") -> Figure:
    """A GN figure drawn from the table of GN part ``part`` (a sweep, or exp7) by ``module``."""
    return Figure(
        (),
        "Gauss-Newton conditioning",
        tables=(f"gn_{part}",),
        gauss_newton=(part,),
        module=module,
    )


_gn_training = functools.partial(_gn, module="gn_training")  # matcond.figures.gn_training
FIGURES |= {
    "gn_exp7": _gn("exp7"),
    "gn_along_training": _gn_training("along_training"),
    "gn_fig1_pruning": _gn_training("fig1_pruning"),
    "gn_fig2_depth": _gn("fig2_depth"),
    "gn_fig3_bounds": _gn("fig3_bounds"),
    "gn_fig5_residual": _gn("fig5_residual"),
    "gn_fig6_leaky_width": _gn("fig6_leaky_width"),
    "gn_fig7_batchnorm": _gn("fig7_batchnorm"),
    "gn_fig19_whitening": _gn("fig19_whitening"),
    "gn_fig23_leaky_alpha": _gn("fig23_leaky_alpha"),
    "gn_fig20_residual_beta": _gn("fig5_residual"),
    "gn_fig21_residual_vs_linear": _gn("fig5_residual"),
    "gn_fig22_residual_beta_gaussian": _gn("fig5_residual"),
    "gn_fig10_linear_training": _gn_training("fig10_linear_training"),
    "gn_fig11_partial_products": _gn_training("fig10_linear_training"),
    "gn_fig12_self_balancing": _gn_training("fig10_linear_training"),
    "gn_fig18_relu_training": _gn_training("fig18_relu_training"),
    "gn_fig9_spectrum": _gn_training("fig18_relu_training"),
    "gn_fig13_pruning_vit": _gn_training("fig13_pruning_vit"),
    "gn_fig14_pruning_resnet20": _gn_training("fig14_pruning_resnet20"),
    "gn_fig15_pruning_resnet32": _gn_training("fig15_pruning_resnet32"),
    "gn_fig16_pruning_vgg5": _gn_training("fig16_pruning_vgg5"),
    "gn_appF_functional_hessian": _gn("appF_functional_hessian"),
    "gn_appG_init_bounds": _gn("appG_init_bounds"),
    "gn_fig8_linear_cnn": _gn("fig8_linear_cnn"),
}
if missing := set(FIGURES) ^ set(_caption_file()["figures"]):
    raise KeyError(f"{CAPTIONS_FILE.name} and FIGURES differ in these figures: {sorted(missing)}")
FIGURES = {name: dataclasses.replace(f, caption=caption(name)) for name, f in FIGURES.items()}
