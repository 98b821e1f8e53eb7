"""The first-order theory of the condition-number error against closed forms, Monte Carlo and
an independent simulation of online SGD (numpy, float64)."""

import math

import numpy as np
import pandas as pd
import pytest
from support import REPO

from matcond.condition_number import theory
from matcond.condition_number.theory import HELD_OUT_CELLS, HELD_OUT_RANGES, held_out_cells
from matcond.core.config import load_yaml, validate_config

D, STEPS, BATCH, LR, NOISE, INIT = 24, 150, 16, 0.02, 0.05, 1e-3


def target(d: int = D) -> np.ndarray:
    """A target with a known spectrum, from 1.0 down to 0.25."""
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.standard_normal((d, d)))
    v, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return u @ np.diag(np.linspace(1.0, 0.25, d)) @ v.T


def simulate_sgd(w_star: np.ndarray, seeds: int) -> np.ndarray:
    """Final weights of online SGD on 1/2 mean ||W x - W* x - eps||^2, one run per seed."""
    d = w_star.shape[0]
    finals = []
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        w = INIT * rng.standard_normal((d, d))
        for _ in range(STEPS):
            x = rng.standard_normal((BATCH, d))
            y = x @ w_star.T + NOISE * rng.standard_normal((BATCH, d))
            w -= LR * (x @ w.T - y).T @ x / BATCH
        finals.append(w)
    return np.array(finals)


@pytest.fixture(scope="module")
def simulated():
    w_star = target()
    return w_star, simulate_sgd(w_star, 300)


def test_noise_model_closed_forms():
    m = theory.noise_model(LR, STEPS, BATCH, 0.0, 0.0, D)
    assert m.scale == pytest.approx(1 - (1 - LR) ** STEPS)
    assert m.entry_std == 0.0
    assert m.multiplicative == pytest.approx(LR * (1 - LR) ** (STEPS - 1))
    q2 = 1 - 2 * LR + LR**2 * (1 + (D + 1) / BATCH)
    assert m.row_scale**2 == pytest.approx(1 - 2 * (1 - LR) ** STEPS + q2**STEPS)
    init_only = theory.noise_model(LR, STEPS, BATCH, 0.0, INIT, D)
    assert init_only.entry_std == pytest.approx(INIT * q2 ** (STEPS / 2))
    # label noise alone reaches its stationary variance noise^2 lr^2 / ((1 - q2) B)
    long = theory.noise_model(LR, 100_000, BATCH, NOISE, 0.0, D)
    assert long.entry_std**2 == pytest.approx(NOISE**2 * LR**2 / ((1 - q2) * BATCH))
    # for d / B -> 0 the rows are learned to the mean factor m
    thin = theory.noise_model(LR, STEPS, 10**9, 0.0, 0.0, D)
    assert thin.row_scale == pytest.approx(thin.scale, rel=1e-6)


def test_the_exact_second_moment_of_a_step():
    """E||a (I - lr S)||^2 = q2 ||a||^2 with S a Wishart batch covariance."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(D)
    x = rng.standard_normal((50_000, BATCH, D))
    steps = a - LR * np.einsum("d,nbd,nbe->ne", a, x, x) / BATCH
    q2 = 1 - 2 * LR + LR**2 * (1 + (D + 1) / BATCH)
    # q2 differs from (1 - lr)^2 by lr^2 (d + 1) / B = 6e-4: far above the 5e-5 sampling error
    assert np.mean(np.sum(steps**2, axis=1)) == pytest.approx(q2 * a @ a, rel=2e-4)


def test_median_kappa_error_matches_monte_carlo():
    z = np.random.default_rng(0).standard_normal(2_000_000)
    for stds in ([0.01], [0.7], [0.02, 0.3, 1.5]):
        draws = np.concatenate([np.abs(np.expm1(s * z[: 2_000_000 // len(stds)])) for s in stds])
        assert theory.median_kappa_error(np.array(stds)) == pytest.approx(
            np.median(draws), rel=5e-3
        )
    assert math.isnan(theory.median_kappa_error(np.array([])))


def test_the_additive_noise_is_iid_with_the_predicted_std(simulated):
    """E = W_T - W* (m I + eps M): its projection on the target's bottom singular pair, where
    the multiplicative part is s_n eps M_nn, small, has the predicted std."""
    w_star, finals = simulated
    model = theory.noise_model(LR, STEPS, BATCH, NOISE, INIT, D)
    u, s, vt = np.linalg.svd(w_star)
    projection = np.einsum("i,kij,j->k", u[:, -1], finals - model.scale * w_star, vt[-1])
    multiplicative = s[-1] * model.multiplicative * math.sqrt(2 * STEPS / BATCH)
    predicted = math.hypot(model.entry_std, multiplicative)
    assert projection.std() == pytest.approx(predicted, rel=0.12)


def test_log_kappa_spread_and_median_error_match_the_simulation(simulated):
    w_star, finals = simulated
    s = np.linalg.svd(w_star, compute_uv=False)
    kappa_star = s[0] / s[-1]
    kappas = np.array([np.linalg.cond(w) for w in finals])
    delta = np.log(kappas / kappa_star)
    model = theory.noise_model(LR, STEPS, BATCH, NOISE, INIT, D)
    std = theory.log_kappa_std(model, s[0], s[-1])
    assert delta.std() == pytest.approx(std, rel=0.12)
    # first order has no bias; second order adds a small positive one (s_n pushed down)
    assert abs(delta.mean()) < 0.35 * std
    errors = np.abs(kappas / kappa_star - 1)
    boot = np.random.default_rng(1).choice(errors, size=(2000, errors.size))
    low, high = np.percentile(np.median(boot, axis=1), [0.5, 99.5])
    assert low <= theory.median_kappa_error(np.array([std])) <= high


def test_row_norm_error_matches_the_simulation(simulated):
    w_star, finals = simulated
    rows = np.linalg.norm(w_star, axis=1)
    errors = [
        np.linalg.norm(np.linalg.norm(w, axis=1) - rows) / np.linalg.norm(rows) for w in finals
    ]
    model = theory.noise_model(LR, STEPS, BATCH, NOISE, INIT, D)
    predicted = theory.row_norm_error(model, D, np.linalg.norm(w_star))
    assert np.sqrt(np.mean(np.square(errors))) == pytest.approx(predicted, rel=0.02)


def test_the_theory_applies_to_plain_sgd_only():
    spec = {"model": "linear", "strategy": "standard", "optimizer": "sgd", "init": "gaussian"}
    assert theory.applies({**spec, "weight_decay": 0.0})
    assert not theory.applies({**spec, "optimizer": "adam"})
    assert not theory.applies({**spec, "init": "orthogonal"})
    assert not theory.applies({**spec, "strategy": "multipliers"})
    assert not theory.applies({**spec, "weight_decay": 1e-3})


def per_trial_table(optimizer: str = "sgd") -> pd.DataFrame:
    """A per-trial table of 8 trials at d = 24: the simulated final kappa errors."""
    rng = np.random.default_rng(5)
    rows = []
    for seed in range(8):
        settings = {
            "model": "linear",
            "strategy": "standard",
            "optimizer": optimizer,
            "weight_decay": 0.0,
            "init": "gaussian",
            "lr": LR,
            "steps_per_epoch": 1,
            "batch_size": BATCH,
            "noise_std": NOISE,
            "init_scale": INIT,
            "dim": D,
            "seed": seed,
            "matrix": "product",
            "epoch": STEPS,
            "diverged": False,
        }
        values = {
            "spectral_norm": (1.0, 1.0, 0.0),
            "condition_number": (4.0, 4.0, abs(0.05 * rng.standard_normal())),
            "frobenius_norm": (3.0, 3.0, 0.0),
            "row_norms": (np.nan, np.nan, 0.05),
        }
        for component, (trained, target_value, error) in values.items():
            rows.append(
                {
                    **settings,
                    "component": component,
                    "trained": trained,
                    "target": target_value,
                    "error": error,
                }
            )
    return pd.DataFrame(rows)


def test_prediction_table_compares_each_cell_and_skips_what_the_theory_does_not_cover():
    table = theory.prediction_table({"sgd": per_trial_table(), "adam": per_trial_table("adam")})
    assert set(table["experiment"]) == {"sgd"}
    assert set(table["component"]) == {"condition_number", "row_norms"}
    kappa = table[table["component"] == "condition_number"].iloc[0]
    model = theory.noise_model(LR, STEPS, BATCH, NOISE, INIT, D)
    std = theory.log_kappa_std(model, 1.0, 0.25)
    assert kappa["predicted"] == pytest.approx(theory.median_kappa_error(np.array([std])))
    assert kappa["ci_low"] <= kappa["measured"] <= kappa["ci_high"]
    assert kappa["agrees"] == (kappa["ci_low"] <= kappa["predicted"] <= kappa["ci_high"])
    assert kappa["dim"] == D and kappa["n"] == 8


def test_each_cell_is_compared_at_its_own_epochs():
    """An experiment whose cells train for different lengths (the held-out grid): each cell
    is compared at the epochs it recorded, not at another cell's."""
    longer = per_trial_table().assign(lr=LR / 2, epoch=2 * STEPS)
    table = theory.prediction_table({"mixed": pd.concat([per_trial_table(), longer])})
    kappa = table[table["component"] == "condition_number"]
    assert sorted(zip(kappa["lr"], kappa["epoch"], strict=True)) == [
        (LR / 2, 2 * STEPS),
        (LR, STEPS),
    ]


def test_the_held_out_grid_is_the_draw_of_its_seed():
    """The paper config's theory_held_out variants are exactly
    matcond.condition_number.theory.held_out_cells (no hand-picked cell), inside the declared
    ranges, and the theory covers them."""
    config = load_yaml(REPO / "config" / "config.yaml")
    experiment = config["experiments"]["theory_held_out"]
    cells = held_out_cells()
    assert experiment["variants"] == cells and len(cells) == HELD_OUT_CELLS
    for cell in cells:
        for key in ("dim", "lr", "init_scale", "noise_std", "epochs"):
            low, high = HELD_OUT_RANGES[key]
            assert low <= cell[key] <= high, (key, cell)
        assert cell["batch_size"] in HELD_OUT_RANGES["batch_size"]
    assert held_out_cells(seed=1) != cells  # the seed decides
    assert "theory_held_out" in validate_config(config)["theory"]["experiments"]
