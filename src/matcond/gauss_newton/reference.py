"""Dense reference: the GN matrix of any small torch network from its explicit Jacobian.

For the MSE loss ``G_O = (1/n) sum_i J_i^T J_i = J^T J / n`` with ``J`` (``nk x p``) stacking the
per-sample Jacobians ``J_i = dF(x_i)/dtheta`` (``k x p``). ``J`` is built with
``torch.func.jacrev`` vectorised over samples by ``vmap``, in float64; the spectrum comes from
the singular values of ``J / sqrt(n)``, whose squares are the nonzero eigenvalues of
``J^T J / n`` and ``J J^T / n`` resolved down to ``(eps * max(nk, p))^2 lambda_max`` instead of the
``eps * min(nk, p) lambda_max`` of a formed Gram matrix (the Gram form squares the Jacobian's
condition number). Cost ``O(nkp min(nk, p))``: small networks only.

**Networks affine in their input** (linear layers, biases, BatchNorm in eval mode): each
``J_i`` is affine in ``x_i``, ``J_i = A_0 + sum_m x_im A_m``, so ``J = ([1 X] (x) I_k) A`` and its
column space lies in ``span([1 X]) (x) R^k``. With ``Q`` (``n x r``, ``r = rank [1 X] <= d + 1``) an
orthonormal basis of that span, ``J = (Q Q^T (x) I_k) J`` and ``(Q^T (x) I_k) J`` (``rk x p``) has
the singular values of ``J``: :func:`data_span_factor` computes it (checking the identity, so
that a network that is not affine is an error, not a wrong κ), 4x less work for the BatchNorm
sweep's ``n = 128``, ``d = 64``, ``k = 10`` than the ``nk x p`` Jacobian itself.
"""

from __future__ import annotations

import importlib
import time

import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

from matcond.gauss_newton._arrays import ArrayLike, as_float64
from matcond.gauss_newton.spectrum import EPS, GNSpectrum, spectrum_from_factor

# Largest relative Frobenius residual of J - (Q Q^T (x) I) J accepted as "affine in the input":
# rounding leaves ~ eps sqrt(n); a network that is not affine leaves O(1).
AFFINE_RESIDUAL = 1e3 * EPS


def warm_up() -> None:
    """Import what the first ``torch.func`` call imports (``torch._dynamo``, ~1.7 s), which a
    job server then does once for all the jobs it forks instead of once per job. Only an
    import: calling ``torch.func`` here would start autograd and the CUDA driver in the
    server, which its forked children cannot use (:mod:`matcond.server.jobserver`)."""
    importlib.import_module("torch._dynamo")


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
    samples = as_float64(x, device, "x")

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


def data_span_factor(jac: torch.Tensor, x: ArrayLike) -> torch.Tensor:
    """``(Q^T (x) I_k) J`` (``rk x p``) for the Jacobian ``J`` (``nk x p``, sample-major rows) of a
    network affine in its input on the samples ``x`` (``n x d``): it has the singular values
    of ``J`` (module docstring). ``J`` itself when ``[1 X]`` has full row rank (nothing to
    gain). Raises ValueError when ``J`` is not in ``span([1 X]) (x) R^k`` (the network is not
    affine in its input).
    """
    samples = as_float64(x, jac.device)
    n = samples.shape[0]
    if samples.shape[1] + 1 >= n:
        return jac
    span = torch.cat([samples.new_ones((n, 1)), samples], dim=1)
    basis = torch.linalg.qr(span).Q
    blocks = jac.reshape(n, -1, jac.shape[1])
    projected = torch.einsum("ir,ikp->rkp", basis, blocks)
    rebuilt = torch.einsum("ir,rkp->ikp", basis, projected)
    residual = float(torch.linalg.norm(blocks - rebuilt) / torch.linalg.norm(blocks))
    if not residual <= AFFINE_RESIDUAL:
        raise ValueError(
            f"the Jacobian leaves span([1 X]) (x) R^k (relative residual {residual:.1e}): "
            "the network is not affine in its input"
        )
    return projected.reshape(-1, jac.shape[1])


def reference_gn_spectrum(
    model: nn.Module, x: ArrayLike, *, rank: int | None = None, affine: bool = False
) -> GNSpectrum:
    """Pseudo-condition number of ``G_O`` from the singular values of the dense Jacobian.

    The rank is ``rank`` if given, else the precision rule of
    :func:`matcond.gauss_newton.spectrum.spectrum_from_eigenvalues` (squared singular values
    above ``TOLERANCE`` times their floor). ``affine=True`` (a network affine in its input)
    takes the singular values of :func:`data_span_factor` (solver ``reference_data_span``):
    the same nonzero spectrum, without the eigenvalues that are zero by that structure.
    """
    start = time.perf_counter()
    jac = network_jacobian(model, x)
    n = torch.as_tensor(x).shape[0]
    factor = data_span_factor(jac, x) if affine else jac
    solver = "reference_data_span" if affine else "reference_jacobian"
    return spectrum_from_factor(factor / n**0.5, solver=solver, seconds_from=start, rank=rank)
