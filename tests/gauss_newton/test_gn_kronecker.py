"""Kronecker operators: vec conventions, matrix-free products, congruence, compression."""

import pytest
import torch
from gn_cases import generator

from matcond.gauss_newton._arrays import symmetric as symmetric_part
from matcond.gauss_newton.kronecker import KroneckerSum
from matcond.gauss_newton.solvers import restricted_matmat


def _sym(n: int, gen: torch.Generator) -> torch.Tensor:
    m = torch.randn(n, n, generator=gen, dtype=torch.float64)
    return m @ m.T


def test_vec_identities_match_torch_kron() -> None:
    """Row-major: (A x B) vec_r(Z) = vec_r(A Z B^T); column-major: (A x B) vec(Y) = vec(B Y A^T)."""
    gen = generator(0)
    a = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    b = torch.randn(5, 2, generator=gen, dtype=torch.float64)
    z = torch.randn(4, 2, generator=gen, dtype=torch.float64)
    kron = torch.kron(a, b)
    torch.testing.assert_close(kron @ z.reshape(-1), (a @ z @ b.T).reshape(-1))
    y = z.T  # the column-major view: vec(Y) stacks the columns of Y
    torch.testing.assert_close(kron @ y.T.reshape(-1), (b @ y @ a.T).T.reshape(-1))


@pytest.mark.parametrize("shape", [(), (7,)])
def test_matmat_equals_dense(shape: tuple[int, ...]) -> None:
    gen = generator(1)
    op = KroneckerSum([_sym(3, gen), _sym(3, gen)], [_sym(4, gen), _sym(4, gen)])
    vectors = torch.randn(12, *shape, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(op.matmat(vectors), op.dense() @ vectors, rtol=1e-12, atol=1e-12)


def test_dense_of_symmetric_factors_is_exactly_symmetric() -> None:
    """What lets the linear GN solver hand the formed kd x kd form to eigvalsh as it is."""
    gen = generator(3)
    symmetric = [
        symmetric_part(torch.randn(n, n, generator=gen, dtype=torch.float64))
        for n in (5, 5, 5, 7, 7, 7)
    ]
    op = KroneckerSum(symmetric[:3], symmetric[3:])
    dense = op.dense()
    assert torch.equal(dense, dense.T)
    assert torch.equal(dense, sum(torch.kron(a, b) for a, b in zip(op.left, op.right, strict=True)))
    lopsided = torch.randn(5, 5, generator=gen, dtype=torch.float64)
    assert not torch.equal(lopsided, lopsided.T)
    assert torch.equal(symmetric_part(lopsided), symmetric_part(lopsided).T)
    assert torch.equal(symmetric_part(dense), dense)  # a no-op, bit for bit, on symmetric input


def test_congruence() -> None:
    gen = generator(2)
    op = KroneckerSum([_sym(3, gen)], [_sym(2, gen)])
    p = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    q = torch.randn(2, 2, generator=gen, dtype=torch.float64)
    expected = torch.kron(p, q).T @ op.dense() @ torch.kron(p, q)
    torch.testing.assert_close(op.congruence(p, q).dense(), expected)


def test_restricted_matmat_is_the_compression() -> None:
    gen = generator(3)
    op = KroneckerSum([_sym(3, gen), _sym(3, gen)], [_sym(4, gen), _sym(4, gen)])
    mask = torch.rand(3, 4, generator=gen) > 0.4
    index = mask.flatten().nonzero().squeeze(1)
    compressed = op.dense()[index][:, index]
    vectors = torch.randn(len(index), 2, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(restricted_matmat(op, mask)(vectors), compressed @ vectors)


def test_shape_checks() -> None:
    with pytest.raises(ValueError):
        KroneckerSum([torch.eye(2)], [torch.eye(3), torch.eye(3)])
    with pytest.raises(ValueError):
        KroneckerSum([torch.eye(2), torch.eye(3)], [torch.eye(3), torch.eye(3)])
