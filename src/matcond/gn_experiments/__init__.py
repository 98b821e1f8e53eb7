r"""The GN paper's experiments at initialisation, and its bounds on exp7's trained weights.

Everything here turns settings (the ``gauss_newton`` block of the config) into tidy tables; the
mathematics is the library's (:mod:`matcond.gauss_newton`), which imports nothing from here.
Modules: ``data`` (digits, Gaussian samples, whitening), ``networks`` (inits, the BatchNorm
net), ``records`` (table columns of one network), ``sweeps`` (one function per figure,
``run_sweep``), ``sgd`` (the bias-free MLP and plain SGD with recorded epochs), ``pruning``
(magnitude pruning), ``architectures`` (the pruning stand-ins), ``during_training`` (the
sweeps that train), ``appendices`` (appendices F and G), ``exp7`` (bounds on trained
weights). Every κ is the pseudo-condition number of ``G_O = (1/n) sum_i J_i^T J_i`` (MSE
loss) in float64; every bound is reported beside the exact value it bounds, with
``tightness = bound / exact`` (>= 1).

Data (``make_inputs``)
    ``digits``: scikit-learn's 8 x 8 digits (1797 x 64, 10 classes), pixels / 16 in [0, 1], not
    centred, with the 3 pixels that are 0 in every image dropped (d = 61: ``Sigma`` is then full
    rank and whitening gives orthonormal columns). A subsample of ``n`` rows is drawn without
    replacement by the data seed, the same rows for every network seed (a subsample can have
    more always-zero pixels: its ``Sigma`` is then rank deficient and ``kappa(Sigma)`` is, as
    every κ here, the pseudo-condition number). ``gaussian``: ``n x d``
    samples of ``N(0, I_d)`` (the data seed), ``k`` outputs. ``whitened``: the GN paper's
    ``X -> U V^T`` from the thin SVD ``X = U S V^T`` (zero singular values dropped), so
    ``Sigma = V V^T / n`` is isotropic: ``U V^T`` has orthonormal columns when ``n >= d`` (and
    orthonormal rows when ``n < d``).

Networks at initialisation
    Kaiming normal as PyTorch's ``kaiming_normal_`` with its defaults (``std = sqrt(2 / fan_in)``,
    no biases), float64, drawn from ``torch.Generator().manual_seed(seed)`` layer by layer, input
    layer first. A network with one seed is the same in every arm it is compared across (linear vs
    residual, whitened vs not, with vs without BatchNorm, every prune rate, every leaky slope).

Sweeps (``run_sweep``; one table per figure, columns in ``SWEEP_COLUMNS``, one row per network
unless said otherwise; every table has ``sweep, dataset, whitened, n_samples, d, k, seed`` and
the exact ``kappa``, ``rank``, ``rank_source`` (``analytic`` for linear and residual nets,
``tolerance`` where no formula is known: leaky ReLU, BatchNorm, pruned MLP), ``gap_at_cut``
(smallest kept over largest dropped eigenvalue), ``relative_error``, ``reliable`` and
``reliability`` (:class:`matcond.gauss_newton.GNSpectrum`) and ``solver``; no timings, so
that identical runs give byte-identical tables)
    ``fig2_depth`` (:func:`depth_sweep`): deep linear nets of depth ``L`` (``L - 1`` hidden layers)
    with ``width_rule`` ``fixed`` (``width = width_param``) or ``proportional``
    (``width = width_param * L``); ``bound_convex`` / ``bound_max`` (Lemma 2),
    ``tightness_convex`` / ``tightness_max``, ``kappa_sigma``.
    ``fig3_bounds``: the same at one width, plus (``per_layer``) the JSON lists ``term_per_layer``
    (``kappa^2(W^{L:l+1}) kappa^2(W^{l-1:1})``) and ``gamma_per_layer`` (appendix E).
    ``fig19_whitening``: the same at one width, whitened and not.
    ``fig5_residual`` (:func:`residual_sweep`): the linear net (``beta_rule = "0"``) and the
    residual nets ``(W_L + beta I) ... (W_1 + beta I)`` for each ``beta_rule`` in ``1``,
    ``1/sqrt(L)``, ``1/L`` on the same weights; bounds are Eq. (7) (Lemma 2 for ``beta = 0``).
    ``fig6_leaky_width`` / ``fig23_leaky_alpha`` (:func:`leaky_relu_sweep`): ``W LeakyReLU(V x)``
    per ``width`` and slope ``alpha``; ``bound`` (Lemma 4), ``tightness`` and the bound's terms.
    ``fig7_batchnorm`` (:func:`batchnorm_sweep`): ``W V x`` vs ``W BN(V x)`` per ``width``
    (``batchnorm`` False / True), κ from the autodiff reference. BatchNorm1d is in *eval* mode
    with its running statistics set to the mean and biased variance of ``V x`` over the ``n``
    samples: its forward values are those of training mode on the full batch, but each output
    depends on its own sample only, which the per-sample GN ``(1/n) sum_i J_i^T J_i`` (and the
    reference's per-sample Jacobian) needs. Training mode with a batch of one sample is undefined,
    and eval mode with the default running statistics (0, 1) is the identity at init. The BN
    affine parameters count as parameters; the derivative through the batch statistics is not
    taken.
    ``fig1_pruning`` (:func:`pruning_sweep`): a bias-free ReLU MLP on digits (``init``: Kaiming
    normal, or ``torch_default``, the draw of ``nn.Linear`` that the paper's I.1 used), pruned layer
    by layer by magnitude at init (the ``prune_rate`` fraction of smallest ``|w|`` of each matrix
    set to 0 and kept at 0); κ over the remaining weights (reference Jacobian restricted to them) on
    ``gn_samples`` training rows, then training (plain SGD, or the sweep's ``optimizer``) on the
    MSE to one-hot labels (``1/2`` squared error summed over outputs, mean over the batch;
    mini-batches of the shuffled training set per epoch). One row per (prune rate, seed, epoch)
    with ``train_loss`` on the whole training set (eval mode); the κ columns repeat along the
    epochs; ``network`` names the net, ``n_params`` counts the parameters left.

Pruning architectures (:mod:`architectures`; ``fig13_pruning_vit``, ``fig14_pruning_resnet20``,
``fig15_pruning_resnet32``, ``fig16_pruning_vgg5``; table as ``fig1_pruning``)
    Appendix I.1's networks as stand-ins for the digits' 8 x 8 images (1 channel, all 64 pixels,
    10 classes), PyTorch's default init (with biases), float64. ViT: 4 x 4 patches (4 tokens and
    a class token), width 16, 2 pre-norm blocks of 2 heads with a GELU MLP of width 32, learned
    position embedding, LayerNorm and a linear head (5 018 parameters). ResNet-20 / -32: He et
    al.'s CIFAR ResNet (a 3 x 3 conv-BN-ReLU, 3 stages of 3 / 5 basic blocks with 4, 8, 16
    channels, stride 2 into stages 2 and 3, 1 x 1 conv-BN skips where the shape changes, global
    average pooling, a linear head; 17 462 / 29 782 parameters). VGG-5: 3 conv-BN-ReLU layers
    (8, 16, 32 channels, 2 x 2 max-pooling after the last two) and 2 linear layers (128 -> 128
    -> 10; 23 802 parameters). Every parameter of two or more dimensions named ``weight`` (the
    weight matrices and kernels) is pruned by magnitude, layer by layer; biases, normalisation
    parameters, the class token and the position embedding are kept. κ over the remaining
    parameters with BatchNorm in eval mode at the full-batch statistics of the GN rows (as
    ``fig7_batchnorm``); training in train mode (batch statistics) with the paper's optimizers:
    AdamW for the ViT, SGD with momentum and weight decay for the CNNs.

    ``fig8_linear_cnn`` (:func:`linear_cnn_sweep`): two-layer linear CNNs on the digits' 8 x 8
    images (all 64 pixels, whitened on the flattened images): ``filters`` F of size
    ``kernel_size`` s (same padding, no bias) then, per ``head``, a linear read-out to the 10
    classes (κ exact through the Jacobian) or a second s x s convolution from F maps to one
    output map (Eq. 15; κ from the autodiff reference), Kaiming normal (fan-in s^2, then 64 F
    or F s^2), tolerance rank.

Appendices (:mod:`appendices`)
    ``appF_functional_hessian`` (:func:`functional_hessian_sweep`): ``W V x`` (Kaiming normal)
    learning a teacher ``Z x`` (``Z_ij ~ N(0, 1/d)``, its own seed) on ``n`` Gaussian samples
    whose coordinates have standard deviations from 1 to 10 (raw, or whitened); ``kappa`` is
    κ(H_F) = σ_max(Ω) / σ_min⁺(Ω) from the closed form (the reliability columns are those of
    the spectrum of ΩᵀΩ, whose κ is κ(H_F)²), ``reference_error`` the largest deviation of
    the autodiff H_F's ``|eigenvalues|`` from it (relative to σ_max), ``kappa_residual`` =
    κ(W V - Z), ``bound`` = Eq. (18) = κ(W V - Z) κ(Σ), ``tightness``.
    ``appG_init_bounds`` (:func:`init_bound_sweep`): the exact κ of ``W V x`` at Kaiming init
    (variances ``2 / d``, ``2 / m``) per width with ``bound_lemma1``, ``bound_lemma7`` (``t``
    for ``probability``), ``bound_asymptotic_g2`` (Lemma 7 at ``t = 0``) and their tightness.

During training (:mod:`during_training`; digits with labels, SGD as ``fig1_pruning``, one row
per recorded epoch: 0, every ``record_every``-th and the last, with ``train_loss`` on all
training rows)
    ``fig10_linear_training`` (:func:`linear_training_sweep`): deep linear nets (one per depth
    and seed, ``init`` Kaiming normal by default), the exact κ on all training rows, Lemma 2
    (``bound_convex`` / ``bound_max``, tightness) and its per-layer components as JSON lists
    (``PER_LAYER_COLUMNS``: ``term``, ``gamma``, ``kappa_sq_outer`` = κ²(W^{L:l+1}),
    ``kappa_sq_inner`` = κ²(W^{l-1:1}), ``lambda_min_outer`` / ``lambda_min_inner`` = their
    σ²_min; the empty product is the identity).
    ``fig18_relu_training`` (:func:`relu_training_sweep`): one-hidden-layer ReLU nets per width
    with its own learning rate (``lrs``; Xavier normal by default), the GN κ on the first
    ``gn_samples`` training rows (tolerance rank), and ``eigenvalues`` (JSON, descending, every
    eigenvalue of the smaller GN form) at init and at the end for ``spectrum_width`` and the
    first seed (empty elsewhere). A net whose hidden units are all inactive on the GN rows has a
    zero GN matrix: ``kappa`` NaN, ``reliable`` false, ``solver`` ``none``.

exp7 (:func:`exp7_rows`, :func:`exp7_table`)
    For a deep linear trial (depth ``L``) or the ReLU MLP (= leaky ReLU with ``alpha = 0``), at
    each stage (``initial``: epoch 0, ``final``: the last epoch, or ``recorded``: every epoch
    whose weights the trial saved, ``save_recorded_weights``) and for the inputs ``gaussian``
    (``n`` samples of ``N(0, I_d)``, the training distribution) and ``whitened`` (the same
    samples whitened): the
    exact κ and one row per applicable bound: ``lemma2_convex``, ``lemma2_max`` (deep linear),
    ``lemma1`` (depth 2), ``lemma4`` (ReLU); columns ``EXP7_ROW_COLUMNS`` (``bound_value``,
    ``tightness``, ``kappa_sigma``, ``diverged``, ``epoch``, ...). The summary over trials has
    one row per (model, depth, stage, epoch, inputs, n, bound) with the statistics of κ and of
    the tightness. GN part ``exp7`` runs the stages of ``gauss_newton.exp7`` on the trials of
    its experiment; part ``along_training`` the ``recorded`` stage on the trials of
    ``gauss_newton.along_training.experiment`` (table ``gn_along_training``).
"""
