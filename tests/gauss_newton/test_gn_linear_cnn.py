"""The linear CNN's Jacobian and GN condition number against the autodiff reference."""

from __future__ import annotations

import pytest
import torch
from gn_cases import generator, rel
from torch import nn

from matcond.gauss_newton import network_jacobian, reference_gn_spectrum
from matcond.gauss_newton.linear_cnn import linear_cnn_gn_spectrum, linear_cnn_jacobian


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
