# Gauss-Newton conditioning (second paper): the bounds on exp7's saved weights (one job per
# trial, then one table) and the paper's experiments at initialisation (one job per sweep, one
# table each), each drawn as one figure. Settings: the config's `gauss_newton` block (schema);
# tables: src/matcond/gauss_newton/experiments.py. Every job runs on the CPU in float64 with
# one thread: its largest eigenproblem is 4096 x 4096 at paper scale (seconds).
import json

GN = config["gauss_newton"]
# The exp7 models with GN bounds (matcond.gauss_newton.experiments.EXP7_MODELS; importing it
# here would load torch at parse time).
GN_EXP7_MODELS = ("deep_linear", "relu_mlp")
GN_EXP7 = GN["exp7"]
GN_EXP7_SETTINGS = json.dumps(
    {k: v for k, v in GN_EXP7.items() if k != "experiment"}, sort_keys=True
)
GN_EXP7_TRIALS = [
    t
    for t in TRIALS.get(GN_EXP7["experiment"], [])
    if t.spec["model"] in GN_EXP7_MODELS
]
GN_SWEEPS = list(GN["sweeps"])
GN_FIGURES = [f"gn_{name}" for name in GN_SWEEPS] + (
    ["gn_exp7"] if GN_EXP7_TRIALS else []
)
GN_LIBRARY = [
    f"gauss_newton/{p.stem}"
    for p in sorted((PACKAGE / "gauss_newton").glob("*.py"))
    if p.stem != "plots"
]
GN_CAPTIONS = {
    "gn_exp7": "Exact pseudo-condition number of the GN matrix of exp7's deep linear nets "
    "(depth 2, 3) and ReLU MLP, at init and after training, on n samples of N(0, I) (the "
    "training distribution) and on the same samples whitened, with every applicable bound "
    "(Lemma 1, Lemma 2 convex / max, Lemma 4 with alpha = 0); bars are medians over trials, "
    "the numbers over the bound bars the median tightness bound / exact.",
    "gn_fig1_pruning": "GN paper Fig. 1 on digits: a bias-free ReLU MLP pruned layer by layer "
    "by magnitude at Kaiming init. Left: training loss (MSE to one-hot, SGD) per prune rate; "
    "right: GN pseudo-condition number at init over the remaining weights, and the GN rank.",
    "gn_fig2_depth": "GN paper Fig. 2: GN condition number of deep linear nets at Kaiming init "
    "vs depth, per fixed hidden width (left) and for width proportional to depth (right), "
    "with the convex form of Lemma 2 (dashed).",
    "gn_fig3_bounds": "GN paper Fig. 3 and appendix E: the convex-combination and max forms of "
    "Lemma 2 against the exact value vs depth (left), and at the largest depth the per-layer "
    "terms kappa^2(W^{L:l+1}) kappa^2(W^{l-1:1}) with and without their weights gamma_l (right).",
    "gn_fig5_residual": "GN paper Figs. 5 and 20: linear residual nets (W_l + beta I) vs the "
    "plain linear net at Kaiming init, with Eq. 7 (dashed); left beta = 1, right every beta rule.",
    "gn_fig6_leaky_width": "GN paper Fig. 6: one-hidden-layer leaky-ReLU net at Kaiming init, "
    "GN condition number vs hidden width with Lemma 4 (dashed); the dotted line marks m = n.",
    "gn_fig7_batchnorm": "GN paper Fig. 7: one-hidden-layer linear net with and without "
    "BatchNorm1d after the hidden layer, at Kaiming init, from the autodiff reference. BN is in "
    "eval mode with its running statistics set to the full-batch mean and variance (per-sample "
    "GN; see src/matcond/gauss_newton/experiments.py).",
    "gn_fig19_whitening": "GN paper Fig. 19: GN condition number of deep linear nets vs depth "
    "with raw and whitened inputs (X -> U V^T); the legend gives kappa(Sigma).",
    "gn_fig23_leaky_alpha": "GN paper Fig. 23: one-hidden-layer leaky-ReLU net at Kaiming init, "
    "GN condition number vs the negative slope alpha (0: ReLU, 1: linear) per width, with "
    "Lemma 4 (dashed).",
}


# Everything a job of these rules needs, computed once (the lambdas below only look it up).
GN_EXP7_TABLES = [f"results/gn/{t.path}.parquet" for t in GN_EXP7_TRIALS]
GN_SWEEP_SETTINGS = {
    name: json.dumps({"sweep": sweep, "data": GN["data"]}, sort_keys=True)
    for name, sweep in GN["sweeps"].items()
}
GN_FIGURE_CAPTIONS = {
    f"gn_{name}": GN_CAPTIONS[f"gn_{name}"]
    + f"\n\nSettings: ``{json.dumps(settings, sort_keys=True)}``"
    for name, settings in [("exp7", GN_EXP7), *GN["sweeps"].items()]
}
# Every GN table (parquet and CSV) and figure (PNG and PDF): part of all_targets().
GN_TARGETS = expand(
    "results/tables/{figure}.{ext}", figure=GN_FIGURES, ext=["parquet", "csv"]
) + expand("results/figures/{figure}.{ext}", figure=GN_FIGURES, ext=["png", "pdf"])


rule gn_exp7_trial:
    """Exact GN condition number and its bounds for one exp7 trial's saved weights."""
    input:
        weights="results/trials/{trial}.safetensors",
    output:
        "results/gn/{trial}.parquet",
    log:
        "results/logs/gn/{trial}.log",
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        # dense GN forms of side dim^2 (a few float64 copies) plus torch
        mem_mb=lambda wildcards: 1500
        + 40 * TRIAL_BY_PATH[wildcards.trial].spec["dim"] ** 4 // 1_000_000,
        runtime=30,
    params:
        spec=trial_spec,
        settings=GN_EXP7_SETTINGS,
        code=code_fingerprint(*GN_LIBRARY),
    script:
        "../../scripts/gn_exp7_trial.py"


rule gn_exp7_table:
    """Statistics of exact kappa and bound tightness over the exp7 trials."""
    input:
        GN_EXP7_TABLES,
    output:
        parquet="results/tables/gn_exp7.parquet",
        csv="results/tables/gn_exp7.csv",
    log:
        "results/logs/gn/exp7_table.log",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        experiment=GN_EXP7["experiment"],
        code=code_fingerprint("stats", "gauss_newton/experiments"),
    script:
        "../../scripts/gn_exp7_table.py"


rule gn_sweep:
    """One GN-paper experiment at initialisation (all its seeds) -> one table."""
    output:
        parquet="results/tables/gn_{sweep}.parquet",
        csv="results/tables/gn_{sweep}.csv",
    log:
        "results/logs/gn/{sweep}.log",
    wildcard_constraints:
        sweep="|".join(GN_SWEEPS) or "(?!)",
    conda:
        "../../envs/matcond.yaml"
    threads: 1
    resources:
        gpu=0,
        mem_mb=4000,
        runtime=30,
    params:
        settings=lambda wildcards: GN_SWEEP_SETTINGS[wildcards.sweep],
        code=code_fingerprint(*GN_LIBRARY),
    script:
        "../../scripts/gn_sweep.py"


rule gn_plot:
    """Draw one GN figure (PNG for the report, PDF for papers) from its table."""
    input:
        "results/tables/{gnfigure}.parquet",
    output:
        png=report(
            "results/figures/{gnfigure}.png",
            caption="../report/gn_figure.rst",
            category="Gauss-Newton conditioning",
        ),
        pdf="results/figures/{gnfigure}.pdf",
    log:
        "results/logs/plots/{gnfigure}.log",
    wildcard_constraints:
        gnfigure="|".join(GN_FIGURES) or "(?!)",
    conda:
        "../../envs/matcond.yaml"
    resources:
        gpu=0,
        mem_mb=2000,
        runtime=10,
    params:
        caption=lambda wildcards: GN_FIGURE_CAPTIONS[wildcards.gnfigure],
        code=code_fingerprint("gauss_newton/plots"),
    script:
        "../../scripts/gn_plot.py"
