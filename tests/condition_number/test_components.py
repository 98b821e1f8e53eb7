"""Components against independent float64 references (numpy / scipy) on small matrices."""

import math

import numpy as np
import pytest
import scipy.linalg

from matcond.condition_number.components import (
    compare,
    component_names,
    describe_target,
    relative_error,
    singular_values,
)

THRESHOLDS = (0.001, 0.01, 0.1)


def reference(w: np.ndarray, t: np.ndarray, rtol: float) -> dict[str, float]:
    """The errors, computed independently of matcond (scipy SVD, numpy norms, matrix_rank)."""
    sw, st = scipy.linalg.svdvals(w), scipy.linalg.svdvals(t)

    def kappa(m, s):
        full = np.linalg.matrix_rank(m, tol=rtol * s[0]) == min(m.shape)
        return s[0] / s[-1] if full else math.inf

    target_rank = np.linalg.matrix_rank(t, tol=rtol * st[0])

    def pseudo(s):  # cut at the target's rank
        return s[0] / s[target_rank - 1]

    def rel(a, b):
        return (
            np.linalg.norm(np.subtract(a, b)) / np.linalg.norm(b)
            if np.all(np.isfinite(b))
            else math.nan
        )

    ref = {
        "row_norms": rel(np.sqrt((w**2).sum(1)), np.sqrt((t**2).sum(1))),
        "col_norms": rel(np.sqrt((w**2).sum(0)), np.sqrt((t**2).sum(0))),
        "singular_values": rel(sw, st),
        "condition_number": rel(kappa(w, sw), kappa(t, st)),
        "spectral_norm": rel(sw[0], st[0]),
        "pseudo_condition_number": rel(pseudo(sw), pseudo(st)),
        "log_condition_number": abs(math.log(kappa(w, sw)) - math.log(kappa(t, st)))
        if math.isfinite(kappa(t, st))
        else math.nan,
        "frobenius_norm": rel(np.sqrt((w**2).sum()), np.sqrt((t**2).sum())),
        "overall": np.sqrt(((w - t) ** 2).sum()) / np.sqrt((t**2).sum()),
        "spectral_gap": rel((sw[0] - sw[1]) / sw[0], (st[0] - st[1]) / st[0])
        if len(sw) > 1
        else math.nan,
    }
    for thr in THRESHOLDS:
        ref[f"effective_rank_t{thr:g}"] = rel(np.sum(sw > thr * sw[0]), np.sum(st > thr * st[0]))
    return ref


def errors(w, t, rtol=1e-10):
    return {
        c.component: c.error
        for c in compare(w, t, effective_rank_thresholds=THRESHOLDS, rank_rtol=rtol)
    }


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (5, 1), (3, 7), (7, 3), (6, 6)])
def test_matches_reference_on_random_matrices(shape):
    rng = np.random.default_rng(sum(shape))
    t = rng.standard_normal(shape)
    w = t + 0.3 * rng.standard_normal(shape)
    got, ref = errors(w, t), reference(w, t, 1e-10)
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-10, equal_nan=True, err_msg=name)


def test_rank_deficient_target_has_infinite_kappa_and_finite_pseudo_kappa():
    rng = np.random.default_rng(0)
    t = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 6))  # rank 2
    w = t + 0.01 * rng.standard_normal((6, 6))
    comps = {c.component: c for c in compare(w, t, rank_rtol=1e-10)}
    assert comps["condition_number"].target == math.inf
    assert math.isfinite(comps["condition_number"].trained)
    assert math.isnan(comps["condition_number"].error)  # not comparable against an infinite target
    assert math.isnan(comps["log_condition_number"].error)
    s = scipy.linalg.svdvals(t)
    assert comps["pseudo_condition_number"].target == pytest.approx(s[0] / s[1], rel=1e-12)
    ref = reference(w, t, 1e-10)
    assert comps["pseudo_condition_number"].error == pytest.approx(
        ref["pseudo_condition_number"], rel=1e-10
    )


def test_pseudo_kappa_of_a_noisy_low_rank_matrix_is_cut_at_the_target_rank():
    """A trained low-rank matrix carries small noise in its null directions: pseudo-kappa
    cut at the target's rank compares signal with signal, not with the noise."""
    rng = np.random.default_rng(3)
    t = rng.standard_normal((40, 4)) @ rng.standard_normal((4, 40)) / 40  # rank 4
    w = t + 1e-4 * rng.standard_normal((40, 40))
    comps = {c.component: c for c in compare(w, t, rank_rtol=1e-10)}
    s, sw = scipy.linalg.svdvals(t), scipy.linalg.svdvals(w)
    assert comps["pseudo_condition_number"].target == pytest.approx(s[0] / s[3], rel=1e-10)
    assert comps["pseudo_condition_number"].trained == pytest.approx(sw[0] / sw[3], rel=1e-10)
    assert comps["pseudo_condition_number"].error < 0.05
    # the trained matrix's own numerical rank is 40: cut there it would divide by noise
    assert sw[0] / sw[-1] / (s[0] / s[3]) > 100


def test_rank_deficient_trained_matrix_gives_infinite_errors():
    t = np.diag([3.0, 2.0, 1.0])
    w = np.diag([3.0, 2.0, 0.0])
    comps = {c.component: c for c in compare(w, t)}
    assert comps["condition_number"].trained == math.inf
    assert comps["condition_number"].error == math.inf
    # cut at the target's rank 3: the trained matrix lacks a direction the target has
    assert comps["pseudo_condition_number"].trained == math.inf
    assert comps["log_condition_number"].error == math.inf


def test_closed_forms_on_a_diagonal_matrix():
    t = np.diag([4.0, 2.0, 1.0])
    w = np.diag([4.0, 2.0, 0.5])
    got = {c.component: c for c in compare(w, t, effective_rank_thresholds=(0.2,))}
    assert got["condition_number"].trained == pytest.approx(8.0)
    assert got["condition_number"].error == pytest.approx(1.0)  # |8 - 4| / 4
    assert got["log_condition_number"].error == pytest.approx(math.log(2.0))
    assert got["spectral_gap"].target == pytest.approx(0.5)
    assert got["effective_rank_t0.2"].trained == 2.0  # 0.5 is not above 0.2 * 4
    assert got["singular_values"].error == pytest.approx(0.5 / math.sqrt(21))


def test_identical_matrices_have_zero_error():
    t = np.random.default_rng(1).standard_normal((4, 4))
    assert all(c.error == 0.0 for c in compare(t.copy(), t))


def values(comparisons) -> np.ndarray:
    return np.array([(c.trained, c.target, c.error) for c in comparisons])


def test_a_described_target_and_a_missing_target_change_nothing():
    """A trial hands compare() its target described once (a finite one, a rank-deficient one
    and one with an infinite entry); a matrix without a target is described by the same
    trained values as when compared with a copy of itself."""
    rng = np.random.default_rng(2)
    w, t = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    t[:, 3] = t[:, 2]  # rank deficient: kappa(t) = inf, the pseudo-condition cut at rank 3
    infinite = t.copy()
    infinite[0, 0] = np.inf
    for target in (rng.standard_normal((5, 4)), t, infinite):
        given = compare(w, describe_target(target))
        np.testing.assert_array_equal(values(given), values(compare(w, target)))
        with_spectrum = describe_target(target, singular_values(target))
        np.testing.assert_array_equal(values(given), values(compare(w, with_spectrum)))
    alone, with_copy = values(compare(w, None)), values(compare(w, w.copy()))
    np.testing.assert_array_equal(alone[:, 0], with_copy[:, 0])
    assert np.all(np.isnan(alone[:, 1:]))


def test_diverged_weights_give_nan_everywhere():
    """Against a target, described or not, and without one (a deep net's layer, compared with
    itself): a non-finite matrix is never decomposed (LAPACK's SVD does not converge on one)."""
    t = np.eye(3)
    for w in (np.full((3, 3), np.nan), np.diag([1.0, np.inf, 2.0])):
        for target in (t, describe_target(t), None):
            comps = compare(w, target, effective_rank_thresholds=THRESHOLDS)
            assert [c.component for c in comps] == component_names(THRESHOLDS)
            assert all(math.isnan(c.error) for c in comps)
            assert all(math.isnan(c.trained) for c in comps)


def test_relative_error_edge_cases():
    assert relative_error(0.0, 0.0) == 0.0
    assert relative_error(1.0, 0.0) == math.inf
    assert math.isnan(relative_error(1.0, math.inf))
    assert relative_error([3.0, 4.0], [0.0, 5.0]) == pytest.approx(math.sqrt(10) / 5)


def test_two_numbers_give_the_error_that_arrays_of_them_give():
    """relative_error's path for two numbers (no arrays) against its array path, bit for bit,
    on every pair of a grid with zeros, signs, infinities, NaN, tiny and huge values (where
    the array path's squares neither overflow nor underflow: beyond 1e154 it returns inf or
    0 where the number path is exact)."""
    values = [0.0, -0.0, 1.0, -2.5, 1e-150, 3e150, 0.1, math.inf, -math.inf, math.nan, 7, 0]
    for a in values:
        for b in values:
            fast, arrays = relative_error(a, b), relative_error(np.array(a), np.array(b))
            assert fast == arrays or (math.isnan(fast) and math.isnan(arrays)), (a, b)


def test_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="one shape"):
        compare(np.eye(2), np.eye(3))


def test_a_spectrum_given_is_the_one_compared():
    """compare() takes the trained matrix's singular values from ``spectrum`` where the caller
    has them (a GPU block's), with or without a target: doubled, they double s_1."""
    rng = np.random.default_rng(5)
    w, t = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    s = np.linalg.svd(w, compute_uv=False)
    for target in (t, None):
        plain = {c.component: c for c in compare(w, target)}
        given = {c.component: c for c in compare(w, target, spectrum=s)}
        doubled = {c.component: c for c in compare(w, target, spectrum=2 * s)}
        assert given["spectral_norm"].trained == plain["spectral_norm"].trained
        assert doubled["spectral_norm"].trained == 2 * plain["spectral_norm"].trained
        assert doubled["condition_number"].trained == pytest.approx(
            plain["condition_number"].trained
        )
        if target is not None:  # errors against a target; the row norms not from the spectrum
            assert doubled["spectral_norm"].error != plain["spectral_norm"].error
            assert doubled["row_norms"].error == plain["row_norms"].error
