"""matcond.analyze against WeightWatcher 0.7.7's analyze() on one model: the same eigenvalues
per layer (a convolution's pooled over its kernel positions), norms, stable rank and power-law
fit (alpha, x_min, KS distance, alpha_weighted). What differs by design is asserted too:
WeightWatcher scales a convolution's matrices by sqrt(positions / 2) unless conv2d_norm=False,
and fits one alpha to a convolution's pooled eigenvalues where matcond gives a row per
position."""

import copy
import logging

import numpy as np
import pytest
import torch
import weightwatcher as ww

import matcond
from matcond.own_weights.metrics import power_law_fit

# WeightWatcher 0.7.7 calls a pandas API that pandas deprecates
pytestmark = pytest.mark.filterwarnings("ignore:Passing a dict to DataFrame.from_records")


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    """Dense, embedding and convolution layers with heavy-tailed (Student-t) weights."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(200, 300),
        torch.nn.Linear(300, 100),
        torch.nn.Conv2d(64, 96, 3),
        torch.nn.Embedding(500, 64),
    )
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.05 * torch.distributions.StudentT(3.0).sample(p.shape))
    return net


@pytest.fixture(scope="module")
def watcher(model):
    """WeightWatcher's analysis with conv2d_norm=False and with its default, each of its own
    copy of the model (its analysis can scale a model's weights in place)."""
    logging.disable(logging.WARNING)
    try:
        watchers = [ww.WeightWatcher(model=copy.deepcopy(model)) for _ in range(2)]
        details = watchers[0].analyze(conv2d_norm=False)
        scaled = watchers[1].analyze()
    finally:
        logging.disable(logging.NOTSET)
    return watchers[0], details.set_index("name"), scaled.set_index("name")


# WeightWatcher's column: its value from a row of matcond's table (the mapping that
# docs/own-weights.md tabulates; WeightWatcher's norms are of the eigenvalues s_i^2).
WEIGHTWATCHER_COLUMNS = {
    "sv_max": lambda row: row["largest_singular_value"],
    "lambda_max": lambda row: row["largest_singular_value"] ** 2,
    "spectral_norm": lambda row: row["largest_singular_value"] ** 2,
    "log_spectral_norm": lambda row: 2 * np.log10(row["largest_singular_value"]),
    "norm": lambda row: row["frobenius_norm"] ** 2,
    "log_norm": lambda row: 2 * np.log10(row["frobenius_norm"]),
    "stable_rank": lambda row: row["stable_rank"],
    "alpha": lambda row: row["alpha"],
    "alpha_weighted": lambda row: row["alpha_weighted"],
    "xmin": lambda row: row["alpha_xmin"],
    "D": lambda row: row["alpha_ks_distance"],
    "num_evals": lambda row: min(row["rows"], row["cols"]),
}


def test_dense_and_embedding_layers_agree(model, watcher):
    """Every column of the documented mapping, from matcond's row, is WeightWatcher's."""
    _, details, _ = watcher
    ours = matcond.analyze(model).set_index("tensor")
    for name, tensor in (("0", "0.weight"), ("1", "1.weight"), ("3", "3.weight")):
        theirs, row = details.loc[name], ours.loc[tensor]
        assert row["layer_type"] == {"0": "linear", "1": "linear", "3": "embedding"}[name]
        for column, value in WEIGHTWATCHER_COLUMNS.items():
            assert theirs[column] == pytest.approx(value(row), rel=1e-9), (name, column)


def test_a_column_with_a_weightwatcher_name_holds_its_quantity(model, watcher):
    """A table joined with WeightWatcher's (on longname = layer) has no column of one name
    and two meanings: matcond's s_1 is not called spectral_norm, which is s_1^2 there.
    layer_type is shared as a name only, a label of another vocabulary (LAYER_TYPE.DENSE)."""
    _, details, _ = watcher
    ours = matcond.analyze(model).set_index("tensor")
    shared = set(ours.columns) & set(details.columns) - {"layer_type"}
    assert shared == {"stable_rank", "alpha", "alpha_weighted"}
    for name, tensor in (("0", "0.weight"), ("1", "1.weight"), ("3", "3.weight")):
        for column in shared:
            theirs, value = details.loc[name, column], ours.loc[tensor, column]
            assert theirs == pytest.approx(value, rel=1e-9), (name, column)


def test_a_convolution_pools_the_same_eigenvalues(model, watcher):
    w, details, scaled = watcher
    rows = matcond.analyze(model, conv="per_position")
    conv = rows[rows["tensor"] == "2.weight"]
    assert len(conv) == 9 and (conv["rows"] == 96).all() and (conv["cols"] == 64).all()
    weight = model[2].weight.detach().double().numpy()
    pooled = np.sort(
        np.concatenate(
            [
                np.linalg.svd(weight[:, :, i, j], compute_uv=False) ** 2
                for i in range(3)
                for j in range(3)
            ]
        )
    )
    logging.disable(logging.WARNING)
    try:
        theirs = np.sort(
            w.get_ESD(
                layer=int(details.loc["2", "layer_id"]),
                params={**ww.weightwatcher.DEFAULT_PARAMS, "conv2d_norm": False},
            )
        )
    finally:
        logging.disable(logging.NOTSET)
    np.testing.assert_allclose(theirs, pooled, rtol=1e-9)
    np.testing.assert_allclose(
        np.sort(conv["largest_singular_value"] ** 2)[-1], pooled[-1], rtol=1e-12
    )
    assert details.loc["2", "lambda_max"] == pytest.approx(pooled[-1], rel=1e-9)
    assert details.loc["2", "alpha"] == pytest.approx(power_law_fit(pooled)["alpha"], rel=1e-9)
    # by design: WeightWatcher's default scales a convolution's matrices (conv2d_norm) ...
    factor = scaled.loc["2", "lambda_max"] / pooled[-1]
    assert factor != pytest.approx(1.0)
    assert scaled.loc["2", "xmin"] == pytest.approx(factor * details.loc["2", "xmin"], rel=1e-9)
    # ... and a power law is scale free: the same alpha
    assert scaled.loc["2", "alpha"] == pytest.approx(details.loc["2", "alpha"], rel=1e-9)
    # matcond: a fit per position, each to 64 eigenvalues
    per_position = [
        power_law_fit(np.linalg.svd(weight[:, :, i, j], compute_uv=False) ** 2)["alpha"]
        for i in range(3)
        for j in range(3)
    ]
    np.testing.assert_allclose(conv["alpha"], per_position, rtol=1e-12)


def test_the_summary_means_alpha_of_reliable_fits_only(model):
    table = matcond.analyze(model)
    assert (table["alpha_reliable"] == (table["alpha_n_tail"] >= 50)).all()
    table["alpha_reliable"] = [True, True] + [False] * (len(table) - 2)
    summary = matcond.summarize(table).iloc[0]
    assert summary["n_alpha_reliable"] == 2
    assert summary["alpha_mean"] == pytest.approx(table["alpha"][:2].mean(), rel=1e-12)
