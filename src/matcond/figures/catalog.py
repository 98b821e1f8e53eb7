"""Every figure of both papers: what it needs, its report category and its caption (reST).

One catalog for the rules, the drawing code (matcond.figures.drawing: the function of the same
name in the figure's ``module``) and the report. Light: the Snakefile reads it at parse time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A figure: the experiments it needs, its report category and caption.

    It is drawn when every experiment of ``experiments`` and every Gauss-Newton part of
    ``gauss_newton`` (a sweep of the config's ``gauss_newton.sweeps``, or ``exp7``) is
    configured, and reads their tables (``results/tables/{name}.parquet``; a GN part's is
    ``gn_{part}``), those of the ``optional`` experiments that are configured, the derived
    tables ``tables`` (e.g. ``theory``) and the per-trial tables of the experiments in
    ``per_trial`` (``results/per_trial/{name}.parquet``). ``module`` is the module of
    matcond.figures that draws it.
    """

    experiments: tuple[str, ...]
    category: str
    caption: str
    optional: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    per_trial: tuple[str, ...] = ()
    gauss_newton: tuple[str, ...] = ()
    module: str = "paper"


STATISTICS = (
    "Lines and points are the median for heavy-tailed components (condition number, "
    "pseudo-condition number, spectral gap, effective rank) and the mean for the others, with "
    "95 % bootstrap intervals (bands, whiskers); black open stars (crosses: the slides, "
    "plusses: the peer review) are the values the paper reports, its means, where it gives "
    "one (a vertical line: a range); a grey bar behind one spans the values a "
    "heavy-tailed claim's verdict accepts as consistent with means of the paper's number of "
    "our trials (drawn from the claim's pool): a paper's value on the bar is consistent. An "
    "axis is logarithmic where what it draws spans more than a decade, else linear from 0."
)
FIGURES = {
    "fig1_dimension": Figure(
        ("exp1_dimension",),
        "Experiment 1: dimension",
        "Relative error of each component at the last epoch vs dimension, one panel per "
        "component; d = 1024 and 2048 come from exp1_large_dims (fewer seeds). " + STATISTICS,
        optional=("exp1_large_dims",),
    ),
    "fig2_optimizer": Figure(
        ("exp2_optimizer",),
        "Experiment 2: optimizer",
        "SGD vs Adam: relative error of each component at the last epoch. " + STATISTICS,
    ),
    "fig3_gradient": Figure(
        ("exp3_gradient",),
        "Experiment 3: gradient signal",
        "Left: the gradient felt by each singular value, abs(u_i^T grad v_i), of the last batch "
        "of each epoch for top, middle and bottom singular values (median over trials). Middle: "
        "those singular values (solid) and the target's (dashed). Right: per trial, the median "
        "over epochs of the top/bottom ratio against the target's condition number: the ratio "
        "is the target's kappa (the residual W - W* is nearly proportional to W*), so the "
        "paper's 'gradient imbalance' measures the target, not a learning flaw.",
        per_trial=("exp3_gradient",),
    ),
    "fig4_strategies": Figure(
        ("exp4_strategies",),
        "Experiment 4: corrective strategies",
        "Relative error per strategy at the last epoch; the legend gives each strategy's "
        "improvement over standard training (1 - ratio of the means, the paper's statistic) for "
        "row norms and condition number. " + STATISTICS,
    ),
    "fig5_dynamics": Figure(
        ("exp5_dynamics",),
        "Experiment 5: dynamics",
        "Relative error of each component at every epoch, one panel per component. " + STATISTICS,
    ),
    "fig6_structures": Figure(
        ("exp6_structures",),
        "Experiment 6: multipliers across structures",
        "Standard training vs learnable multipliers, paired on identical targets and data, per "
        "target structure, at the last epoch (pseudo-condition number cut at the target's "
        "rank: a low-rank target's kappa is infinite). " + STATISTICS,
    ),
    "fig7_depth": Figure(
        ("exp7_depth",),
        "Experiment 7: depth",
        "Networks by number of layers L (the single matrix, deep linear nets, then the ReLU "
        "MLP). Left: condition-number error of the end-to-end (product) matrix (median, "
        "95 % bootstrap interval). Middle: condition number of the product and of each layer "
        "(median over trials) against the target's (line). Right: overall error of the product "
        "(mean, 95 % interval). Black open stars: the paper's values (its means); grey bars: "
        "the values the verdict accepts as means of the paper's number of our trials.",
    ),
    "fig8_sensitivity": Figure(
        ("exp8_lr", "exp8_wd"),
        "Experiment 8: hyper-parameters",
        "Condition-number and row-norm errors at the last epoch vs learning rate (left) and "
        "weight decay (right); right axis: their ratio, of means (dotted: the paper's ratios) "
        "and of medians (dashed: the statistic the claim that the condition-number error "
        "exceeds the norm error at every learning rate is judged on). " + STATISTICS,
    ),
    "fig9_long": Figure(
        ("exp9_long",),
        "Experiment 9: long training",
        "Left: errors along 1000 epochs. Right: mean condition-number error over mean row-norm "
        "error (the paper's ratio). " + STATISTICS,
    ),
    "ctrl_effective_rank": Figure(
        ("exp1_dimension",),
        "Controls (the review's and ours)",
        "Effective-rank error vs dimension for each threshold t (the number of singular values "
        "above t times the largest), median and 95 % bootstrap interval.",
    ),
    "ctrl_noise": Figure(
        ("ctrl_noise",),
        "Controls (the review's and ours)",
        "Component errors at the last epoch vs label-noise standard deviation. " + STATISTICS,
    ),
    "ctrl_multiplier_lr": Figure(
        ("ctrl_multiplier_lr",),
        "Controls (the review's and ours)",
        "Component errors with learnable multipliers vs the multipliers' learning-rate ratio. "
        + STATISTICS,
    ),
    "ctrl_optimizer_dims": Figure(
        ("ctrl_optimizer_dims",),
        "Controls (the review's and ours)",
        "SGD vs Adam across dimensions, one panel per component. " + STATISTICS,
    ),
    "ctrl_batch_size": Figure(
        ("ctrl_batch_size",),
        "Controls (the review's and ours)",
        "Condition-number and row-norm errors vs batch size at two dimensions (review W8). "
        + STATISTICS,
        module="controls",
    ),
    "ctrl_structured_wd": Figure(
        ("ctrl_structured_wd",),
        "Controls (the review's and ours)",
        "Structured weight decay (a penalty lambda (log kappa)^2, which pulls kappa toward 1) "
        "against plain L2 weight decay, paired by seed (review W4d). " + STATISTICS,
        module="controls",
    ),
    "exp_attention": Figure(
        ("exp_attention",),
        "Controls (the review's and ours)",
        "A single-head attention block with a ReLU MLP learning a teacher block of the same "
        "shape (review W1b): components of the products the block's function determines "
        "(qk = W_Q^T W_K, ov = W_O W_V) and of the MLP matrices (determined only up to a "
        "permutation and scaling of hidden units), against one matrix learning a target with "
        "the same optimizer. " + STATISTICS,
        module="controls",
    ),
    "ctrl_init": Figure(
        ("ctrl_init",),
        "Readings of the paper's settings",
        "The paper does not give its init: condition-number and row-norm errors vs d under "
        "five readings (near-zero N(0, 1e-3^2), small Gaussian N(0, 0.02^2), N(0, 1/d), "
        "PyTorch's nn.Linear default, orthogonal), SGD and Adam. " + STATISTICS,
        module="controls",
    ),
    "ctrl_target_scale": Figure(
        ("ctrl_target_scale",),
        "Readings of the paper's settings",
        "The paper's target rows are scaled by exp(N(0, 0.25)): 0.25 read as a standard "
        "deviation (row_log_std 0.25) or as a variance (0.5, the default). " + STATISTICS,
        module="controls",
    ),
    "ctrl_momentum": Figure(
        ("ctrl_momentum",),
        "Controls (the review's and ours)",
        "SGD with momentum 0.9, plain and Nesterov, at the paper's lr 0.01 and at lr 0.001 "
        "(the effective step lr / (1 - momentum) of plain SGD), against plain SGD, over d: does "
        "the condition-number error still exceed the row-norm error? " + STATISTICS,
        module="controls",
    ),
    "readings": Figure(
        ("ctrl_readings",),
        "Readings of the paper's settings",
        "Each claim on experiments 1, 2 and 9 evaluated under each reading of the paper's "
        "unstated settings (columns: init x target row scale, 200 trials per cell; 10 at "
        "1000 epochs): the colour is the verdict (heavy-tailed claims: the predictive "
        "verdict), the number the measured value; results/tables/readings.csv has the "
        "intervals and tail probabilities, results/readings.md the calibration's pick.",
        tables=("readings",),
        module="controls",
    ),
    "ctrl_spectral_reg": Figure(
        ("ctrl_spectral_reg",),
        "Experiment 4: corrective strategies",
        "Spectral regularisation over its weight lambda and gradient clip. Left: median "
        "condition-number error at the last epoch. Middle: median over trials of the lag-1 "
        "autocorrelation of log kappa - log kappa* over the last 50 epochs (near -1: each step "
        "overshoots, the error flips sign step after step). The framed cell, the lowest error "
        "among settings without oscillation (autocorrelation >= 0), is the default. Right: the "
        "last 50 epochs of one trial at the framed setting, the most oscillating one and the "
        "lowest error (where they differ), on a symmetric-log axis so that a calm trial's "
        "deviations show beside an oscillating one's.",
        per_trial=("ctrl_spectral_reg",),
        module="controls",
    ),
    "theory": Figure(
        ("exp1_dimension",),
        "Why the condition number is poorly learned",
        "The first-order theory (docs/theory.md; src/matcond/condition_number/theory.py) "
        "against the measurements: markers and bands are the measured median kappa error "
        "(mean row-norm error) with 95 % bootstrap intervals, lines the predictions for the "
        "same trials' settings and "
        "targets. The kappa error is label noise and left-over init acting on the target's "
        "smallest singular value (about 0.5/d); it plateaus with label noise and keeps "
        "falling without it.",
        tables=("theory",),
        module="controls",
    ),
    "theory_held_out": Figure(
        ("theory_held_out",),
        "Why the condition number is poorly learned",
        'The first-order theory on the held-out grid (docs/theory.md, "Held-out grid"): 12 '
        "settings drawn at random from declared ranges of d, lr, init, label noise, length and "
        "batch size, 100 trials each. Per cell the ratio predicted / measured (median kappa "
        "error, mean row-norm error) with its 95 % bootstrap interval, against the step size "
        "relative to the batch, lr (d + 1) / B (the theory is first order in it), and against "
        "d; the grey band is the checks' [0.8, 1.25]. Table results/tables/theory.csv "
        "(experiment theory_held_out).",
        tables=("theory",),
        module="controls",
    ),
    "depth_theory": Figure(
        ("exp_depth_theory",),
        "Why the condition number is poorly learned",
        "The depth formula (docs/depth-theory.md): deep linear nets' product kappa error "
        "against predictions from the Gauss-Newton operator K of the layers: (a) K frozen at "
        "init, (b) K at each recorded epoch's saved weights, (m) the mean dynamics, K along "
        "its own trajectory, (c) (m) plus the one-matrix theory's label-noise floor. Top: "
        "medians over seeds at the largest width, measured with its exact 95 % interval. "
        "Bottom left: (m)'s ratio predicted / measured median with its paired bootstrap "
        "interval and the band of our theory checks; middle: the share of the learned error "
        "P_T - W* in the span of the initial K's bottom eigenvectors (median over seeds "
        "0-39, config depth_theory.overlap_seeds; dotted: chance); right:"
        " (m) where its assumptions break. Table results/tables/depth_theory.csv.",
        optional=("exp_depth_limits",),
        tables=("depth_theory",),
        module="depth",
    ),
}

GN_TABLES = (
    "Lines are medians over seeds with their 95 % bootstrap band where a point has at least 5 "
    "seeds, else with each seed's value as a dot. Tables ``results/tables/gn_*.csv``, one row "
    "per network and seed; their columns are documented in ``src/matcond/gn_experiments``."
)
GN_CATEGORY = "Gauss-Newton conditioning"


def _gn(part: str, caption: str, module: str = "gauss_newton") -> Figure:
    """A GN figure drawn from the table of GN part ``part`` (a sweep, or exp7) by ``module``."""
    return Figure(
        (),
        GN_CATEGORY,
        caption + " " + GN_TABLES,
        tables=(f"gn_{part}",),
        gauss_newton=(part,),
        module=module,
    )


_gn_training = functools.partial(_gn, module="gn_training")  # matcond.figures.gn_training


FIGURES |= {
    "gn_exp7": _gn(
        "exp7",
        "Exact pseudo-condition number of the GN matrix of exp7's deep linear nets (depth 2, 3) "
        "and ReLU MLP, at init and after training, on n samples of N(0, I) (the training "
        "distribution) and on the same samples whitened, with every applicable bound (Lemma 1, "
        "Lemma 2 convex / max, Lemma 4 with alpha = 0). Top: the exact value (median over "
        "trials, whiskers the interquartile range) and each bound (median). Bottom: each "
        "bound's tightness bound / exact (median, whiskers from the smallest to the largest "
        "trial); 1 (dotted) is a tight bound.",
    ),
    "gn_along_training": _gn_training(
        "along_training",
        "The GN bounds along the workflow's own training runs (the experiment named by "
        "gauss_newton.along_training, whose trials save their weights at every recorded "
        "epoch): exact pseudo-condition number of the GN matrix (top) and the tightness bound "
        "/ exact of each applicable bound (bottom) vs epoch, for deep linear nets of depth 2 "
        "and 3 and the ReLU MLP, on n samples of N(0, I) (the training distribution) and on "
        "the same samples whitened.",
    ),
    "gn_fig1_pruning": _gn_training(
        "fig1_pruning",
        "GN paper Fig. 1 on digits: a bias-free ReLU MLP pruned layer by layer by magnitude at "
        "Kaiming init. Left: training loss (MSE to one-hot, SGD) per prune rate; right: GN "
        "pseudo-condition number at init over the remaining weights, and the GN rank.",
    ),
    "gn_fig2_depth": _gn(
        "fig2_depth",
        "GN paper Fig. 2: GN condition number of deep linear nets at Kaiming init vs depth, per "
        "fixed hidden width (left column) and for width proportional to depth (right column), "
        "one row per data set, with the convex form of Lemma 2 (dashed).",
    ),
    "gn_fig3_bounds": _gn(
        "fig3_bounds",
        "GN paper Fig. 3 and appendix E: the convex-combination and max forms of Lemma 2 "
        "against the exact value vs depth (left), and at the largest depth the per-layer terms "
        "kappa^2(W^{L:l+1}) kappa^2(W^{l-1:1}) with and without their weights gamma_l (right).",
    ),
    "gn_fig5_residual": _gn(
        "fig5_residual",
        "GN paper Figs. 5 and 20: linear residual nets (W_l + beta I) vs the plain linear net "
        "at Kaiming init, with Eq. 7 (dashed); left column beta = 1, right column every beta rule.",
    ),
    "gn_fig6_leaky_width": _gn(
        "fig6_leaky_width",
        "GN paper Fig. 6: one-hidden-layer leaky-ReLU net at Kaiming init, GN condition number "
        "vs hidden width with Lemma 4 (dashed); the dotted line marks m = n.",
    ),
    "gn_fig7_batchnorm": _gn(
        "fig7_batchnorm",
        "GN paper Fig. 7: one-hidden-layer linear net with and without BatchNorm1d after the "
        "hidden layer, at Kaiming init, from the autodiff reference. BN is in eval mode with "
        "its running statistics set to the full-batch mean and variance (per-sample GN; see "
        "src/matcond/gn_experiments).",
    ),
    "gn_fig19_whitening": _gn(
        "fig19_whitening",
        "GN paper Fig. 19: GN condition number of deep linear nets vs depth with raw and "
        "whitened inputs (X -> U V^T); the legend gives kappa(Sigma).",
    ),
    "gn_fig23_leaky_alpha": _gn(
        "fig23_leaky_alpha",
        "GN paper Fig. 23: one-hidden-layer leaky-ReLU net at Kaiming init, GN condition "
        "number vs the negative slope alpha (0: ReLU, 1: linear) per width, with Lemma 4 "
        "(dashed).",
    ),
}
FIGURES |= {
    "gn_fig20_residual_beta": _gn(
        "fig5_residual",
        "GN paper Fig. 20 on whitened digits (for whitened MNIST): GN condition number of "
        "linear residual nets (W_l + beta I) at Kaiming init vs depth, one panel per beta rule, "
        "with Eq. 7 (dashed) and the plain linear net (grey) on the same weights.",
    ),
    "gn_fig21_residual_vs_linear": _gn(
        "fig5_residual",
        "GN paper Fig. 21: residual vs linear net, paired by seed (the same weights with and "
        "without the skip connections): the ratio kappa(residual) / kappa(linear) vs depth per "
        "beta rule (columns), on whitened digits and on whitened N(0, I) samples (for the "
        "paper's CIFAR-10; rows); below 1 the skip connections improve conditioning.",
    ),
    "gn_fig22_residual_beta_gaussian": _gn(
        "fig5_residual",
        "GN paper Fig. 22 on whitened N(0, I) samples of the digits' shape (for whitened "
        "CIFAR-10, which cannot be downloaded here): as Fig. 20, one panel per beta rule, with "
        "Eq. 7 (dashed) and the plain linear net (grey).",
    ),
}
FIGURES |= {
    "gn_fig10_linear_training": _gn_training(
        "fig10_linear_training",
        "GN paper Fig. 10 (appendix D): a deep linear net trained by SGD on whitened digits "
        "(the paper: 3 layers, m = 500, 5000 epochs on whitened 8x8 CIFAR-10, n = 1000; here "
        "the width and epochs of the config, d = 61). Left: training loss; right: exact GN "
        "condition number on all training rows and Lemma 2's convex form (dashed), at the "
        "recorded epochs. Medians with bootstrap bands (the paper: mean and one std).",
    ),
    "gn_fig11_partial_products": _gn_training(
        "fig10_linear_training",
        "GN paper Fig. 11 (appendix E): for the deepest net of Fig. 10, the squared condition "
        "number and the smallest squared singular value of the partial products W^{l-1:1} "
        "(left) and W^{L:l+1} (right) per layer l during training (an empty product is the "
        "identity). The paper's setting: downsampled MNIST, d = 196.",
    ),
    "gn_fig12_self_balancing": _gn_training(
        "fig10_linear_training",
        "GN paper Fig. 12 (appendix E): Lemma 2's per-layer terms "
        "kappa^2(W^{L:l+1}) kappa^2(W^{l-1:1}) without (left) and with (right) their weights "
        "gamma_l, for the deepest net of Fig. 10 during training: the weights damp the layers "
        "whose terms are large ('self-balancing').",
    ),
    "gn_fig18_relu_training": _gn_training(
        "fig18_relu_training",
        "GN paper Fig. 18 (appendix I.2): one-hidden-layer ReLU nets of several widths trained "
        "by SGD on raw digits (the paper: n = 1000 of MNIST, learning rates 0.3 for m = 15, 20 "
        "and 0.5 otherwise, Xavier normal init), training loss (left) and the GN condition "
        "number on the first training rows (right) at the recorded epochs.",
    ),
    "gn_fig9_spectrum": _gn_training(
        "fig18_relu_training",
        "GN paper Fig. 9 (appendix C): the whole GN spectrum (descending) of one net of Fig. 18 "
        "at init and after training, with the star at the numerical rank that defines the "
        "smallest nonzero eigenvalue (left), and the condition number lambda_1 / lambda_r as "
        "a function of the rank r chosen (right).",
    ),
}
PRUNING_CAPTION = (
    "on the digits' 8 x 8 images (the paper: n = 1000 of CIFAR-10, about 100 epochs; here a "
    "stand-in sized for 8 x 8 inputs and 2 CPU cores, shapes in "
    "src/matcond/gn_experiments/architectures.py), PyTorch's default init, every weight "
    "matrix and kernel pruned layer by layer by magnitude at init. Left: training loss (MSE to "
    "one-hot) per prune rate; right: GN pseudo-condition number at init over the remaining "
    "parameters (BatchNorm with the GN rows' full-batch statistics), and the GN rank."
)
FIGURES |= {
    "gn_fig13_pruning_vit": _gn_training(
        "fig13_pruning_vit",
        "GN paper Fig. 13: a small Vision Transformer (AdamW) " + PRUNING_CAPTION,
    ),
    "gn_fig14_pruning_resnet20": _gn_training(
        "fig14_pruning_resnet20",
        "GN paper Fig. 14: a ResNet-20-style CNN (SGD with momentum) " + PRUNING_CAPTION,
    ),
    "gn_fig15_pruning_resnet32": _gn_training(
        "fig15_pruning_resnet32",
        "GN paper Fig. 15: a ResNet-32-style CNN (SGD with momentum) " + PRUNING_CAPTION,
    ),
    "gn_fig16_pruning_vgg5": _gn_training(
        "fig16_pruning_vgg5",
        "GN paper Fig. 16: a VGG-5-style CNN (SGD with momentum) " + PRUNING_CAPTION,
    ),
}
FIGURES |= {
    "gn_appF_functional_hessian": _gn(
        "appF_functional_hessian",
        "GN paper appendix F: the functional Hessian H_F of a one-hidden-layer linear net W V x "
        "learning a teacher Z x at Kaiming init (Gaussian inputs with standard deviations 1 to "
        "10 across coordinates, raw and whitened): its pseudo-condition number from the closed "
        "form (eigenvalues +-sigma(Omega), each m times; the title gives the largest deviation "
        "from the autodiff H_F) against Eq. 18, kappa(W V - Z) kappa(Sigma), vs hidden width.",
    ),
    "gn_appG_init_bounds": _gn(
        "appG_init_bounds",
        "GN paper appendix G: the exact GN condition number of W V x at Kaiming init vs hidden "
        "width with Lemma 1 (deterministic), Lemma 7 (its Gaussian-init version, holding with "
        "probability 0.95) and the asymptotic bound G.2; the dotted line is kappa(Sigma), the "
        "value the paper predicts for m >> max(d, k).",
    ),
}
FIGURES["gn_fig8_linear_cnn"] = _gn(
    "fig8_linear_cnn",
    "GN paper Fig. 8: two-layer linear CNNs (F filters of size s x s with same padding, then a "
    "second layer) at Kaiming init on the digits' 8 x 8 images, whitened (the paper: n = 1000 "
    "of whitened MNIST; here the config's n), GN condition number vs kernel size per number of "
    "filters (left) and vs filters per kernel size (right). The paper does not say what the "
    "second layer is: top row a linear read-out to the 10 classes (exact through the "
    "Jacobian), bottom row its Eq. 15 reading, a second s x s convolution to one output map "
    "(autodiff reference); rank cut at the computation's precision.",
)
