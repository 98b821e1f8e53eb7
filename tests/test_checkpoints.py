"""Analysis of user checkpoints (matcond.checkpoints): every column against an independent numpy
float64 computation, the formats, the refusal of code-running pickles, config path errors, and
the `analyse_weights` rule end to end."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from safetensors.torch import save_file

from matcond.checkpoints import (
    MIN_EIGENVALUES,
    CheckpointError,
    UnsafeCheckpointError,
    analyse_checkpoint,
    analyse_tensors,
    check_checkpoint_paths,
    load_checkpoint,
    power_law_fit,
    result_columns,
    skipped_entries,
)
from matcond.config import ConfigError
from matcond.figures.own_weights import plot_spectra

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
THRESHOLDS = [0.001, 0.01, 0.1]
RTOL = 1e-10


class Net(torch.nn.Module):
    """A Conv2d (4-D kernel), a BatchNorm (1-D and 0-D tensors) and two Linear layers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc1 = torch.nn.Linear(64, 16)
        self.fc2 = torch.nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.fc2(torch.relu(self.fc1(h)))


@pytest.fixture(scope="module")
def state_dict() -> dict[str, torch.Tensor]:
    """A few SGD steps of Net on random data, plus a rank-1 matrix and one with a zero row."""
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x, y = torch.randn(32, 3, 6, 6), torch.randint(0, 5, (32,))
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    sd = {k: v.detach().clone() for k, v in net.state_dict().items()}
    sd["rank1"] = torch.outer(torch.arange(1.0, 7.0), torch.arange(1.0, 4.0))
    zero_row = torch.randn(4, 6, dtype=torch.float64)
    zero_row[2] = 0.0
    sd["zero_row"] = zero_row
    return sd


def numpy_reference(w: np.ndarray) -> dict:
    """Every numeric column, computed directly with numpy in float64."""
    w = np.asarray(w, dtype=np.float64).reshape(w.shape[0], -1)
    s = np.linalg.svd(w, compute_uv=False)
    kept = s[s > RTOL * s[0]]
    rows, cols = np.sqrt((w**2).sum(axis=1)), np.sqrt((w**2).sum(axis=0))
    with np.errstate(divide="ignore"):
        return {
            "rows": w.shape[0],
            "cols": w.shape[1],
            "frobenius_norm": np.sqrt((w**2).sum()),
            "spectral_norm": np.linalg.norm(w, 2),
            "condition_number": s[0] / s[-1] if s[-1] > RTOL * s[0] else np.inf,
            "pseudo_condition_number": s[0] / kept.min(),
            "numerical_rank": np.linalg.matrix_rank(w, rtol=RTOL),
            **{f"effective_rank_t{t:g}": (s > t * s[0]).sum() for t in THRESHOLDS},
            "stable_rank": (w**2).sum() / np.linalg.norm(w, 2) ** 2,
            "spectral_gap": (s[0] - s[1]) / s[0],
            "row_norm_cv": rows.std() / rows.mean(),
            "row_norm_max_over_min": rows.max() / rows.min(),
            "col_norm_cv": cols.std() / cols.mean(),
            "col_norm_max_over_min": cols.max() / cols.min(),
        }


def save(sd: dict[str, torch.Tensor], path: Path, fmt: str) -> Path:
    if fmt == "safetensors":
        save_file({k: v.contiguous() for k, v in sd.items()}, str(path))
    elif fmt == "torch":
        torch.save(sd, path)
    elif fmt == "torch-legacy":
        torch.save(sd, path, _use_new_zipfile_serialization=False)
    elif fmt == "torch-nested":
        torch.save({"model": sd, "epoch": 5, "note": "trained"}, path)
    return path


@pytest.mark.parametrize("fmt", ["safetensors", "torch", "torch-legacy", "torch-nested"])
def test_every_column_matches_numpy(state_dict, tmp_path, fmt):
    path = save(state_dict, tmp_path / "model.bin", fmt)  # the format is sniffed, not the suffix
    table, spectra = analyse_checkpoint(path, THRESHOLDS, RTOL)
    prefix = "model." if fmt == "torch-nested" else ""
    expected = ["conv.weight", "fc1.weight", "fc2.weight", "rank1", "zero_row"]
    assert sorted(table["layer"]) == [prefix + name for name in expected]
    assert list(table.columns) == result_columns(THRESHOLDS)
    for row in table.to_dict("records"):
        tensor = state_dict[row["layer"].removeprefix(prefix)]
        assert row["tensor_shape"] == "x".join(map(str, tensor.shape))
        assert row["dtype"] == str(tensor.dtype).removeprefix("torch.") and row["finite"]
        ref = numpy_reference(tensor.double().numpy())
        for column, value in ref.items():
            np.testing.assert_allclose(row[column], value, rtol=1e-12, err_msg=column)
        s = np.linalg.svd(tensor.double().numpy().reshape(row["rows"], -1), compute_uv=False)
        np.testing.assert_allclose(spectra[row["layer"]], s, rtol=1e-12)
    conv = table.set_index("layer").loc[prefix + "conv.weight"]
    assert (conv["rows"], conv["cols"], conv["tensor_shape"]) == (4, 27, "4x3x3x3")
    rank1 = table.set_index("layer").loc[prefix + "rank1"]
    assert rank1["condition_number"] == np.inf and rank1["numerical_rank"] == 1
    assert table.set_index("layer").loc[prefix + "zero_row", "row_norm_max_over_min"] == np.inf


def test_formats_give_one_table(state_dict, tmp_path):
    tables = [
        analyse_checkpoint(save(state_dict, tmp_path / f"m.{fmt}", fmt), THRESHOLDS, RTOL)[0]
        for fmt in ("safetensors", "torch", "torch-legacy")
    ]
    for table in tables[1:]:
        pd.testing.assert_frame_equal(
            table.sort_values("layer", ignore_index=True),
            tables[0].sort_values("layer", ignore_index=True),
        )


def test_dtypes_and_ranks_of_other_shapes():
    tensors = {
        "conv1d": torch.randn(5, 2, 3),  # 3-D: a Conv1d kernel, 5 x 6
        "conv3d": torch.randn(2, 3, 2, 2, 2),  # 5-D: 2 x 24
        "half": torch.randn(6, 4).to(torch.bfloat16),
        "ints": torch.ones(3, 3, dtype=torch.int64),  # skipped: not floating point
        "empty": torch.zeros(0, 4),  # skipped: no entries
        "scalar": torch.tensor(1.0),  # skipped
    }
    table, _ = analyse_tensors(tensors, THRESHOLDS, RTOL)
    assert table["layer"].tolist() == ["conv1d", "conv3d", "half"]
    assert table[["rows", "cols"]].values.tolist() == [[5, 6], [2, 24], [6, 4]]
    assert table["dtype"].tolist() == ["float32", "float32", "bfloat16"]
    half = numpy_reference(tensors["half"].double().numpy())
    np.testing.assert_allclose(table.loc[2, "condition_number"], half["condition_number"])


def test_non_finite_layer_is_flagged_not_fatal():
    bad = torch.randn(3, 3)
    bad[1, 1] = float("nan")
    table, spectra = analyse_tensors({"bad": bad, "good": torch.eye(3)}, THRESHOLDS, RTOL)
    assert table["finite"].tolist() == [False, True] and list(spectra) == ["good"]
    assert table.loc[0, "frobenius_norm":].isna().all()
    assert table.loc[1, "condition_number"] == 1.0 and table.loc[1, "effective_rank_t0.1"] == 3


def test_zero_matrix():
    table, _ = analyse_tensors({"zero": torch.zeros(3, 4)}, THRESHOLDS, RTOL)
    row = table.iloc[0]
    assert row["frobenius_norm"] == 0 and row["numerical_rank"] == 0
    assert row["condition_number"] == np.inf
    assert np.isnan([row["pseudo_condition_number"], row["stable_rank"], row["spectral_gap"]]).all()


def test_biases_only_give_an_empty_table_and_a_figure(tmp_path):
    path = tmp_path / "biases.safetensors"
    save_file({"fc.bias": torch.zeros(4), "bn.weight": torch.ones(4)}, str(path))
    table, spectra = analyse_checkpoint(path, THRESHOLDS, RTOL)
    assert table.empty and list(table.columns) == result_columns(THRESHOLDS) and not spectra
    assert str(table["effective_rank_t0.01"].dtype) == "Int64"
    plot_spectra(spectra, "biases", str(tmp_path / "s.png"), str(tmp_path / "s.pdf"))
    assert (tmp_path / "s.png").stat().st_size > 1000


class Payload:
    """Unpickling this creates the file ``marker`` (it calls open(marker, "w"))."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("fmt", ["pickle", "torch"])
def test_code_running_pickle_is_refused_and_runs_nothing(tmp_path, monkeypatch, fmt):
    live = tmp_path / "live"
    pickle.loads(pickle.dumps(Payload(live)))  # the payload works when unpickled ...
    assert live.exists()
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    state = {"fc.weight": torch.eye(2), "hook": Payload(marker)}
    if fmt == "pickle":
        path.write_bytes(pickle.dumps(state, protocol=2))
    else:
        torch.save(state, path)
    # ... and is refused even when torch is told to drop weights_only where not explicit
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(UnsafeCheckpointError, match=r"refusing to load checkpoint .*evil\.pt"):
        load_checkpoint(path)
    assert not marker.exists()


def test_unreadable_files_name_the_file(tmp_path):
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="garbage.ckpt"):
        load_checkpoint(garbage)
    with pytest.raises(CheckpointError, match="absent.pt"):
        load_checkpoint(tmp_path / "absent.pt")


def test_missing_checkpoint_path_names_the_config_key(tmp_path):
    (tmp_path / "ok.safetensors").write_bytes(b"")
    (tmp_path / "adir").mkdir()
    check_checkpoint_paths({"checkpoints": {"ok": "ok.safetensors"}}, base=tmp_path)
    check_checkpoint_paths({"experiments": {}}, base=tmp_path)  # no checkpoints: nothing to do
    config = {"checkpoints": {"ok": "ok.safetensors", "mine": "nope/model.pt", "d": "adir"}}
    with pytest.raises(ConfigError) as err:
        check_checkpoint_paths(config, base=tmp_path)
    message = str(err.value)
    assert "config key checkpoints.mine: 'nope/model.pt' does not exist" in message
    assert "config key checkpoints.d: 'adir' is a directory" in message
    assert "checkpoints.ok" not in message


# End to end through Snakemake.
OUTPUTS = [".parquet", ".csv", "_skipped.csv", "_spectra.png", "_spectra.pdf"]


def run_snakemake(workdir: Path, names: list[str]) -> subprocess.CompletedProcess:
    targets = [f"results/checkpoints/{name}{suffix}" for name in names for suffix in OUTPUTS]
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", workdir, "--configfile"]
    cmd += [workdir / "config.yaml", "--cores", "2", *targets]
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True)


def write_config(workdir: Path, checkpoints: dict[str, str]) -> None:
    config = yaml.safe_load((REPO / "config" / "test" / "config.yaml").read_text())
    config["checkpoints"] = checkpoints
    config["defaults"]["effective_rank_thresholds"] = THRESHOLDS
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def test_rule_end_to_end(state_dict, tmp_path):
    save(state_dict, tmp_path / "net.safetensors", "safetensors")
    save(state_dict, tmp_path / "net.pt", "torch")
    write_config(tmp_path, {"st": "net.safetensors", "pt": "net.pt"})
    proc = run_snakemake(tmp_path, ["st", "pt"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    direct, _ = analyse_checkpoint(tmp_path / "net.pt", THRESHOLDS, RTOL)
    for name in ("st", "pt"):
        table = pd.read_parquet(tmp_path / "results" / "checkpoints" / f"{name}.parquet")
        sort = {"by": "layer", "ignore_index": True}
        pd.testing.assert_frame_equal(table.sort_values(**sort), direct.sort_values(**sort))
        out = tmp_path / "results" / "checkpoints"
        csv = pd.read_csv(out / f"{name}.csv")
        assert list(csv["layer"]) == list(table["layer"])
        np.testing.assert_allclose(csv["alpha"], table["alpha"].astype(float), rtol=1e-12)
        skipped = pd.read_csv(out / f"{name}_skipped.csv")
        assert set(skipped["layer"]) == set(state_dict) - set(table["layer"])
        for suffix in OUTPUTS[3:]:
            assert (out / f"{name}{suffix}").stat().st_size > 1000


def test_rule_fails_early_on_a_missing_path(tmp_path):
    write_config(tmp_path, {"mine": "weights/absent.safetensors"})
    proc = run_snakemake(tmp_path, ["mine"])
    assert proc.returncode != 0
    assert "config key checkpoints.mine: 'weights/absent.safetensors' does not exist" in (
        proc.stdout + proc.stderr
    )
    assert not (tmp_path / "results").exists()  # no job ran


def test_rule_refuses_a_code_running_pickle(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"fc.weight": torch.eye(2), "hook": Payload(marker)}, tmp_path / "evil.pt")
    write_config(tmp_path, {"evil": "evil.pt"})
    proc = run_snakemake(tmp_path, ["evil"])
    assert proc.returncode != 0
    log = (tmp_path / "results" / "logs" / "checkpoints" / "evil.log").read_text()
    assert "refusing to load checkpoint 'evil.pt'" in log
    assert not marker.exists() and not os.path.exists(tmp_path / "results/checkpoints/evil.parquet")


def test_power_law_alpha_is_the_closed_form_mle_and_recovers_a_known_exponent():
    """At the x_min it picks, alpha is the continuous MLE 1 + n / sum(ln(x / x_min)) (Clauset,
    Shalizi and Newman 2009, eq. 3.1); on Pareto samples of density exponent 3 it finds ~3."""
    rng = np.random.default_rng(0)
    samples = rng.pareto(2.0, 4000) + 1.0  # density ~ x^-3 on [1, inf)
    fit = power_law_fit(samples)
    tail = samples[samples >= fit["alpha_xmin"]]
    assert fit["alpha_n_tail"] == tail.size
    closed_form = 1 + tail.size / np.log(tail / fit["alpha_xmin"]).sum()
    assert fit["alpha"] == pytest.approx(closed_form, rel=1e-10)
    assert fit["alpha"] == pytest.approx(3.0, abs=0.15)
    assert 0 < fit["alpha_ks_distance"] < 0.05
    few = power_law_fit(samples[: MIN_EIGENVALUES - 1])
    assert all(np.isnan(v) for v in few.values())


def test_a_layer_alpha_is_fitted_to_its_eigenvalues(state_dict):
    table, spectra = analyse_tensors({"fc1.weight": state_dict["fc1.weight"]}, THRESHOLDS, RTOL)
    row = table.iloc[0]
    expected = power_law_fit(spectra["fc1.weight"] ** 2)
    assert row["alpha"] == pytest.approx(expected["alpha"])
    assert row["alpha_n_tail"] == expected["alpha_n_tail"] <= 16


def test_optimizer_state_buffers_and_plain_values_are_skipped_and_listed(tmp_path):
    """A training checkpoint with Adam's moments: only the model's weight matrices are
    analysed; everything else is listed with its reason."""
    torch.manual_seed(0)
    net = Net()
    adam = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.randn(8, 3, 6, 6), torch.randint(0, 5, (8,))
    torch.nn.functional.cross_entropy(net(x), y).backward()
    adam.step()
    path = tmp_path / "train.pt"
    torch.save({"model": net.state_dict(), "optimizer": adam.state_dict(), "epoch": 3}, path)
    entries = load_checkpoint(path)
    table, _ = analyse_tensors(entries, THRESHOLDS, RTOL)
    assert sorted(table["layer"]) == ["model.conv.weight", "model.fc1.weight", "model.fc2.weight"]
    skipped = skipped_entries(entries).set_index("layer")["reason"]
    assert skipped["optimizer.state.0.exp_avg_sq"] == "optimizer or scheduler state"
    assert skipped["model.bn.running_var"] == "normalisation buffer"
    assert skipped["model.fc1.bias"].startswith("1-D tensor")
    assert skipped["epoch"] == "not a tensor (int)"
    assert len(skipped) + len(table) == len(entries)
    bare = {f"state.{i}.exp_avg": v for i, v in enumerate(adam.state_dict()["state"][0].values())}
    assert analyse_tensors(bare, THRESHOLDS, RTOL)[0].empty  # an optimizer's state on its own
