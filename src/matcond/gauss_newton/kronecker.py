"""Sums of Kronecker products ``sum_l A_l (x) B_l`` as matrix-free operators.

Vectorisation convention (the one of ``torch.kron``): a vector ``v`` of length ``a * b``
is the row-major flattening of ``Z = v.reshape(a, b)``, so index ``i * b + j`` holds
``Z[i, j]`` and

    (A (x) B) v = (A Z B^T).reshape(-1).

In the column-major convention of the papers, ``vec(Y)`` with ``Y = Z^T`` (``b x a``), this is
the identity ``(A (x) B) vec(Y) = vec(B Y A^T)``. A product never forms the ``ab x ab`` matrix:
it costs ``O(a^2 b + a b^2)`` per term instead of ``O(a^2 b^2)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class KroneckerSum:
    """``sum_l left[l] (x) right[l]``, every ``left[l]`` ``a x a``, every ``right[l]`` ``b x b``."""

    def __init__(self, left: Sequence[torch.Tensor], right: Sequence[torch.Tensor]) -> None:
        if len(left) != len(right) or not left:
            raise ValueError("need the same positive number of left and right factors")
        a, b = left[0].shape[0], right[0].shape[0]
        for lhs, rhs in zip(left, right, strict=True):
            if lhs.shape != (a, a) or rhs.shape != (b, b):
                raise ValueError("all left factors must be a x a and all right factors b x b")
        self.left = list(left)
        self.right = list(right)

    @property
    def factor_dims(self) -> tuple[int, int]:
        """``(a, b)``."""
        return self.left[0].shape[0], self.right[0].shape[0]

    @property
    def dim(self) -> int:
        """``a * b``, the side of the square operator."""
        a, b = self.factor_dims
        return a * b

    def matmat(self, vectors: torch.Tensor) -> torch.Tensor:
        """Apply the operator to a vector (``ab``) or to the columns of a matrix (``ab x c``)."""
        a, b = self.factor_dims
        z = vectors.reshape(a * b, -1).T.reshape(-1, a, b)
        out = sum(lhs @ z @ rhs.T for lhs, rhs in zip(self.left, self.right, strict=True))
        return out.reshape(-1, a * b).T.reshape(vectors.shape)

    def dense(self) -> torch.Tensor:
        """The ``ab x ab`` matrix (for references and small problems only), summed in place;
        exactly symmetric when every factor is (each entry is then a sum of the same
        products in the same order as its mirror)."""
        terms = zip(self.left, self.right, strict=True)
        out = torch.kron(*next(terms))
        for lhs, rhs in terms:
            out += torch.kron(lhs, rhs)
        return out

    def congruence(self, p: torch.Tensor, q: torch.Tensor) -> KroneckerSum:
        """``(P (x) Q)^T G (P (x) Q) = sum_l (P^T A_l P) (x) (Q^T B_l Q)``."""
        return KroneckerSum(
            [p.T @ lhs @ p for lhs in self.left], [q.T @ rhs @ q for rhs in self.right]
        )
