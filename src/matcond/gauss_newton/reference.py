"""Dense reference: the GN matrix of any small torch network from its explicit Jacobian.

For the MSE loss ``G_O = (1/n) sum_i J_i^T J_i = J^T J / n`` with ``J`` (``nk x p``) stacking the
per-sample Jacobians ``J_i = dF(x_i)/dtheta`` (``k x p``). ``J`` is built with
``torch.func.jacrev`` vectorised over samples by ``vmap``, in float64; the spectrum comes from
the singular values of ``J / sqrt(n)``, whose squares are the nonzero eigenvalues of
``J^T J / n`` and ``J J^T / n`` resolved down to ``(eps * max(nk, p))^2 lambda_max`` instead of the
``eps * min(nk, p) lambda_max`` of a formed Gram matrix (the Gram form squares the Jacobian's
condition number). Cost ``O(nkp min(nk, p))``: small networks only.
"""

from __future__ import annotations

import time

import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

from matcond.gauss_newton._arrays import ArrayLike, as_float64
from matcond.gauss_newton.spectrum import GNSpectrum, spectrum_from_factor


def warm_up() -> None:
    """Call ``torch.func`` once: its first call imports ``torch._dynamo`` (~1 s), which a job
    server then does once for all the jobs it forks instead of once per job."""
    jacrev(torch.sin)(torch.zeros(1, dtype=torch.float64))


def network_jacobian(model: nn.Module, x: ArrayLike) -> torch.Tensor:
    """``J`` (``nk x p``) in float64 at the model's current parameters.

    Rows are sample-major (``i * k + output``); columns follow ``model.named_parameters()``,
    each parameter flattened row-major. ``x`` is ``n x d`` (one sample per row) and the model
    must map a batch ``b x d`` to ``b x k``.
    """
    params = {name: p.detach().to(torch.float64) for name, p in model.named_parameters()}
    device = next(iter(params.values())).device
    buffers = {
        name: b.detach().to(torch.float64) if b.is_floating_point() else b
        for name, b in model.named_buffers()
    }
    samples = as_float64(x, device)

    def single(parameters: dict[str, torch.Tensor], sample: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, (parameters, buffers), (sample.unsqueeze(0),))
        return out.reshape(-1)

    jac = vmap(jacrev(single), in_dims=(None, 0))(params, samples)
    n = samples.shape[0]
    blocks = [jac[name].reshape(n, jac[name].shape[1], -1) for name in params]
    return torch.cat(blocks, dim=2).reshape(-1, sum(b.shape[2] for b in blocks))


def reference_gn_matrix(model: nn.Module, x: ArrayLike) -> torch.Tensor:
    """``G_O = J^T J / n`` (``p x p``), parameters ordered as in :func:`network_jacobian`."""
    jac = network_jacobian(model, x)
    return jac.T @ jac / torch.as_tensor(x).shape[0]


def reference_gn_spectrum(model: nn.Module, x: ArrayLike, *, rank: int | None = None) -> GNSpectrum:
    """Pseudo-condition number of ``G_O`` from the singular values of the dense Jacobian.

    The rank is ``rank`` if given, else the precision rule of
    :func:`matcond.gauss_newton.spectrum.spectrum_from_eigenvalues` (squared singular values
    above ``TOLERANCE`` times their floor).
    """
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    n = torch.as_tensor(x).shape[0]
    return spectrum_from_factor(
        jac / n**0.5, solver="reference_jacobian", seconds_from=start, rank=rank
    )
