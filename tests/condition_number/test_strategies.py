"""Models and corrective strategies: closed forms and autograd references, float64."""

import numpy as np
import pytest
import torch

from matcond.condition_number import models
from matcond.condition_number.models import MODELS
from matcond.condition_number.run import gradient_signal, run_trial
from matcond.condition_number.strategies import (
    STRATEGIES,
    Strategy,
    spectral_penalty_grad,
    svd_correct,
)
from matcond.condition_number.training import build_model, init_layer
from matcond.core.config import load_schema
from matcond.core.trials import choice_params

CPU = torch.device("cpu")


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_spectral_penalty_gradient_matches_autograd_per_seed():
    w = torch.stack([randn(5, 5), randn(5, 5, seed=1)]).requires_grad_()
    goals = torch.tensor([0.7, 0.2], dtype=torch.float64)
    s = torch.linalg.svdvals(w)
    (0.3 * (torch.log(s[:, 0] / s[:, -1]) - goals) ** 2).sum().backward()
    torch.testing.assert_close(
        spectral_penalty_grad(w, goals, 0.3, 1e9), w.grad, rtol=1e-9, atol=1e-12
    )


def test_spectral_penalty_gradient_is_clipped_per_seed_and_zero_for_a_singular_matrix():
    w = torch.stack([randn(4, 4), torch.zeros(4, 4, dtype=torch.float64), randn(4, 4, seed=1)])
    grad = spectral_penalty_grad(w, torch.tensor([5.0, 1.0, 5.0], dtype=torch.float64), 10.0, 0.5)
    norms = torch.linalg.vector_norm(grad, dim=(-2, -1))
    assert norms.tolist() == [pytest.approx(0.5), 0.0, pytest.approx(0.5)]


def test_spectral_decay_pulls_kappa_toward_one(spec):
    """spectral_decay knows nothing of the target: it lowers kappa below standard training's."""
    base = {**spec, "epochs": 200, "lr": 0.05, "spectral_clip": 10.0}
    kappa = {}
    for strategy in ("standard", "spectral_decay"):
        table, _ = run_trial({**base, "strategy": strategy, "spectral_decay_lambda": 0.05}, CPU)
        row = table[(table["epoch"] == 200) & (table["component"] == "condition_number")]
        kappa[strategy] = row["trained"].iloc[0]
    assert 1 < kappa["spectral_decay"] < 0.8 * kappa["standard"]


def test_svd_correction_is_not_applied_at_the_last_epoch(spec):
    """The trained matrix is scored after plain steps: with svd_every = epochs there is no
    correction at all, so the run equals standard training up to float32 rounding (standard
    training holds the matrix as its error W - W*, a strategy that acts after each epoch
    holds W: the condition number, 8e-5 relative; a correction moves an error by 80 %)."""
    s = {**spec, "epochs": 10, "svd_every": 10}
    corrected, _ = run_trial({**s, "strategy": "svd_correction"}, CPU)
    standard, _ = run_trial({**s, "strategy": "standard"}, CPU)
    np.testing.assert_allclose(corrected["error"], standard["error"], rtol=1e-3)
    every5, _ = run_trial({**s, "strategy": "svd_correction", "svd_every": 5}, CPU)
    assert not np.allclose(every5["error"], standard["error"], rtol=0.1)


@pytest.mark.parametrize("init", ["gaussian", "lecun_normal", "torch_linear", "orthogonal"])
def test_inits_draw_what_they_say(spec, init):
    dim = 200
    s = {**spec, "dim": dim, "init": init, "init_scale": 0.02, "dtype": "float64"}
    w = init_layer(s, torch.Generator().manual_seed(0)).numpy()
    assert w.shape == (dim, dim)
    if init == "gaussian":
        assert w.std() == pytest.approx(0.02, rel=0.02)
    elif init == "lecun_normal":
        assert w.std() == pytest.approx(dim**-0.5, rel=0.02)
    elif init == "torch_linear":  # U(-1/sqrt(d), 1/sqrt(d)), as nn.Linear
        assert np.abs(w).max() <= dim**-0.5
        assert w.std() == pytest.approx(dim**-0.5 / np.sqrt(3), rel=0.02)
    else:
        np.testing.assert_allclose(w.T @ w, np.eye(dim), atol=1e-12)
    again = init_layer(s, torch.Generator().manual_seed(0)).numpy()
    np.testing.assert_array_equal(w, again)


def test_svd_correction_blends_singular_values():
    w, target_s = randn(2, 4, 4), torch.tensor([[4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 0.5]])
    target_s = target_s.double()
    before = torch.linalg.svdvals(w)
    svd_correct(w, target_s, 0.25)
    torch.testing.assert_close(torch.linalg.svdvals(w), 0.75 * before + 0.25 * target_s)


def test_effective_matrices():
    """Each seed's slice is its own model (two seeds here)."""
    w, w2 = randn(2, 3, 3), randn(2, 3, 3, seed=1)
    mult = models.RowColumnMultipliers(w.clone())
    with torch.no_grad():
        mult.r.copy_(torch.tensor([[1.0, 2.0, 3.0], [3.0, 1.0, 0.5]]))
    for i in range(2):
        torch.testing.assert_close(mult.effective()[i], torch.diag(mult.r[i]) @ w[i])
    torch.testing.assert_close(models.SingularValueMultipliers(w.clone()).effective(), w)
    deep = models.DeepLinear([w.clone(), w2.clone()])
    torch.testing.assert_close(deep.effective(), torch.stack([w2[i] @ w[i] for i in range(2)]))
    assert set(deep.matrices()) == {"product", "layer1", "layer2"}
    x = randn(2, 7, 3, seed=2)
    expected = torch.stack([torch.relu(x[i] @ w[i].T) @ w2[i].T for i in range(2)])
    torch.testing.assert_close(models.ReluMLP(w.clone(), w2.clone())(x), expected)


def test_multipliers_train_at_their_own_learning_rate(spec):
    model = build_model([{**spec, "strategy": "multipliers"}], CPU)
    groups = model.param_groups(0.01, 0.1)
    assert [g["lr"] for g in groups] == [0.01, pytest.approx(0.001)]
    assert groups[1]["params"] == [model.r, model.c]


def test_gradient_signal_picks_each_singular_direction():
    u, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
    v, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))
    w = u @ np.diag([4.0, 3.0, 2.0, 1.0]) @ v.T
    g = 5.0 * np.outer(u[:, 0], v[:, 0]) - 2.0 * np.outer(u[:, 3], v[:, 3])
    np.testing.assert_allclose(gradient_signal(w, g), [5.0, 0.0, 0.0, 2.0], atol=1e-12)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_runs_and_learns(spec, strategy):
    s = {**spec, "strategy": strategy, "epochs": 30, "lr": 0.05, "svd_every": 10}
    table, weights = run_trial(s, CPU)
    final = table[(table["epoch"] == 30) & (table["component"] == "overall")]["error"].iloc[0]
    assert not table["diverged"].any() and final < 0.5
    assert set(weights) == {"target.product", "initial.product", "final.product"}


@pytest.mark.parametrize(("model", "matrices"), [("deep_linear", 4), ("relu_mlp", 3)])
def test_deep_models_record_each_layer(spec, model, matrices):
    s = {**spec, "model": model, "depth": 3, "init_scale": 0.3, "epochs": 5}
    table, weights = run_trial(s, CPU)
    assert table["matrix"].nunique() == matrices
    layer1 = table[(table["matrix"] == "layer1") & (table["component"] == "condition_number")]
    assert np.isfinite(layer1["trained"]).all()
    assert np.isnan(layer1["target"]).all() == (model == "deep_linear")  # ReLU layers have teachers
    assert "initial.layer1" in weights and "final.product" in weights


def test_gradient_rows(spec):
    table, _ = run_trial({**spec, "record_gradients": True, "record_every": 5, "epochs": 10}, CPU)
    grads = table[table["component"].str.startswith("grad_sigma_")]
    assert sorted(grads["epoch"].unique()) == [5, 10]  # epoch 0 has no gradient yet
    assert len(grads) == 2 * spec["dim"] and (grads["trained"] >= 0).all()


def test_registries_match_the_schema():
    """The schema's enums list exactly the registered strategies and models, and a strategy
    reads exactly the settings the schema marks as applying to it."""
    settings = load_schema()["$defs"]["settings"]["properties"]
    assert set(settings["strategy"]["enum"]) == set(STRATEGIES)
    assert set(settings["model"]["enum"]) == set(MODELS)
    params = choice_params(settings)["strategy"]
    for name, strategy in STRATEGIES.items():
        assert set(strategy.settings) == set(params[name]), name


def test_a_new_strategy_needs_only_the_registry(spec, monkeypatch):
    """A toy strategy (a strong L2 penalty on the matrix), registered and nothing else, trains:
    training knows strategies only through the registry's hooks."""

    def shrink(model, spec, target):
        return 10.0 * model.layers[0].square().sum()

    monkeypatch.setitem(STRATEGIES, "toy", Strategy("a strong L2 penalty", penalty=shrink))
    s = {**spec, "epochs": 50, "lr": 0.05}
    toy, _ = run_trial({**s, "strategy": "toy"}, CPU)
    standard, _ = run_trial({**s, "strategy": "standard"}, CPU)

    def norm(table):
        rows = table[(table["epoch"] == 50) & (table["component"] == "frobenius_norm")]
        return rows["trained"].iloc[0]

    assert norm(toy) < 0.2 * norm(standard)
