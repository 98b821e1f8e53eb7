"""Magnitude pruning at init (GN Figs. 1, 13-16): the masks, the stand-in architectures, their
Jacobians against central finite differences, the masked GN κ against numpy, and training that
keeps pruned entries at zero."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from gn_cases import rel

from matcond.gauss_newton.reference import network_jacobian
from matcond.gn_experiments.architectures import build
from matcond.gn_experiments.data import digits_data, digits_images
from matcond.gn_experiments.networks import calibrate_batchnorm, kaiming_normal
from matcond.gn_experiments.pruning import magnitude_mask, masked_gn_spectrum, prune
from matcond.gn_experiments.sgd import MLP, sgd_train
from matcond.gn_experiments.sweeps import PRUNING_SWEEPS, SWEEP_COLUMNS, run_sweep

TINY = {
    "vit": {"architecture": "vit", "patch": 4, "dim": 4, "blocks": 1, "heads": 2},
    "resnet": {"architecture": "resnet", "blocks": 1, "channels": 1},
    "vgg5": {"architecture": "vgg5", "channels": 1},
}


def test_magnitude_mask_drops_the_smallest_entries():
    weight = torch.tensor([[0.1, -3.0, 0.5], [2.0, -0.2, 1.0]])
    assert magnitude_mask(weight, 0.5).tolist() == [[False, True, False], [True, False, True]]
    assert magnitude_mask(weight, 0.0).all()


@pytest.mark.parametrize("kind", sorted(TINY))
def test_prune_masks_every_weight_matrix_and_kernel_and_nothing_else(kind):
    model = build(TINY[kind], 10, seed=0)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    masks = prune(model, 0.5)
    for name, param in model.named_parameters():
        if param.ndim >= 2 and "weight" in name:
            mask = masks[name]
            assert int((~mask).sum()) == round(0.5 * param.numel())
            assert (param.detach()[~mask] == 0).all()
            torch.testing.assert_close(param.detach()[mask], before[name][mask])
        else:  # biases, norms, class token, position embedding
            assert name not in masks
            torch.testing.assert_close(param.detach(), before[name])
    if kind == "vit":
        assert {"class_token", "position"}.isdisjoint(masks)


def test_stand_ins_have_the_documented_layers():
    def count(model, kernel=None):
        """Linear layers and conv layers (of ``kernel`` size, any if None) of ``model``."""
        convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
        linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        return len(linears), sum(kernel in (None, m.kernel_size) for m in convs)

    for blocks, depth in [(3, 20), (5, 32)]:
        net = build({"architecture": "resnet", "blocks": blocks, "channels": 2}, 10, seed=0)
        assert sum(count(net, (3, 3))) == depth
        assert count(net, (1, 1)) == (1, 2)  # the head; the two downsampling skips
    vgg = build(TINY["vgg5"], 10, seed=0)
    assert count(vgg) == (2, 3)
    images = torch.as_tensor(digits_images(7, False, 0).x)
    for spec in TINY.values():
        out = build(spec, 10, seed=0)(images)
        assert out.shape == (7, 10) and out.dtype == torch.float64
    first, again = build(TINY["vit"], 10, seed=3), build(TINY["vit"], 10, seed=3)
    for a, b in zip(first.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)


def finite_difference_jacobian(model: torch.nn.Module, x: torch.Tensor, h: float = 1e-6):
    """``J`` (``nk x p``) by central differences, parameters in ``named_parameters`` order."""
    params = list(model.parameters())
    columns = []
    with torch.no_grad():
        for param in params:
            flat = param.view(-1)
            for i in range(flat.numel()):
                saved = flat[i].item()
                flat[i] = saved + h
                plus = model(x).reshape(-1)
                flat[i] = saved - h
                minus = model(x).reshape(-1)
                flat[i] = saved
                columns.append((plus - minus) / (2 * h))
    return torch.stack(columns, dim=1)


@pytest.mark.parametrize("kind", sorted(TINY))
def test_masked_gn_of_pruned_stand_ins_against_finite_differences(kind):
    # Gaussian pixels: the digits' blank regions tie in max-pooling, where only one-sided
    # derivatives exist and central differences disagree with any autodiff choice.
    x = torch.randn(4, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    model = build(TINY[kind], 3, seed=1)
    masks = prune(model, 0.5)
    calibrate_batchnorm(model, x)
    train_mode = copy.deepcopy(model).train()  # BatchNorm on the batch's own statistics
    with torch.no_grad():
        torch.testing.assert_close(model(x), train_mode(x), rtol=1e-10, atol=1e-10)
    keep = torch.cat(
        [
            masks.get(n, torch.ones_like(p, dtype=torch.bool)).flatten()
            for n, p in model.named_parameters()
        ]
    )
    # Kept columns only: a pruned weight's input is multiplied by exactly 0, which can tie
    # max-pooled values (VGG), where autodiff picks one of two one-sided derivatives.
    reference = finite_difference_jacobian(model, x)[:, keep]
    jac = network_jacobian(model, x)[:, keep]
    assert (jac - reference).abs().max() <= 1e-6 * reference.abs().max()
    values = np.linalg.svd(reference.numpy() / 2.0, compute_uv=False) ** 2
    spectrum = masked_gn_spectrum(model, x, masks)
    assert spectrum.reliable and spectrum.rank <= min(int(keep.sum()), 4 * 3)
    assert rel(spectrum.lambda_max, values[0]) < 1e-6
    assert rel(spectrum.kappa, values[0] / values[spectrum.rank - 1]) < 1e-4
    assert (values[spectrum.rank :] <= 1e-8 * values[0]).all()  # what the cut dropped


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_training_keeps_pruned_entries_at_zero(optimizer):
    images = digits_images(48, False, 0)
    model = build(TINY["vgg5"], 10, seed=0)
    masks = prune(model, 0.6)
    settings = {
        "optimizer": optimizer,
        "lr": 0.01,
        "momentum": 0.9,
        "weight_decay": 0.01,
        "epochs": 3,
        "batch_size": 16,
    }
    losses: dict[int, float] = {}
    sgd_train(model, images.x, images.labels, settings, 0, losses.__setitem__, masks)
    assert list(losses) == [0, 1, 2, 3] and losses[3] < losses[0]
    for name, param in model.named_parameters():
        if name in masks:
            assert (param.detach()[~masks[name]] == 0).all()
            assert (param.detach()[masks[name]] != 0).any()


def test_pruned_mlp_trains_with_its_masks():
    x, labels = digits_data(60)
    model = MLP(kaiming_normal([61, 12, 10], seed=0), alpha=0.0)
    masks = prune(model, 0.6)
    spectrum = masked_gn_spectrum(model, x[:8], masks)
    assert spectrum.rank <= min(sum(int(m.sum()) for m in masks.values()), 8 * 10)
    losses: dict[int, float] = {}
    sgd_train(
        model, x, labels, {"lr": 0.1, "epochs": 3, "batch_size": 16}, 0, losses.__setitem__, masks
    )
    assert losses[3] < losses[0]
    for weight, mask in zip(model.weights, masks.values(), strict=True):
        assert (weight.detach()[~mask] == 0).all()


@pytest.mark.parametrize("name", ["fig1_pruning", *PRUNING_SWEEPS])
def test_pruning_sweep_tables(gn_config, name):
    settings = gn_config["sweeps"][name]
    table = run_sweep(name, settings, gn_config["data"])
    assert list(table.columns) == SWEEP_COLUMNS[name]
    at_init = table[table["epoch"] == 0].sort_values("prune_rate")
    assert at_init["n_params"].is_monotonic_decreasing
    assert ((at_init["kappa"] >= 1) | ~at_init["reliable"]).all()
    assert sorted(table["epoch"].unique()) == list(range(settings["epochs"] + 1))
    assert table["train_loss"].map(math.isfinite).all()
    assert set(table["init"]) == {"kaiming_normal" if name == "fig1_pruning" else "torch_default"}


def test_pruning_with_pytorch_s_default_init(gn_config):
    settings = {**gn_config["sweeps"]["fig1_pruning"], "init": "torch_default"}
    table = run_sweep("fig1_pruning", settings, gn_config["data"])
    assert set(table["init"]) == {"torch_default"}
