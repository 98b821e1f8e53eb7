"""The online-regression trainer against closed forms of its expected trajectory."""

import numpy as np
import pandas as pd
import pytest
import torch

from matcond.condition_number.run import run_trial, run_trials, trial_rows
from matcond.condition_number.targets import DATA_STREAM, INIT_STREAM, make_target, stream_seed
from matcond.condition_number.training import (
    all_finite,
    init_layer,
    record_epochs,
    singular_values_where_finite,
    train,
)

CPU = torch.device("cpu")


def final_weight(target, spec):
    (outcome,) = train([spec], [{"product": target}], CPU, lambda *args: None)
    return outcome.final["product"]


def test_sgd_from_zero_init_follows_one_minus_lr_to_the_t(spec):
    """E[W_t] - W* = (1 - lr)^t (W_0 - W*); with d << batch the fluctuation is below 1 %."""
    lr, steps, trials = 0.01, 200, 8
    errors = []
    for seed in range(trials):
        s = {**spec, "dim": 6, "batch_size": 256, "lr": lr, "epochs": steps, "init_scale": 0.0}
        s.update(noise_std=0.0, dtype="float64", seed=seed)
        target = make_target(s)
        w = final_weight(target, s)
        errors.append(np.linalg.norm(w - target) / np.linalg.norm(target))
    assert np.mean(errors) == pytest.approx((1 - lr) ** steps, rel=0.02)


def test_steps_per_epoch_multiplies_the_steps(spec):
    s = {**spec, "init_scale": 0.0, "noise_std": 0.0, "dtype": "float64", "batch_size": 256}
    target = make_target(s)
    one = final_weight(target, {**s, "epochs": 100, "steps_per_epoch": 2})
    err = np.linalg.norm(one - target) / np.linalg.norm(target)
    assert err == pytest.approx(0.99**200, rel=0.05)


def test_weight_decay_shrinks_the_fixed_point(spec):
    """SGD with L2 decay lam converges to W* / (1 + lam) (here, with many steps and no noise)."""
    lam = 0.5
    s = {
        **spec,
        "weight_decay": lam,
        "lr": 0.1,
        "epochs": 400,
        "noise_std": 0.0,
        "dtype": "float64",
    }
    s["batch_size"] = 512
    target = make_target(s)
    w = final_weight(target, s)
    np.testing.assert_allclose(w, target / (1 + lam), atol=0.02 * np.abs(target).max())


def test_adam_first_step_moves_every_entry_by_the_learning_rate(spec):
    """Adam's bias-corrected first step is lr * g / (|g| + eps): every entry moves by ~lr."""
    s = {
        **spec,
        "optimizer": "adam",
        "lr": 1e-3,
        "epochs": 1,
        "init_scale": 0.0,
        "dtype": "float64",
    }
    w = final_weight(make_target(s), s)
    np.testing.assert_allclose(np.abs(w), 1e-3, rtol=1e-4)
    sgd = final_weight(make_target(s), {**s, "optimizer": "sgd"})
    assert not np.allclose(np.abs(sgd), np.abs(sgd).mean(), rtol=0.1)  # SGD steps are not uniform


def test_divergence_stops_early_and_records_every_remaining_epoch(spec):
    s = {**spec, "dim": 64, "lr": 50.0, "epochs": 50, "record_every": 20}
    table, weights = run_trial(s, CPU)
    assert table["diverged"].all()
    first = int(table["diverged_epoch"].iloc[0])
    assert 1 <= first < 20
    assert sorted(table["epoch"].unique()) == sorted(set(record_epochs(50, 20)) | {first})
    stopped = table.loc[table["epoch"] >= first, "loss"]
    assert (~np.isfinite(stopped) | (stopped > 1e6)).all()  # non-finite, or > 1e6 x epoch 1
    after = table[table["epoch"] >= first]
    assert after["error"].isna().all() and after["trained"].isna().all()
    assert table.loc[table["epoch"] == 0, "error"].notna().any()


def test_a_loss_that_explodes_but_stays_finite_is_divergence(spec):
    """lr 2 at d = 8: the loss grows ~1e15-fold in 50 epochs with finite float32 weights (the
    components would be finite and meaningless, e.g. errors of 1e7)."""
    s = {**spec, "dim": 8, "batch_size": 16, "lr": 2.0, "epochs": 50}
    table, weights = run_trial(s, CPU)
    assert table["diverged"].all() and np.isfinite(weights["final.product"]).all()
    assert np.isfinite(table["loss"]).all() and table["error"].isna().all()
    table, _ = run_trial({**s, "divergence_loss_ratio": 1e30}, CPU)
    assert not table["diverged"].any() and (table["error"] > 1e3).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_all_finite_agrees_with_the_elementwise_mask(dtype):
    torch.manual_seed(0)
    big = torch.finfo(dtype).max
    for bad in (float("nan"), float("inf"), -float("inf"), None):
        for where in ((0, 0), (3, 7), (-1, -1)):
            t = torch.randn(5, 8, dtype=dtype) * big  # entries at the edge of the range
            t = t.clamp(-big, big)
            if bad is not None:
                t[where] = bad
            assert all_finite(t[None]).tolist() == [bool(torch.isfinite(t).all())]
            assert bool(torch.isfinite(t).all()) is (bad is None)
            # one verdict per seed: a bad entry in one seed's slice does not mark the others
            stacked = torch.stack([torch.ones_like(t), t, torch.zeros_like(t)])
            assert all_finite(stacked).tolist() == [True, bad is None, True]
    assert all_finite(torch.empty(2, 0, 3, dtype=dtype)).tolist() == [True, True]


def test_record_epochs():
    assert record_epochs(200, 0) == [200]
    assert record_epochs(10, 4) == [0, 4, 8, 10]


def test_same_spec_is_bit_identical_and_seeds_differ(spec):
    a, wa = run_trial(spec, CPU)
    b, wb = run_trial(spec, CPU)
    assert a.equals(b)
    assert all(np.array_equal(wa[k], wb[k]) for k in wa)
    c, _ = run_trial({**spec, "seed": 1}, CPU)
    assert not np.array_equal(a["error"].to_numpy(), c["error"].to_numpy())


def test_paired_arms_share_target_and_data(spec):
    """SGD and Adam with one seed learn the same target (paired comparisons, review W10)."""
    _, sgd = run_trial(spec, CPU)
    _, adam = run_trial({**spec, "optimizer": "adam", "lr": 1e-3}, CPU)
    np.testing.assert_array_equal(sgd["target.product"], adam["target.product"])
    np.testing.assert_array_equal(sgd["initial.product"], adam["initial.product"])


def test_recorded_weights_are_saved_only_when_asked(spec):
    s = {**spec, "model": "deep_linear", "depth": 2, "epochs": 6, "record_every": 3}
    _, plain = run_trial(s, CPU)
    assert not any(key.startswith("epoch") for key in plain)
    _, saved = run_trial({**s, "save_recorded_weights": True}, CPU)
    epochs = sorted({key.split(".")[0] for key in saved if key.startswith("epoch")})
    assert epochs == ["epoch0", "epoch3", "epoch6"]
    for name in ("layer1", "layer2", "product"):
        np.testing.assert_array_equal(saved[f"epoch0.{name}"], saved[f"initial.{name}"])
        np.testing.assert_array_equal(saved[f"epoch6.{name}"], saved[f"final.{name}"])
        assert not np.array_equal(saved[f"epoch3.{name}"], saved[f"epoch0.{name}"])
        np.testing.assert_array_equal(saved[f"final.{name}"], plain[f"final.{name}"])


@pytest.mark.parametrize(
    "changes",
    [
        {"optimizer": "sgd", "strategy": "standard", "lr": 1.7},
        {"optimizer": "sgd", "strategy": "multipliers", "lr": 1.7, "multiplier_lr_ratio": 1.0},
        # momentum buffers leave the batch with their trials
        {"optimizer": "sgd", "strategy": "standard", "lr": 1.2, "momentum": 0.9},
        # a loss above its first epoch's counts as divergence: Adam's trials stop one by one
        {"optimizer": "adam", "strategy": "standard", "lr": 0.05, "divergence_loss_ratio": 1.0},
    ],
)
def test_trials_that_stop_early_leave_the_others_unchanged(spec, changes):
    """Seeds that diverge at different epochs, trained side by side and one at a time: the
    same tables and weights, to the bit (the stopped trials leave the batch, with their
    optimizer state)."""
    cell = {**spec, "dim": 8, "batch_size": 16, "epochs": 40, "record_every": 5, **changes}
    specs = [{**cell, "seed": seed} for seed in range(6)]
    together, together_weights = run_trials(specs, CPU)
    alone = [run_trial(s, CPU) for s in specs]
    epochs = set(together.groupby("seed")["diverged_epoch"].first())
    assert len(epochs) >= 2  # the trials stop at different epochs (or some never do)
    where = trial_rows(together["seed"].to_numpy())
    for spec, weights, (table_alone, weights_alone) in zip(
        specs, together_weights, alone, strict=True
    ):
        table = together.iloc[where[spec["seed"]]].reset_index(drop=True)
        pd.testing.assert_frame_equal(table, table_alone, check_exact=True)
        assert weights.keys() == weights_alone.keys()
        for name, w in weights.items():
            np.testing.assert_array_equal(w, weights_alone[name])


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("lr", [5.0, 50.0, 1e4])
def test_a_folded_step_stops_before_its_weights_are_recorded_non_finite(spec, lr, momentum):
    """The residual form with a folded step reads no weights for the divergence check (a
    finite loss implies finite weights there): with only non-finite values stopping a trial
    (no loss ratio), every epoch recorded before it stops holds finite weights, and the stop
    comes at the first non-finite loss (the loss overflows before the weights do)."""
    s = {**spec, "dim": 16, "lr": lr, "momentum": momentum, "epochs": 60, "record_every": 1}
    s["divergence_loss_ratio"] = float("inf")
    recorded = {}
    (outcome,) = train(
        [s],
        [{"product": make_target(s)}],
        CPU,
        lambda i, e, m, loss, g, spectra: recorded.update({e: (m, loss)}),
    )
    assert outcome.diverged
    stop = outcome.diverged_epoch
    assert all(np.isfinite(recorded[e][0]["product"]).all() for e in range(stop))
    assert all(np.isfinite(recorded[e][1]) for e in range(1, stop))
    assert not np.isfinite(recorded[stop][1])


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_the_residual_form_is_sgd_on_the_trial_s_own_draws(spec, momentum):
    """The residual form (the trained matrix held as its error W - W*, W* added back to each
    snapshot) against SGD written out in numpy float64 on the trial's own streams: its init
    and each step's inputs, then noise."""
    s = {**spec, "dim": 6, "batch_size": 16, "epochs": 30, "lr": 0.05, "momentum": momentum}
    s.update(noise_std=0.1, dtype="float64")
    w_star = make_target(s)
    init = torch.Generator().manual_seed(stream_seed(s["seed"], INIT_STREAM))
    w = init_layer(s, init).numpy()
    data = torch.Generator().manual_seed(stream_seed(s["seed"], DATA_STREAM))
    buffer = None
    for _ in range(s["epochs"]):
        x, eps = (torch.empty(16, 6, dtype=torch.float64).normal_(generator=data) for _ in "xe")
        residual = x.numpy() @ (w - w_star).T - 0.1 * eps.numpy()
        gradient = residual.T @ x.numpy() / 16
        buffer = gradient if buffer is None else momentum * buffer + gradient
        w = w - 0.05 * (buffer if momentum else gradient)
    np.testing.assert_allclose(final_weight(w_star, s), w, rtol=1e-12, atol=1e-14)


def test_singular_values_where_finite_are_numpy_s_and_nan_for_a_non_finite_matrix():
    """Batched singular values as a GPU block takes them, against numpy one matrix at a
    time: a full-rank, a rank-deficient and a zero matrix, and NaN for one with a NaN."""
    rng = np.random.default_rng(3)
    full = rng.standard_normal((6, 6))
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 6))
    broken = full.copy()
    broken[2, 3] = np.nan
    stack = np.stack([full, low, np.zeros((6, 6)), broken])
    got = singular_values_where_finite(torch.from_numpy(stack)).numpy()
    for k in range(3):
        expected = np.linalg.svd(stack[k], compute_uv=False)
        np.testing.assert_allclose(got[k], expected, rtol=1e-12, atol=1e-14 * expected[0])
    assert np.isnan(got[3]).all()
    assert np.isnan(singular_values_where_finite(torch.from_numpy(stack[3:])).numpy()).all()


@pytest.mark.parametrize(
    "changes",
    [
        # some seeds diverge, at different epochs; epoch 0 recorded
        {"dim": 8, "batch_size": 16, "lr": 1.7, "epochs": 40, "record_every": 5},
        # layers without a target, compared with themselves
        {"model": "deep_linear", "depth": 3, "dim": 8, "epochs": 20, "record_every": 10},
        # a zero matrix at epoch 0: kappa infinite, no rank
        {"dim": 16, "init_scale": 0.0, "epochs": 10, "record_every": 5},
        # the other models' matrices: products of layers, a teacher of its own
        {"model": "relu_mlp", "dim": 8, "epochs": 10, "record_every": 5},
        {"model": "attention", "dim": 4, "seq_len": 3, "init_scale": 0.5, "epochs": 10},
    ],
)
def test_singular_values_taken_on_the_device_give_the_host_s_components(spec, changes):
    """A GPU block's trials take their recorded matrices' singular values where they trained,
    all at once (``spectra_on_device``, the default off the CPU); run that way on the CPU the
    block gives the host's rows, weights and verdicts of divergence, its values within 1e-9
    relative of numpy's (two LAPACK builds), infinities and NaNs where the host has them."""
    specs = [{**spec, **changes, "seed": seed} for seed in range(4)]
    host, host_weights = run_trials(specs, CPU, spectra_on_device=False)
    device, device_weights = run_trials(specs, CPU, spectra_on_device=True)
    values = ["trained", "target", "error"]
    pd.testing.assert_frame_equal(host.drop(columns=values), device.drop(columns=values))
    for column in values:
        a, b = host[column].to_numpy(float), device[column].to_numpy(float)
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        finite = np.isfinite(a)
        np.testing.assert_allclose(b[finite], a[finite], rtol=1e-9, atol=1e-12)
    for w, v in zip(host_weights, device_weights, strict=True):
        assert w.keys() == v.keys()
        for name in w:
            np.testing.assert_array_equal(w[name], v[name])


def test_train_hands_on_record_the_spectra_it_was_asked_for(spec):
    """With ``spectra_on_device`` each recorded matrix comes with its singular values (those
    of the matrix handed over), without it with None."""
    s = {**spec, "model": "deep_linear", "depth": 2, "epochs": 10, "record_every": 5}
    targets = [{"product": make_target(s)}]
    for on_device in (False, True):
        got: list = []
        train(
            [s], targets, CPU, lambda i, e, m, loss, g, sp, got=got: got.append((m, sp)), on_device
        )
        assert len(got) == 3
        for matrices, spectra in got:
            if not on_device:
                assert spectra is None
                continue
            assert spectra.keys() == matrices.keys()
            for name, w in matrices.items():
                expected = np.linalg.svd(w, compute_uv=False)
                np.testing.assert_allclose(spectra[name], expected, rtol=1e-10)
