"""The linear CNN's Jacobian and GN condition number against the autodiff reference."""

from __future__ import annotations

import pytest
import torch
from gn_cases import generator, rel
from torch import nn

from matcond.gauss_newton import network_jacobian, reference_gn_spectrum
from matcond.gauss_newton.linear_cnn import linear_cnn_gn_spectrum, linear_cnn_jacobian
from matcond.gn_experiments.architectures import conv_pair


class LinearCNN(nn.Module):
    """Conv2d (one channel in, no bias, same padding) then a linear read-out, on flat images."""

    def __init__(self, kernel: torch.Tensor, readout: torch.Tensor, side: int) -> None:
        super().__init__()
        filters, size, _ = kernel.shape
        self.side = side
        self.conv = nn.Conv2d(1, filters, size, padding=size // 2, bias=False, dtype=torch.float64)
        self.out = nn.Linear(readout.shape[1], readout.shape[0], bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.conv.weight.copy_(kernel[:, None])
            self.out.weight.copy_(readout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maps = self.conv(x.reshape(-1, 1, self.side, self.side))
        return self.out(maps.flatten(1))


@pytest.mark.parametrize(("filters", "size"), [(1, 1), (2, 3), (3, 5)])
def test_jacobian_and_kappa_match_autodiff(filters: int, size: int) -> None:
    side, k, n = 5, 3, 4
    gen = generator(filters * 10 + size)
    kernel = torch.randn(filters, size, size, generator=gen, dtype=torch.float64)
    readout = torch.randn(k, filters * side * side, generator=gen, dtype=torch.float64)
    images = torch.randn(n, side, side, generator=gen, dtype=torch.float64)
    model = LinearCNN(kernel, readout, side)
    reference = network_jacobian(model, images.reshape(n, -1))
    torch.testing.assert_close(linear_cnn_jacobian(kernel, readout, images), reference)
    ours = linear_cnn_gn_spectrum(kernel, readout, images)
    theirs = reference_gn_spectrum(model, images.reshape(n, -1))
    assert ours.reliable and ours.rank == theirs.rank
    assert rel(ours.kappa, theirs.kappa) < 1e-8


def test_even_kernels_and_misshapen_readouts_are_rejected() -> None:
    images = torch.zeros(2, 4, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="odd"):
        linear_cnn_jacobian(torch.ones(1, 2, 2), torch.ones(3, 16), images)
    with pytest.raises(ValueError, match="columns"):
        linear_cnn_jacobian(torch.ones(2, 3, 3), torch.ones(3, 16), images)


def test_the_conv_head_reading_is_two_convolutions() -> None:
    images = torch.randn(5, 8, 8, dtype=torch.float64, generator=generator(3))
    kernel = torch.randn(3, 3, 3, dtype=torch.float64, generator=generator(4))
    second = torch.randn(1, 3, 3, 3, dtype=torch.float64, generator=generator(5))
    net = conv_pair(kernel, second)
    hidden = nn.functional.conv2d(images[:, None], kernel[:, None], padding=1)
    expected = nn.functional.conv2d(hidden, second, padding=1).reshape(5, 64)
    torch.testing.assert_close(net(images.reshape(5, 64)), expected)


def test_pointwise_filters_give_a_rank_one_gn_with_kappa_one() -> None:
    # s = 1: y = (sum_f b_f a_f) x, so every Jacobian column is a multiple of x
    images = torch.randn(4, 64, dtype=torch.float64, generator=generator(6))
    kernel = torch.randn(5, 1, 1, dtype=torch.float64, generator=generator(7))
    second = torch.randn(1, 5, 1, 1, dtype=torch.float64, generator=generator(8))
    spectrum = reference_gn_spectrum(conv_pair(kernel, second), images)
    assert spectrum.rank == 1 and rel(spectrum.kappa, 1.0) < 1e-12 and spectrum.reliable
