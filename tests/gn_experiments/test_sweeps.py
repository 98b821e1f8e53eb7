"""The GN experiments and rules: data, tables with their documented columns, bounds >= exact,
and the GN outputs of the end-to-end run of the test config (with a no-op rerun check)."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from gn_cases import assert_bound_holds, rel
from support import REPO, SMALL_CONFIG, run_snakemake

from matcond.core.config import load_yaml, validate_config
from matcond.core.files import write_parquet
from matcond.core.gn_data import DIGITS_ROWS
from matcond.figures.catalog import FIGURES as CATALOG
from matcond.figures.drawing import FIGURES
from matcond.gauss_newton import (
    LeakyReLUNet,
    input_covariance,
    linear_gn_spectrum,
    network_jacobian,
    reference_gn_spectrum,
)
from matcond.gauss_newton.reference import data_span_factor
from matcond.gn_experiments.data import digits_data, make_inputs, whiten
from matcond.gn_experiments.exp7 import EXP7_MODELS, EXP7_ROW_COLUMNS, exp7_rows, exp7_table
from matcond.gn_experiments.networks import kaiming_normal, one_hidden_linear
from matcond.gn_experiments.records import leaky_record
from matcond.gn_experiments.sgd import MLP, recorded_epochs
from matcond.gn_experiments.sweeps import (
    SWEEP_COLUMNS,
    SWEEPS,
    run_sweep,
)

pytestmark = pytest.mark.workflow  # the Gauss-Newton rules end to end

EXP7_SETTINGS = {
    "stages": ["initial", "final"],
    "n_samples": 40,
    "relu_n_samples": 5,
    "data_seed": 0,
}


def bound_pairs(table: pd.DataFrame) -> list[tuple[str, str]]:
    """(bound column, exact column) pairs present in a table."""
    pairs = [("bound_convex", "kappa"), ("bound_max", "bound_convex"), ("bound", "kappa")]
    pairs += [("bound_value", "kappa")]
    numeric = [c for c in table if pd.api.types.is_numeric_dtype(table[c])]
    return [(b, e) for b, e in pairs if b in numeric and e in numeric]


def assert_bounds_hold(table: pd.DataFrame) -> None:
    pairs = bound_pairs(table)
    for bound, exact in pairs:
        for b, e in zip(table[bound], table[exact], strict=True):
            if not math.isnan(e):
                assert_bound_holds(b, e)
    for column in [c for c in table if c.startswith("tightness")]:
        values = table[column].dropna()
        assert (values >= 1 - 1e-10).all(), column


# ----------------------------------------------------------------------------------- data


def test_digits_are_scaled_and_keep_only_informative_pixels():
    x, labels = digits_data()
    assert x.shape == (DIGITS_ROWS, 61) and labels.shape == (DIGITS_ROWS,)  # the config's count
    assert x.min() == 0.0 and x.max() == 1.0
    assert (x != 0).any(axis=0).all()
    assert set(labels) == set(range(10))
    sub, sub_labels = digits_data(100, seed=3)
    again, _ = digits_data(100, seed=3)
    assert sub.shape == (100, 61) and np.array_equal(sub, again)
    rows = [int(np.flatnonzero((x == row).all(axis=1))[0]) for row in sub[:5]]
    assert rows == sorted(rows) and np.array_equal(labels[rows], sub_labels[:5])


@pytest.mark.parametrize("n", [1797, 40])
def test_whitening_gives_orthonormal_columns_or_rows(n):
    x, _ = digits_data(n)
    white = whiten(x)
    assert white.shape == x.shape
    gram = white.T @ white if n >= x.shape[1] else white @ white.T
    assert np.allclose(gram, np.eye(gram.shape[0]), atol=1e-12)
    # the same column space as x, and an isotropic Sigma
    projector = white @ np.linalg.pinv(white)
    assert np.allclose(projector @ x, x, atol=1e-10)
    assert input_covariance(torch.as_tensor(white)).is_isotropic(1e-10)


def test_inputs_of_both_data_sets():
    data = {"seed": 0, "gaussian": {"n_samples": 30, "dim": 7, "outputs": 3}}
    gaussian = make_inputs("gaussian", False, None, data)
    assert gaussian.x.shape == (30, 7) and gaussian.outputs == 3 and gaussian.labels is None
    digits = make_inputs("digits", True, 50, data)
    assert digits.x.shape == (50, 61) and digits.outputs == 10
    assert digits.columns() == {
        "dataset": "digits",
        "whitened": True,
        "n_samples": 50,
        "d": 61,
        "k": 10,
    }
    with pytest.raises(ValueError, match="unknown dataset"):
        make_inputs("mnist", False, None, data)


def test_kaiming_normal_is_pytorch_s_and_seeded():
    weights = kaiming_normal([400, 300, 5], seed=1)
    assert [tuple(w.shape) for w in weights] == [(300, 400), (5, 300)]
    assert abs(float(weights[0].std()) / math.sqrt(2 / 400) - 1) < 0.02
    assert torch.equal(kaiming_normal([400, 300, 5], seed=1)[1], weights[1])
    assert not torch.equal(kaiming_normal([400, 300, 5], seed=2)[0], weights[0])


# --------------------------------------------------------------------------------- sweeps


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_sweep_tables_have_their_columns_and_bounds_hold(name, gn_config):
    table = run_sweep(name, gn_config["sweeps"][name], gn_config["data"])
    assert list(table.columns) == SWEEP_COLUMNS[name]
    assert len(table) > 0 and table["kappa"].notna().all()
    assert table["reliable"].all(), table.loc[~table["reliable"], "reliability"].unique()
    assert (table["kappa"] >= 1 - 1e-12).all()
    assert_bounds_hold(table)
    assert FIGURES[f"gn_{name}"]  # every sweep has a figure


def test_identical_sweeps_write_identical_bytes(gn_config, tmp_path):
    """No wall-clock column: two runs of a sweep give byte-identical tables."""
    settings = gn_config["sweeps"]["fig3_bounds"]
    for run in ("a", "b"):  # one file name: a table's footer records its name
        (tmp_path / run).mkdir()
        table = run_sweep("fig3_bounds", settings, gn_config["data"])
        write_parquet(table, tmp_path / run / "t.parquet")
    assert (tmp_path / "a" / "t.parquet").read_bytes() == (
        tmp_path / "b" / "t.parquet"
    ).read_bytes()


def test_depth_sweep_rows_and_per_layer_terms(gn_config):
    settings = gn_config["sweeps"]["fig3_bounds"]
    table = run_sweep("fig3_bounds", settings, gn_config["data"])
    n_rows = len(settings["datasets"]) * len(settings["depths"]) * settings["seeds"]
    assert len(table) == n_rows
    for depth, terms, gammas in zip(
        table["depth"], table["term_per_layer"], table["gamma_per_layer"], strict=True
    ):
        assert len(json.loads(terms)) == depth and abs(sum(json.loads(gammas)) - 1) < 1e-12
    one_layer = table[table["depth"] == 1]
    assert np.allclose(one_layer["kappa"], one_layer["kappa_sigma"], rtol=1e-10)
    # a Kronecker sum on whitened full-rank data: Lemma 1 = Lemma 2 (convex) is exact (the
    # digits subsample has always-zero pixels, so its Sigma is a projector of lower rank)
    tight = table[(table["depth"] == 2) & table["whitened"] & (table["dataset"] == "gaussian")]
    assert len(tight) and np.allclose(tight["tightness_convex"], 1.0, rtol=1e-9)


def test_residual_sweep_has_the_plain_net_and_every_beta(gn_config):
    settings = gn_config["sweeps"]["fig5_residual"]
    table = run_sweep("fig5_residual", settings, gn_config["data"])
    plain = run_sweep(
        "fig2_depth",
        {**settings, "widths": [settings["width"]], "width_factors": []},
        gn_config["data"],
    )
    linear = table[table["beta_rule"] == "0"].reset_index(drop=True)
    assert np.allclose(linear["kappa"], plain["kappa"], rtol=1e-10)
    deep = table[table["depth"] == 3].set_index(["dataset", "seed", "beta_rule"])["beta"]
    assert set(deep.round(12)) == {0.0, 1.0, round(1 / math.sqrt(3), 12), round(1 / 3, 12)}


def test_leaky_relu_matches_the_autodiff_reference_and_the_linear_net():
    x = whiten(np.random.default_rng(0).standard_normal((6, 9)))
    weights = kaiming_normal([9, 7, 3], seed=0)
    for alpha in (0.0, 0.3):
        record = leaky_record(weights, x, alpha)
        reference = reference_gn_spectrum(LeakyReLUNet(weights, alpha), x)
        assert rel(record["kappa"], reference.kappa) < 1e-8
        assert_bound_holds(record["bound"], record["kappa"])
    linear = linear_gn_spectrum(weights, x)
    assert rel(leaky_record(weights, x, 1.0)["kappa"], linear.kappa) < 1e-8


def test_batchnorm_arms():
    x = np.random.default_rng(1).standard_normal((20, 5)) * [1, 2, 3, 4, 50]
    weights = kaiming_normal([5, 8, 3], seed=0)
    plain = one_hidden_linear(weights, x, batchnorm=False)
    structured = linear_gn_spectrum(weights, x)
    assert rel(reference_gn_spectrum(plain, x).kappa, structured.kappa) < 1e-8
    model = one_hidden_linear(weights, x, batchnorm=True)
    assert not model.training
    samples = torch.as_tensor(x)
    training = copy.deepcopy(model).train()  # BatchNorm with the batch's own statistics
    with torch.no_grad():
        assert torch.allclose(model(samples), training(samples), atol=1e-10)
    spectrum = reference_gn_spectrum(model, x)
    assert spectrum.kappa >= 1 and math.isfinite(spectrum.kappa)


@pytest.mark.parametrize("batchnorm", [False, True])
def test_the_data_span_factor_has_the_jacobians_spectrum(batchnorm):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 6)) * [1, 2, 3, 4, 50, 0]  # a constant input, as digits has
    x[:, 4] = x[:, 0] + x[:, 1]  # and a rank-deficient X
    model = one_hidden_linear(kaiming_normal([6, 40, 3], seed=1), x, batchnorm)
    full = reference_gn_spectrum(model, x)
    spanned = reference_gn_spectrum(model, x, affine=True)
    jac = network_jacobian(model, x)
    factor = data_span_factor(jac, x)
    assert factor.shape == (7 * 3, jac.shape[1])  # (d + 1) k rows instead of n k
    assert spanned.solver == "reference_data_span" and spanned.reliable and full.reliable
    assert spanned.rank == full.rank < factor.shape[0]
    for key in ("kappa", "lambda_max", "lambda_min_nonzero"):
        assert rel(getattr(spanned, key), getattr(full, key)) < 1e-10, key
    # independent float64 reference: the nonzero eigenvalues of J^T J / n
    eig = np.linalg.eigvalsh(jac.numpy().T @ jac.numpy() / len(x))[::-1][: full.rank]
    assert rel(spanned.kappa, eig[0] / eig[-1]) < 1e-6


def test_the_data_span_factor_refuses_a_network_not_affine_in_its_input():
    x = np.random.default_rng(3).standard_normal((30, 6))
    relu = LeakyReLUNet(kaiming_normal([6, 40, 3], seed=1), 0.0)
    with pytest.raises(ValueError, match="not affine in its input"):
        reference_gn_spectrum(relu, x, affine=True)
    few = x[:7]  # n <= d + 1: nothing to project, the Jacobian itself
    jac = network_jacobian(relu, few)
    assert data_span_factor(jac, few) is jac


def test_a_dead_relu_net_is_recorded_as_such(gn_config):
    settings = {**gn_config["sweeps"]["fig18_relu_training"], "widths": [3], "lrs": [50.0]}
    table = run_sweep("fig18_relu_training", {**settings, "spectrum_width": 3}, gn_config["data"])
    dead = table[table["solver"] == "none"]
    assert len(dead), "a learning rate of 50 kills every hidden unit of a width-3 ReLU net"
    assert dead["kappa"].isna().all() and not dead["reliable"].any()
    assert (dead["reliability"].str.contains("dead")).all()
    alive = table[table["solver"] != "none"]
    assert alive["kappa"].notna().all()


def test_recorded_epochs_and_the_mlp_s_activations():
    assert recorded_epochs(10, 4) == [0, 4, 8, 10] and recorded_epochs(3, 1) == [0, 1, 2, 3]
    weights = kaiming_normal([3, 4, 2], seed=1)
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    v, w = weights
    for alpha in (0.0, 0.3, 1.0):
        hidden = x @ v.T
        expected = torch.where(hidden > 0, hidden, alpha * hidden) @ w.T
        torch.testing.assert_close(MLP(weights, alpha=alpha)(x), expected)


# ----------------------------------------------------------------------------------- exp7


def saved_weights(model: str, depth: int, d: int = 6, diverge: bool = False) -> dict:
    """Weights laid out as rule `train` saves them (``{stage}.{matrix}``, input layer first)."""
    gen = np.random.default_rng(0)
    layers = 2 if model == "relu_mlp" else depth
    out = {}
    for stage in ("initial", "final", "target"):
        mats = [gen.standard_normal((d, d)) / math.sqrt(d) for _ in range(layers)]
        if diverge and stage == "final":
            mats[0][0, 0] = np.nan
        product = mats[0]
        for w in mats[1:]:
            product = w @ product
        out[f"{stage}.product"] = product
        out.update({f"{stage}.layer{i + 1}": w for i, w in enumerate(mats)})
    return out


@pytest.mark.parametrize(
    ("model", "depth", "bounds"),
    [
        ("deep_linear", 2, {"lemma1", "lemma2_convex", "lemma2_max"}),
        ("deep_linear", 3, {"lemma2_convex", "lemma2_max"}),
        ("relu_mlp", 2, {"lemma4"}),
    ],
)
def test_exp7_rows_and_table(model, depth, bounds):
    spec = {"model": model, "depth": depth, "dim": 6, "seed": 4, "epochs": 10}
    rows = exp7_rows(saved_weights(model, depth), spec, EXP7_SETTINGS)
    assert list(rows.columns) == EXP7_ROW_COLUMNS
    assert set(rows["bound"]) == bounds
    assert len(rows) == 2 * 2 * len(bounds)  # stages x inputs x bounds
    assert set(rows["n_samples"]) == {5 if model == "relu_mlp" else 40}
    assert_bounds_hold(rows)
    whitened = rows[(rows["inputs"] == "whitened") & (rows["bound"] != "lemma4")]
    assert np.allclose(whitened["kappa_sigma"], 1.0)
    if depth == 2 and model == "deep_linear":  # a Kronecker sum on whitened data: tight
        convex = whitened[whitened["bound"] == "lemma2_convex"]
        assert np.allclose(convex["tightness"], 1.0, rtol=1e-9)
    diverged = exp7_rows(saved_weights(model, depth, diverge=True), spec, EXP7_SETTINGS)
    assert diverged.loc[diverged["stage"] == "final", "diverged"].all()
    assert diverged.loc[diverged["stage"] == "final", "kappa"].isna().all()
    table = exp7_table(pd.concat([rows, diverged.assign(seed=5)]), "exp7_depth")
    final = table[table["stage"] == "final"]
    assert (final["n"] == 1).all() and (final["n_diverged"] == 1).all()
    assert (table.loc[table["stage"] == "initial", "n"] == 2).all()
    assert list(table["stage"].unique()) == ["initial", "final"]
    assert (table["tightness_min"] >= 1 - 1e-10).all()


def test_bounds_along_training_at_every_saved_epoch():
    spec = {"model": "deep_linear", "depth": 2, "dim": 6, "seed": 0, "epochs": 10}
    weights = saved_weights("deep_linear", 2)
    layers = {k.split(".", 1)[1]: v for k, v in weights.items() if k.startswith("final.")}
    for epoch, scale in [(0, 1.0), (5, 2.0), (10, 3.0)]:
        weights |= {f"epoch{epoch}.{name}": scale * w for name, w in layers.items()}
    settings = {**EXP7_SETTINGS, "stages": ["recorded"]}
    rows = exp7_rows(weights, spec, settings)
    assert list(rows.columns) == EXP7_ROW_COLUMNS and set(rows["stage"]) == {"recorded"}
    assert sorted(rows["epoch"].unique()) == [0, 5, 10]
    assert_bounds_hold(rows)
    final = exp7_rows(weights, spec, {**settings, "stages": ["final"]})
    at_10 = rows[rows["epoch"] == 10].reset_index(drop=True)
    assert final["epoch"].eq(10).all()
    # The layers scaled by 3 (epoch 10) vs by 1 (final): the same κ, the same tightness.
    np.testing.assert_allclose(at_10["kappa"], final["kappa"], rtol=1e-9)
    np.testing.assert_allclose(at_10["tightness"], final["tightness"], rtol=1e-9)
    table = exp7_table(pd.concat([rows, rows.assign(seed=1)]), "walk")
    assert list(table["epoch"].unique()) == [0, 5, 10] and (table["n"] == 2).all()
    with pytest.raises(ValueError, match="save_recorded_weights: true"):
        exp7_rows(saved_weights("deep_linear", 2), spec, settings)


def test_exp7_rejects_the_single_matrix():
    with pytest.raises(ValueError, match="no GN bounds"):
        exp7_rows({}, {"model": "linear", "dim": 4, "seed": 0}, EXP7_SETTINGS)


def test_the_schema_offers_the_exp7_models():
    config = validate_config({"experiments": {"x": {"seeds": 1}}})
    assert tuple(config["gauss_newton"]["exp7"]["models"]) == EXP7_MODELS


# ---------------------------------------------------------------------------- end to end


def snakemake(workdir: Path, *args: str, config: Path = SMALL_CONFIG) -> str:
    """Run snakemake on ``config``; ``args`` (options, then targets) come last."""
    proc = run_snakemake(workdir, "--cores", "2", *args, configfile=config)
    return proc.stdout + proc.stderr


def gn_targets(config: dict) -> list[str]:
    """Every GN table, and every figure of the catalog drawn from them."""
    parts = {"exp7", "along_training", *config["sweeps"]}
    figures = [n for n, f in CATALOG.items() if f.gauss_newton and set(f.gauss_newton) <= parts]
    tables = [f"results/tables/gn_{part}.{ext}" for part in parts for ext in ("parquet", "csv")]
    return tables + [f"results/figures/{n}.{ext}" for n in figures for ext in ("png", "pdf")]


def test_end_to_end_on_the_test_config(small_run, gn_config):
    """The GN outputs of the shared run of the small config (tests/conftest.py)."""
    targets = gn_targets(gn_config)
    paper_figures = [t for t in targets if "/figures/gn_fig" in t and t.endswith(".png")]
    assert len(paper_figures) >= 19 and "results/figures/gn_along_training.png" in targets
    for target in targets:
        assert (small_run / target).stat().st_size > 0, target
    per_trial = sorted((small_run / "results" / "gn").rglob("*.parquet"))
    assert len(per_trial) == 2 * 6  # (exp7, along_training) x (L = 2, 3, ReLU MLP) x 2 seeds
    for path in per_trial:
        rows = pd.read_parquet(path)
        assert list(rows.columns) == ["trial", *EXP7_ROW_COLUMNS]
        assert_bounds_hold(rows)
    exp7 = pd.read_csv(small_run / "results" / "tables" / "gn_exp7.csv")
    assert set(exp7["stage"]) == {"initial", "final"} and set(exp7["n"]) == {2}
    along = pd.read_csv(small_run / "results" / "tables" / "gn_along_training.csv")
    assert sorted(along["epoch"].unique()) == [0, 10, 20] and set(along["n"]) == {2}
    for name in gn_config["sweeps"]:
        table = pd.read_parquet(small_run / "results" / "tables" / f"gn_{name}.parquet")
        assert list(table.columns) == SWEEP_COLUMNS[name]
        assert_bounds_hold(table)
    # nothing reruns without an edit; editing one sweep reruns that sweep and its figure only
    assert "Nothing to be done" in snakemake(small_run, "-n", *targets)
    edited = yaml.safe_load(SMALL_CONFIG.read_text())
    edited["gauss_newton"]["sweeps"]["fig6_leaky_width"]["seeds"] = 3
    edited_file = small_run / "edited-gn.yaml"  # tests/test_workflow.py dry-runs its own
    edited_file.write_text(yaml.safe_dump(edited))
    out = snakemake(small_run, "-n", *targets, config=edited_file)
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(?:.*\n)*?    output: ([^,\n]+)", out, re.M)
    assert sorted(jobs) == [
        ("gn_sweep", "results/tables/gn_fig6_leaky_width.parquet"),
        ("plot", "results/figures/gn_fig6_leaky_width.png"),
    ]


def test_the_full_gn_config_merges_over_the_default():
    from snakemake.utils import update_config

    config = load_yaml(REPO / "config" / "config.yaml")
    update_config(config, load_yaml(REPO / "config" / "gauss_newton_full.yaml"))
    sweeps = validate_config(config)["gauss_newton"]["sweeps"]
    assert sweeps["fig8_linear_cnn"]["n_samples"] == 50
    assert sweeps["fig8_linear_cnn"]["kernel_sizes"] == [1, 3, 5, 7]  # kept from the default
    assert sweeps["fig10_linear_training"]["epochs"] == 500
    assert sweeps["fig15_pruning_resnet32"]["blocks"] == 5


def test_a_config_of_one_gn_sweep_only_runs_and_reports(tmp_path):
    """The fourth kind of config (beside the paper's, the small one and weights only): one
    Gauss-Newton sweep, no experiment. It runs, and its report builds with the sweep's figure
    and says that no claim is checked."""
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    sweep = {"fig2_depth": config["gauss_newton"]["sweeps"]["fig2_depth"]}
    gn = {**config["gauss_newton"], "sweeps": sweep}
    (tmp_path / "gn.yaml").write_text(yaml.safe_dump({"experiments": {}, "gauss_newton": gn}))
    snakemake(tmp_path, config=tmp_path / "gn.yaml")
    snakemake(tmp_path, "--report", "results/report.html", config=tmp_path / "gn.yaml")
    report = (tmp_path / "results" / "report.html").read_text()
    assert "configures no experiment" in report and "gn_fig2_depth.png" in report
