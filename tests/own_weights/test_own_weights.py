"""Analysis of your own weights (matcond.own_weights): every column against an independent
numpy float64 computation, the formats, the refusal of code-running pickles, config path
errors, bad and hostile files (empty, text, truncated, huge declared shapes, extreme values,
deep nesting), and the `analyze_weights` rule end to end. Folders, shards, names and layer
types: tests/own_weights/test_own_weights_layers.py."""

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from safetensors.torch import save_file
from support import REPO, SNAKEMAKE, run_snakemake

import matcond.own_weights.metrics
from matcond.core.config import ConfigError, load_schema, load_yaml
from matcond.figures.own_weights import plot_own_weights
from matcond.own_weights import full_analysis
from matcond.own_weights.layers import MAX_ELEMENTS, skipped_entries
from matcond.own_weights.load import (
    CheckpointError,
    UnsafeCheckpointError,
    check_checkpoint_paths,
)
from matcond.own_weights.load import load_file as load_checkpoint
from matcond.own_weights.metrics import MIN_EIGENVALUES, power_law_fit, result_columns

THRESHOLDS = [0.001, 0.01, 0.1]
RTOL = 1e-10


def analyse_checkpoint(path, thresholds, rtol, max_elements=MAX_ELEMENTS, conv="reshaped"):
    """The table and the spectra (by layer) of a path holding one checkpoint; kernels reshaped
    to out x in*k, as numpy_reference does."""
    table, spectra, _, _ = full_analysis(path, thresholds, rtol, max_elements, conv)
    return table, next(iter(spectra.values()))


def analyse_tensors(entries, thresholds=(0.01,), rtol=1e-10, max_elements=MAX_ELEMENTS):
    """The same for a dict of tensors."""
    table, spectra, _, _ = full_analysis(entries, thresholds, rtol, max_elements, "reshaped")
    return table, spectra["state_dict"]


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
            "largest_singular_value": np.linalg.norm(w, 2),
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
    prefix = "model." if fmt == "torch-nested" else ""  # a wrapper: not in the layer names
    expected = ["conv", "fc1", "fc2", "rank1", "zero_row"]
    assert sorted(table["layer"]) == expected
    assert sorted(table["tensor"]) == [prefix + n for n in ["conv.weight", "fc1.weight"]] + [
        prefix + n for n in ["fc2.weight", "rank1", "zero_row"]
    ]
    assert list(table.columns) == result_columns(THRESHOLDS)
    types = dict(zip(table["layer"], table["layer_type"], strict=True))
    assert types == {"conv": "conv2d"} | dict.fromkeys(expected[1:], "linear")
    for row in table.to_dict("records"):
        tensor = state_dict[row["tensor"].removeprefix(prefix)]
        assert row["tensor_shape"] == "x".join(map(str, tensor.shape))
        assert row["dtype"] == str(tensor.dtype).removeprefix("torch.") and row["finite"]
        ref = numpy_reference(tensor.double().numpy())
        for column, value in ref.items():
            np.testing.assert_allclose(row[column], value, rtol=1e-12, err_msg=column)
        s = np.linalg.svd(tensor.double().numpy().reshape(row["rows"], -1), compute_uv=False)
        np.testing.assert_allclose(spectra[row["layer"]], s, rtol=1e-12)
    conv = table.set_index("layer").loc["conv"]
    assert (conv["rows"], conv["cols"], conv["tensor_shape"]) == (4, 27, "4x3x3x3")
    rank1 = table.set_index("layer").loc["rank1"]
    assert rank1["condition_number"] == np.inf and rank1["numerical_rank"] == 1
    assert table.set_index("layer").loc["zero_row", "row_norm_max_over_min"] == np.inf


def test_formats_give_one_table(state_dict, tmp_path):
    tables = [
        analyse_checkpoint(save(state_dict, tmp_path / f"m.{fmt}", fmt), THRESHOLDS, RTOL)[0]
        for fmt in ("safetensors", "torch", "torch-legacy")
    ]
    for table in tables[1:]:
        pd.testing.assert_frame_equal(
            table.drop(columns="checkpoint").sort_values("layer", ignore_index=True),
            tables[0].drop(columns="checkpoint").sort_values("layer", ignore_index=True),
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
    assert table["note"].tolist() == ["NaN or inf in the weights", ""]
    assert table.loc[0, "frobenius_norm":].drop("alpha_reliable").isna().all()
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
    table, spectra, _, _ = full_analysis(path, THRESHOLDS, RTOL)
    assert table.empty and list(table.columns) == result_columns(THRESHOLDS)
    assert spectra == {"biases.safetensors": {}}
    assert str(table["effective_rank_t0.01"].dtype) == "Int64"
    plot_own_weights(table, spectra, "biases", str(tmp_path / "s.png"), str(tmp_path / "s.pdf"))
    assert (tmp_path / "s.png").stat().st_size > 1000


class Payload:
    """Unpickling this creates the file ``marker`` (it calls open(marker, "w"))."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("fmt", ["pickle", "pickle5", "torch"])
def test_code_running_pickle_is_refused_and_runs_nothing(tmp_path, monkeypatch, fmt):
    """Also a plain pickle of the default protocol (5), which torch cannot read at all: it is
    named unsafe with the callables its opcodes name (read without running them)."""
    live = tmp_path / "live"
    pickle.loads(pickle.dumps(Payload(live)))  # the payload works when unpickled ...
    assert live.exists()
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    state = {"fc.weight": torch.eye(2), "hook": Payload(marker)}
    if fmt.startswith("pickle"):
        path.write_bytes(pickle.dumps(state, protocol=5 if fmt == "pickle5" else 2))
    else:
        torch.save(state, path)
    # ... and is refused even when torch is told to drop weights_only where not explicit
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(
        UnsafeCheckpointError, match=r"refusing to load checkpoint .*evil\.pt"
    ) as err:
        load_checkpoint(path)
    assert not marker.exists()
    if fmt == "pickle5":
        assert "a plain pickle that calls" in str(err.value) and "io.open" in str(err.value)
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"lr": 0.1, "names": ["a"]}, protocol=5))
    with pytest.raises(CheckpointError, match="is a plain pickle, not a torch.save file"):
        load_checkpoint(plain)


def test_unreadable_files_name_the_file(tmp_path):
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="garbage.ckpt"):
        load_checkpoint(garbage)
    with pytest.raises(CheckpointError, match="absent.pt"):
        load_checkpoint(tmp_path / "absent.pt")


def test_missing_checkpoint_path_names_the_config_key(tmp_path):
    save_file({"w": torch.eye(2)}, str(tmp_path / "ok.safetensors"))
    (tmp_path / "adir").mkdir()
    check_checkpoint_paths({"checkpoints": {"ok": "ok.safetensors"}}, base=tmp_path)
    check_checkpoint_paths({"experiments": {}}, base=tmp_path)  # no checkpoints: nothing to do
    config = {"checkpoints": {"ok": "ok.safetensors", "mine": "nope/model.pt", "d": "adir"}}
    with pytest.raises(ConfigError) as err:
        check_checkpoint_paths(config, base=tmp_path)
    message = str(err.value)
    assert "config key checkpoints.mine: 'nope/model.pt' does not exist" in message
    assert "config key checkpoints.d: 'adir' holds no weight file" in message
    assert "checkpoints.ok" not in message


# End to end through Snakemake.
OUTPUTS = [".parquet", ".csv", "_skipped.csv", "_spectra.png", "_spectra.pdf", "_layers.png"]
OUTPUTS += ["_errors.parquet", "_errors.csv", ".html"]


def checkpoint_run(workdir: Path, names: list[str]) -> subprocess.CompletedProcess:
    targets = [f"results/checkpoints/{name}{suffix}" for name in names for suffix in OUTPUTS]
    config = workdir / "config.yaml"
    return run_snakemake(workdir, "--cores", "2", *targets, configfile=config, check=False)


def write_config(workdir: Path, checkpoints: dict[str, str], **extra) -> None:
    config = load_yaml(REPO / "config" / "test" / "config.yaml")
    config["checkpoints"] = checkpoints
    config.update(extra)
    config["defaults"]["effective_rank_thresholds"] = THRESHOLDS
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.workflow
def test_rule_end_to_end(state_dict, tmp_path):
    """Also: the config's checkpoint_max_elements reaches the job (fc1 is 16 x 64 = 1024)."""
    save(state_dict, tmp_path / "net.safetensors", "safetensors")
    save(state_dict, tmp_path / "net.pt", "torch")
    write_config(tmp_path, {"st": "net.safetensors", "pt": "net.pt"}, checkpoint_max_elements=1023)
    proc = checkpoint_run(tmp_path, ["st", "pt"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    direct, _, _, _ = full_analysis(tmp_path / "net.pt", THRESHOLDS, RTOL, max_elements=1023)
    assert "fc1" not in set(direct["layer"]) and "fc2" in set(direct["layer"])
    for name, file in (("st", "net.safetensors"), ("pt", "net.pt")):
        table = pd.read_parquet(tmp_path / "results" / "checkpoints" / f"{name}.parquet")
        sort = {"by": "layer", "ignore_index": True}
        expected = direct.assign(checkpoint=file).sort_values(**sort)
        pd.testing.assert_frame_equal(table.sort_values(**sort), expected)
        out = tmp_path / "results" / "checkpoints"
        csv = pd.read_csv(out / f"{name}.csv")
        assert list(csv["layer"]) == list(table["layer"])
        np.testing.assert_allclose(csv["alpha"], table["alpha"].astype(float), rtol=1e-12)
        skipped = pd.read_csv(out / f"{name}_skipped.csv")
        assert set(skipped["tensor"]) == set(state_dict) - set(table["tensor"])
        reason = skipped.set_index("tensor").loc["fc1.weight", "reason"]
        assert reason == "16x64 = 1024 elements, above the limit of 1023 (config key " + (
            "checkpoint_max_elements)"
        )
        for suffix in OUTPUTS[3:5]:
            assert (out / f"{name}{suffix}").stat().st_size > 1000
        assert pd.read_parquet(out / f"{name}_errors.parquet").empty  # one checkpoint


@pytest.mark.workflow
def test_a_config_of_weights_only_runs_and_reports(state_dict, tmp_path):
    """docs/own-weights.md's workflow: a config with only `checkpoints`. Its --report crashed
    (the landing page included the claims' scorecard, which no job makes without an
    experiment); its table was not in the report; its console opened on the papers' figures
    and claims it skips."""
    save(state_dict, tmp_path / "net.pt", "torch")
    (tmp_path / "mine.yaml").write_text("checkpoints: {mine: net.pt}\n")
    base = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path]
    base += ["--configfile", tmp_path / "mine.yaml", "--cores", "1"]
    for extra in ([], ["--report", "results/report.html"]):
        proc = subprocess.run(list(map(str, base + extra)), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "figures skipped" not in proc.stderr and "claims not checked" not in proc.stderr
    report = (tmp_path / "results" / "report.html").read_text()
    assert "configures no experiment" in report and "mine_spectra.png" in report
    assert "mine.html" in report  # the table, as a page of the report


@pytest.mark.workflow
def test_rule_on_a_sharded_folder_and_a_run_and_its_rerun_on_a_changed_shard(tmp_path):
    """A Hugging Face folder of two shards and a folder of two checkpoints: the table of each;
    rewriting one shard reruns that analysis only."""
    torch.manual_seed(0)
    sd = {f"layers.{i}.weight": torch.randn(6, 6) for i in range(4)}
    hf = tmp_path / "hf"
    hf.mkdir()
    weight_map = {}
    for i, keys in enumerate(
        (["layers.0.weight", "layers.1.weight"], ["layers.2.weight", "layers.3.weight"])
    ):
        shard = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file({k: sd[k] for k in keys}, str(hf / shard))
        weight_map |= dict.fromkeys(keys, shard)
    (hf / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    run = tmp_path / "run"
    run.mkdir()
    for step in (5, 10):
        torch.save({k: v * step for k, v in sd.items()}, run / f"step{step}.pt")
    write_config(tmp_path, {"hf": "hf", "run": "run"})
    proc = checkpoint_run(tmp_path, ["hf", "run"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "results" / "checkpoints"
    hf_table = pd.read_parquet(out / "hf.parquet")
    assert sorted(hf_table["layer"]) == [f"layers.{i}" for i in range(4)]
    run_table = pd.read_parquet(out / "run.parquet")
    assert run_table.groupby("checkpoint", sort=False).size().to_dict() == {
        "step5.pt": 4,
        "step10.pt": 4,
    }
    assert run_table["step"].unique().tolist() == [5, 10]
    errors = pd.read_parquet(out / "run_errors.parquet")  # step10 is step5 x 2
    kappa = errors[errors["component"] == "condition_number"]
    assert len(kappa) == 8 and (kappa["relative_error"].abs() < 1e-12).all()
    frobenius = errors[(errors["component"] == "frobenius_norm") & (errors["step"] == 10)]
    np.testing.assert_allclose(frobenius["relative_error"], 1.0, rtol=1e-12)
    assert pd.read_parquet(out / "hf_errors.parquet").empty
    log = (tmp_path / "results" / "logs" / "checkpoints" / "run.log").read_text()
    assert "run: step5.pt: 4 matrices analysed, 0 entries skipped" in log
    assert "run: step10.pt: 4 matrices analysed" in log
    save_file(
        {"layers.2.weight": sd["layers.3.weight"], "layers.3.weight": sd["layers.2.weight"]},
        str(hf / "model-00002-of-00002.safetensors"),
    )
    cmd = [SNAKEMAKE, "-s", REPO / "Snakefile", "--directory", tmp_path, "--configfile"]
    cmd += [
        tmp_path / "config.yaml",
        "-n",
        *(f"results/checkpoints/{n}.parquet" for n in ("hf", "run")),
    ]
    dry = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert re.findall(r"wildcards: name=(\w+)", dry.stdout) == ["hf"]


@pytest.mark.workflow
def test_rule_fails_early_on_a_missing_path_or_an_empty_file(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    write_config(tmp_path, {"mine": "weights/absent.safetensors", "empty": "empty.pt"})
    proc = checkpoint_run(tmp_path, ["mine", "empty"])
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "config key checkpoints.mine: 'weights/absent.safetensors' does not exist" in output
    assert "config key checkpoints.empty: 'empty.pt' is empty (0 bytes)" in output
    assert not (tmp_path / "results").exists()  # no job ran


@pytest.mark.workflow
def test_rule_refuses_a_code_running_pickle(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"fc.weight": torch.eye(2), "hook": Payload(marker)}, tmp_path / "evil.pt")
    write_config(tmp_path, {"evil": "evil.pt"})
    proc = checkpoint_run(tmp_path, ["evil"])
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
    expected = power_law_fit(spectra["fc1"] ** 2)
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
    assert sorted(table["tensor"]) == ["model.conv.weight", "model.fc1.weight", "model.fc2.weight"]
    assert sorted(table["layer"]) == ["conv", "fc1", "fc2"]
    skipped = skipped_entries(entries).set_index("tensor")["reason"]
    assert skipped["optimizer.state.0.exp_avg_sq"] == "optimizer or scheduler state"
    assert skipped["model.bn.running_var"] == "normalisation buffer"
    assert skipped["model.fc1.bias"].startswith("1-D tensor")
    assert skipped["epoch"] == "not a tensor (int)"
    assert len(skipped) + len(table) == len(entries)
    bare = {f"state.{i}.exp_avg": v for i, v in enumerate(adam.state_dict()["state"][0].values())}
    assert analyse_tensors(bare, THRESHOLDS, RTOL)[0].empty  # an optimizer's state on its own


# Hostile and broken files.
def test_the_default_limit_is_the_schema_default():
    schema = load_schema()["properties"]["checkpoint_max_elements"]
    assert schema["default"] == MAX_ELEMENTS == 2**24 and schema["minimum"] == 1


@pytest.mark.parametrize("fmt", ["safetensors", "torch", "torch-legacy"])
def test_matrices_above_max_elements_are_skipped_with_the_limit(tmp_path, fmt):
    """The count is rows x cols of the analysed matrix (a 4-D kernel too); at the limit a
    matrix is analysed, one element above it is listed as skipped."""
    torch.manual_seed(0)
    sd = {"big": torch.randn(30, 40), "conv": torch.randn(4, 3, 5, 5), "small": torch.randn(5, 6)}
    path = save(sd, tmp_path / "m.bin", fmt)
    table, spectra = analyse_checkpoint(path, THRESHOLDS, RTOL, max_elements=299)
    assert table["layer"].tolist() == ["small"] and list(spectra) == ["small"]
    skipped = skipped_entries(load_checkpoint(path), max_elements=299).set_index("tensor")
    limit = "above the limit of 299 (config key checkpoint_max_elements)"
    assert skipped.loc["big", "reason"] == f"30x40 = 1200 elements, {limit}"
    assert skipped.loc["conv", "reason"] == f"4x75 = 300 elements, {limit}"
    assert skipped.loc["conv", "tensor_shape"] == "4x3x5x5"
    table, _ = analyse_checkpoint(path, THRESHOLDS, RTOL, max_elements=300)
    assert table["layer"].tolist() == ["conv", "small"]
    assert analyse_checkpoint(path, THRESHOLDS, RTOL)[0]["layer"].tolist() == list(sd)


def test_a_huge_declared_tensor_is_skipped_without_allocating(tmp_path):
    """A 1.5 KB torch file declaring 50000 x 50000 (a broadcast view, zero strides): analysed,
    it would take 20 GB in float64; run under an 8 GB address-space limit, the analysis
    finishes and lists the tensor as skipped by its shape."""
    path = tmp_path / "bomb.pt"
    torch.save({"bomb": torch.zeros(1).expand(50000, 50000), "fc": torch.randn(4, 3)}, path)
    assert path.stat().st_size < 4000
    child = f"""
import json, resource
from matcond.own_weights import full_analysis
vm = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + 8 * 2**30, resource.RLIM_INFINITY))
table, _, skipped, _ = full_analysis({str(path)!r})
print(json.dumps([table["layer"].tolist(), skipped.drop(columns="checkpoint").values.tolist()]))
"""
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    analysed, skipped = json.loads(proc.stdout)
    reason = "50000x50000 = 2500000000 elements, above the limit of 16777216 (config key "
    assert analysed == ["fc"]
    assert skipped == [["bomb", "50000x50000", reason + "checkpoint_max_elements)"]]


def test_extreme_finite_weights_are_flagged_per_layer_and_scale_free_columns_kept():
    """Weights scaled by 2^600 or 2^-600 (squares overflow / underflow float64): every
    scale-free column is the unscaled matrix's, the norms are scaled exactly, alpha_xmin
    (an eigenvalue, scaled by 2^1200) is NaN with a note; 1e308 entries: the norms too."""
    base = torch.tensor(np.random.default_rng(0).standard_normal((12, 12)))
    small_row = [[1.0, 2.0, 3.0], [1e-200, 2e-200, 3e-200], [3.0, 1.0, 2.0]]
    tensors = {
        "ok": base,
        "huge": base * 2.0**600,
        "tiny": base * 2.0**-600,
        "max": torch.full((3, 4), 1e308, dtype=torch.float64),
        "small_row": torch.tensor(small_row, dtype=torch.float64),  # row 2's squares underflow
    }
    table, spectra = analyse_tensors(tensors, THRESHOLDS, RTOL)
    rows = table.set_index("layer")
    ref = numpy_reference(base.numpy())
    for name, factor in (("huge", 2.0**600), ("tiny", 2.0**-600)):
        row = rows.loc[name]
        for column, value in ref.items():
            if column in ("frobenius_norm", "largest_singular_value"):
                value = value * factor
            np.testing.assert_allclose(row[column], value, rtol=1e-12, err_msg=column)
        assert row["alpha"] == rows.loc["ok", "alpha"] and np.isnan(row["alpha_xmin"])
        assert row["note"].startswith("alpha_xmin beyond float64's range (max |w| = ")
        np.testing.assert_allclose(spectra[name], spectra["ok"] * factor, rtol=1e-12)
    assert rows.loc["ok", "note"] == "" and rows.loc["ok", "alpha_xmin"] > 0
    big = rows.loc["max"]
    assert (
        np.isnan([big["frobenius_norm"], big["largest_singular_value"]]).all()
        and "max" not in spectra
    )
    assert big["note"].startswith("frobenius_norm, largest_singular_value beyond float64's range")
    assert big["note"].endswith("; spectrum not drawn")
    assert big["numerical_rank"] == 1 and big["condition_number"] == np.inf
    assert big["stable_rank"] == pytest.approx(1.0) and big["row_norm_max_over_min"] == 1.0
    assert rows.loc["small_row", "row_norm_max_over_min"] == pytest.approx(1e200, rel=1e-12)


def test_a_layer_whose_analysis_fails_is_flagged_and_the_others_analysed(monkeypatch):
    svd = matcond.own_weights.metrics.singular_values

    def failing(w):
        if w.shape == (5, 5):
            raise np.linalg.LinAlgError("SVD did not converge")
        return svd(w)

    monkeypatch.setattr(matcond.own_weights.metrics, "singular_values", failing)
    tensors = {"bad": torch.randn(5, 5), "good": torch.eye(3)}
    table, spectra = analyse_tensors(tensors, THRESHOLDS, RTOL)
    assert table["note"].tolist() == ["analysis failed: LinAlgError: SVD did not converge", ""]
    assert table.loc[0, "frobenius_norm":].drop("alpha_reliable").isna().all() and list(
        spectra
    ) == ["good"]
    assert table.loc[1, "condition_number"] == 1.0 and table.loc[1, "finite"]


def legacy_torch_file(pickled_object: bytes) -> bytes:
    """A file in torch's legacy format (torch.save(..., _use_new_zipfile_serialization=False))
    holding one pickled object and no storages."""
    from torch.serialization import MAGIC_NUMBER, PROTOCOL_VERSION

    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": True}
    sys_info["type_sizes"] = {"short": 2, "int": 4, "long": 4}
    parts = [MAGIC_NUMBER, PROTOCOL_VERSION, sys_info]
    head = b"".join(pickle.dumps(x, protocol=2) for x in parts)
    return head + pickled_object + pickle.dumps([], protocol=2)


def test_deep_nesting_is_a_checkpoint_error(tmp_path):
    """{"a": {"a": ... 3}} 5000 levels deep (torch.save cannot write it, a hand-made pickle can);
    100 levels still load."""
    deep = b"\x80\x02" + b"}X\x01\x00\x00\x00a" * 5000 + b"K\x03" + b"s" * 5000 + b"."
    assert pickle.loads(deep)["a"]["a"]["a"]  # the pickle is what it claims
    path = tmp_path / "deep.pt"
    path.write_bytes(legacy_torch_file(deep))
    with pytest.raises(CheckpointError, match=r"deep\.pt.*nested more than 100 levels deep"):
        load_checkpoint(path)
    nested: object = torch.eye(3)
    for _ in range(100):
        nested = {"a": nested}
    torch.save(nested, tmp_path / "ok.pt")
    entries = load_checkpoint(tmp_path / "ok.pt")
    assert list(entries) == [".".join(["a"] * 100)]


def corrupt(tmp_path: Path, kind: str) -> Path:
    """A file of the given kind of wrongness."""
    path = tmp_path / f"{kind}.bin"
    sd = {"fc.weight": torch.randn(8, 8), "fc.bias": torch.randn(8)}
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "csv":
        path.write_text("layer,condition_number\nfc.weight,12.5\n")
    elif kind == "readme":
        path.write_text("# Modèle entraîné — poids\n" * 5000)  # 130 KB of UTF-8 text
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "safetensors-deep":  # a JSON header nested past Python's recursion limit
        header = b'{"w": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        path.write_bytes(len(header).to_bytes(8, "little") + header)
    elif kind in ("safetensors-json", "safetensors-shape"):  # a hand-made header
        entry = {"dtype": "F32", "shape": [50000, 50000], "data_offsets": [0, 16]}
        header = json.dumps({"w": entry}).encode()
        if kind == "safetensors-json":
            header = header.replace(b'"w":', b'"w" ')
        path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(16))
    else:
        fmt, cut = {
            "torch-zip": ("torch", 0.5),
            "torch-legacy": ("torch-legacy", 0.9),
            "safetensors-data": ("safetensors", 0.9),
            "safetensors-header": ("safetensors", 0.0),
        }[kind]
        data = save(sd, path, fmt).read_bytes()
        path.write_bytes(data[: max(int(len(data) * cut), 20)])
    return path


LOAD_MESSAGES = {
    "empty": r"is empty \(0 bytes\)",
    "csv": "looks like a text file, not a weight file",
    "readme": "looks like a text file, not a weight file",
    "binary": "is neither safetensors nor a torch file",
    "torch-zip": "is a corrupt or truncated torch file: RuntimeError: .*central directory",
    "torch-legacy": "is a corrupt or truncated torch file: .*EOF",
    # 8 x 8 + 8 float32 values: 288 bytes
    "safetensors-data": r"is truncated or corrupt safetensors: its header places 288 bytes of "
    r"tensor data, the file holds \d+",
    "safetensors-header": r"is truncated or corrupt safetensors: a \d+-byte header in a "
    r"20-byte file",
    "safetensors-json": r"is truncated or corrupt safetensors: unreadable header "
    r"\(JSONDecodeError: ",
    "safetensors-deep": r"is truncated or corrupt safetensors: unreadable header "
    r"\(RecursionError: ",
    # offsets that match the file, a shape that does not (matcond.own_weights.tensor_file)
    "safetensors-shape": r"is invalid safetensors: tensor .w. of shape \[50000, 50000\] "
    r"has 16 bytes",
}


@pytest.mark.parametrize("kind", list(LOAD_MESSAGES))
def test_each_kind_of_bad_file_has_its_message(tmp_path, kind):
    path = corrupt(tmp_path, kind)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(path)
    assert not isinstance(err.value, UnsafeCheckpointError)
    expected = f"checkpoint '{re.escape(str(path))}' {LOAD_MESSAGES[kind]}.*"
    assert re.fullmatch(expected, str(err.value), re.S), str(err.value)


def test_cheap_checks_run_at_parse_time(state_dict, tmp_path):
    """Empty, text and inconsistent safetensors files are named before any job; every valid
    format passes; a shape that does not match its offsets and a truncated torch zip are only
    found when loading."""
    kinds = ["empty", "csv", "readme", "safetensors-data", "safetensors-header"]
    kinds += ["safetensors-json", "safetensors-deep", "safetensors-shape", "torch-zip"]
    config = {"checkpoints": {k: corrupt(tmp_path, k).name for k in kinds}}
    fmts = ["safetensors", "torch", "torch-legacy", "torch-nested"]
    config["checkpoints"] |= {f: save(state_dict, tmp_path / f"{f}.w", f).name for f in fmts}
    with pytest.raises(ConfigError) as err:
        check_checkpoint_paths(config, base=tmp_path)
    message = str(err.value)
    for kind in kinds[:-2]:
        expected = f"config key checkpoints.{kind}: '{kind}.bin' {LOAD_MESSAGES[kind]}"
        assert re.search(expected, message), (kind, message)
    assert message.count("config key checkpoints.") == len(kinds) - 2
