"""Your own weights as the model uses them (matcond.own_weights): Hugging Face folders and
shards, folders of checkpoints, canonical names that join across saves, layer types, fused
attention projections split into q, k, v, kernels per position, the API and its summary."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import save_file

import matcond
from matcond.core.config import ConfigError
from matcond.own_weights import full_analysis
from matcond.own_weights.layers import canonical_names, matrices
from matcond.own_weights.load import CheckpointError, check_checkpoint_paths, input_files

D = 16  # model width


class Block(torch.nn.Module):
    """An embedding, a PyTorch attention layer, an MLP and a conv: every kind of weight."""

    def __init__(self) -> None:
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(50, D)
        self.self_attn = torch.nn.MultiheadAttention(D, num_heads=4)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 32), torch.nn.Linear(32, D))
        self.norm = torch.nn.LayerNorm(D)
        self.conv = torch.nn.Conv2d(3, 8, 3)


@pytest.fixture(scope="module")
def weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {k: v.detach().clone() for k, v in Block().state_dict().items()}


def numbers(table: pd.DataFrame) -> pd.DataFrame:
    """The table without the columns that name where it came from."""
    return table.drop(columns=["checkpoint", "tensor"]).reset_index(drop=True)


def sharded_folder(folder: Path, weights: dict[str, torch.Tensor], n_shards: int = 3) -> Path:
    """A Hugging Face-style sharded save: model-0000i-of-0000n.safetensors, the index listing
    which tensor is in which shard, a config.json."""
    folder.mkdir()
    keys = list(weights)
    weight_map = {}
    for i in range(n_shards):
        shard = f"model-{i + 1:05d}-of-{n_shards:05d}.safetensors"
        part = {k: weights[k].contiguous() for k in keys[i::n_shards]}
        save_file(part, str(folder / shard))
        weight_map |= dict.fromkeys(part, shard)
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps({"num_attention_heads": 4}))
    return folder


def test_a_sharded_folder_is_the_whole_model_once(weights, tmp_path):
    whole = tmp_path / "whole.safetensors"
    save_file({k: v.contiguous() for k, v in weights.items()}, str(whole))
    folder = sharded_folder(tmp_path / "sharded", weights)
    heads = {"num_attention_heads": 4}  # the folder's config.json: per-head products too
    expected = numbers(matcond.analyze(whole, config=heads)).sort_values("layer", ignore_index=True)
    for path in (folder, folder / "model.safetensors.index.json"):
        table = matcond.analyze(path)
        assert table["layer"].is_unique and set(table["checkpoint"]) == {"sharded"}
        got = numbers(table).sort_values("layer", ignore_index=True)
        pd.testing.assert_frame_equal(got, expected)
    files = {p.name for p in input_files(folder)}
    assert files == {p.name for p in folder.iterdir()}  # shards, index, config.json


def test_a_lone_shard_is_refused_naming_its_index(weights, tmp_path):
    folder = sharded_folder(tmp_path / "m", weights)
    shard = folder / "model-00002-of-00003.safetensors"
    with pytest.raises(
        CheckpointError,
        match=r"one shard of a sharded model: give its folder or "
        r"its index file '.*m/model\.safetensors\.index\.json'$",
    ):
        matcond.analyze(shard)
    lonely = tmp_path / "model-00001-of-00002.safetensors"  # its index is not there
    save_file({"w": torch.eye(3)}, str(lonely))
    with pytest.raises(CheckpointError, match=r"model\.safetensors\.index\.json' \(which is not"):
        matcond.analyze(lonely)
    (folder / "model-00003-of-00003.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"lists shards that are missing: .*00003-of-00003"):
        matcond.analyze(folder)
    config = {"checkpoints": {"shard": "m/model-00002-of-00003.safetensors", "m": "m"}}
    with pytest.raises(ConfigError) as err:  # before any job runs
        check_checkpoint_paths(config, base=tmp_path)
    assert "checkpoints.shard: 'm/model-00002-of-00003.safetensors' is one shard" in str(err.value)
    assert "checkpoints.m: 'm' lists shards that are missing" in str(err.value)


def test_an_index_promising_a_tensor_no_shard_holds_is_refused(weights, tmp_path):
    """Without the check the promised tensor was silently missing from the table."""
    folder = sharded_folder(tmp_path / "m", weights)
    index = folder / "model.safetensors.index.json"
    content = json.loads(index.read_text())
    content["weight_map"]["lm_head.weight"] = "model-00001-of-00003.safetensors"
    index.write_text(json.dumps(content))
    with pytest.raises(CheckpointError, match=r"promises 1 tensors that no shard holds: "):
        matcond.analyze(folder)


def test_an_index_nested_too_deeply_is_one_clear_error(weights, tmp_path):
    """A 100,000-level index was a RecursionError before any job; a config.json so nested is
    read as no config (as one that is not JSON is)."""
    folder = sharded_folder(tmp_path / "m", weights)
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    assert not matcond.analyze(folder).empty
    (folder / "model.safetensors.index.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CheckpointError, match=r"cannot be read: .*nested too deeply"):
        matcond.analyze(folder)


def test_torch_bin_model_folders_whole_and_sharded(weights, tmp_path):
    (tmp_path / "hf").mkdir()
    torch.save(weights, tmp_path / "hf" / "pytorch_model.bin")
    whole = matcond.analyze(tmp_path / "hf")
    assert whole["layer"].is_unique
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    keys, weight_map = list(weights), {}
    for i, part in enumerate((keys[: len(keys) // 2], keys[len(keys) // 2 :])):
        shard = f"pytorch_model-{i + 1:05d}-of-00002.bin"
        torch.save({k: weights[k] for k in part}, sharded / shard)
        weight_map |= dict.fromkeys(part, shard)
    index = {"weight_map": weight_map}
    (sharded / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    pd.testing.assert_frame_equal(numbers(matcond.analyze(sharded)), numbers(whole))


def test_two_saves_of_one_model_join_on_the_layer_name(weights, tmp_path):
    """A plain state dict, DDP's module. prefix, a training checkpoint and torch.compile's
    _orig_mod.: the same layer names and numbers."""
    saves = {
        "plain": weights,
        "ddp": {f"module.{k}": v for k, v in weights.items()},
        "train": {"model": weights, "optimizer": {"state": {}, "param_groups": []}, "epoch": 3},
        "compiled": {f"_orig_mod.{k}": v for k, v in weights.items()},
    }
    tables = {}
    for name, obj in saves.items():
        torch.save(obj, tmp_path / f"{name}.pt")
        tables[name] = matcond.analyze(tmp_path / f"{name}.pt")
    joined = tables["plain"].merge(tables["ddp"], on="layer", suffixes=("", "_ddp"))
    assert (
        len(joined) == len(tables["plain"]) and joined["tensor_ddp"].str.startswith("module.").all()
    )
    for table in tables.values():
        pd.testing.assert_frame_equal(numbers(table), numbers(tables["plain"]))


def test_wrappers_are_stripped_only_when_every_key_shares_them():
    assert canonical_names(["model.fc.weight", "model.out.weight"]) == {
        "model.fc.weight": "fc",
        "model.out.weight": "out",
    }
    keys = ["model.layers.0.q_proj.weight", "lm_head.weight"]  # a Hugging Face LM: kept
    assert list(canonical_names(keys).values()) == ["model.layers.0.q_proj", "lm_head"]
    assert canonical_names(["module.weight"]) == {"module.weight": "module"}  # not to nothing


def test_layer_types_and_the_split_of_in_proj(weights):
    found = matrices(weights, conv="reshaped")
    by_layer = {m.layer: m for m in found}
    assert {m.layer: m.layer_type for m in found} == {
        "embed_tokens": "embedding",
        "self_attn.in_proj.q": "attention_q",
        "self_attn.in_proj.k": "attention_k",
        "self_attn.in_proj.v": "attention_v",
        "self_attn.out_proj": "attention_o",
        "mlp.0": "linear",
        "mlp.1": "linear",
        "conv": "conv2d",
    }
    in_proj = weights["self_attn.in_proj_weight"]
    for i, part in enumerate("qkv"):
        m = by_layer[f"self_attn.in_proj.{part}"]
        assert m.matrix.shape == (D, D) and m.tensor_shape == (3 * D, D)
        assert torch.equal(m.matrix, in_proj[i * D : (i + 1) * D])
    table = matcond.analyze(weights)
    q = table.set_index("layer").loc["self_attn.in_proj.q"]
    s = np.linalg.svd(in_proj[:D].double().numpy(), compute_uv=False)
    assert q["condition_number"] == pytest.approx(s[0] / s[-1], rel=1e-12)
    assert (q["rows"], q["cols"], q["tensor_shape"]) == (D, D, f"{3 * D}x{D}")


def test_fused_projections_of_other_models():
    """timm's qkv (thirds), a grouped-query qkv_proj (sizes from config.json), GPT-2's c_attn
    (columns, stored in x out), GPT-NeoX's query_key_value (interleaved per head: split with
    its config, one flagged matrix without), and names that are not attention."""
    torch.manual_seed(0)
    heads, kv_heads, head_dim = 4, 2, 3
    gqa = torch.randn((heads + 2 * kv_heads) * head_dim, heads * head_dim)
    neox = torch.randn(3 * heads * head_dim, heads * head_dim)
    entries = {
        "blocks.0.attn.qkv.weight": torch.randn(3 * 6, 6),
        "layers.0.self_attn.qkv_proj.weight": gqa,
        "h.0.attn.c_attn.weight": torch.randn(6, 18),
        "h.0.attn.c_proj.weight": torch.randn(6, 6),
        "h.0.mlp.c_proj.weight": torch.randn(24, 6),
        "encoder.block.0.layer.1.DenseReluDense.wo.weight": torch.randn(6, 24),
        "bert.encoder.layer.0.attention.output.dense.weight": torch.randn(6, 6),
        "gpt_neox.layers.0.attention.query_key_value.weight": neox,
    }
    config = {"num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim}
    found = {m.layer: m for m in matrices(entries, config | {"model_type": "gpt_neox"})}
    types = {name: m.layer_type for name, m in found.items()}
    assert [found[f"blocks.0.attn.qkv.{p}"].matrix.shape for p in "qkv"] == [(6, 6)] * 3
    assert [found[f"layers.0.self_attn.qkv_proj.{p}"].matrix.shape for p in "qkv"] == [
        (heads * head_dim, heads * head_dim),
        (kv_heads * head_dim, heads * head_dim),
        (kv_heads * head_dim, heads * head_dim),
    ]
    c_attn = entries["h.0.attn.c_attn.weight"]
    assert torch.equal(found["h.0.attn.c_attn.v"].matrix, c_attn[:, 12:].T)
    assert types["h.0.attn.c_proj"] == "attention_o" and types["h.0.mlp.c_proj"] == "linear"
    assert types["encoder.block.0.layer.1.DenseReluDense.wo"] == "linear"
    assert types["bert.encoder.layer.0.attention.output.dense"] == "attention_o"
    per_head = neox.reshape(heads, 3, head_dim, -1)  # NeoX: rows (head, q/k/v, head_dim)
    k = found["gpt_neox.layers.0.attention.query_key_value.k"].matrix
    assert torch.equal(k, per_head[:, 1].reshape(heads * head_dim, -1))
    plain = {m.layer: m for m in matrices(entries)}  # no config.json
    fused = plain["gpt_neox.layers.0.attention.query_key_value"]
    assert fused.layer_type == "attention_qkv" and "num_attention_heads" in fused.note
    assert [plain[f"layers.0.self_attn.qkv_proj.{p}"].matrix.shape[0] for p in "qkv"] == [8] * 3


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_key_value_heads", "2"), ("hidden_size", 12.0), ("num_attention_heads", -4)],
)
def test_a_config_field_of_the_wrong_type_is_named(field, value):
    """They were a TypeError or RuntimeError deep in the splitting of a fused projection."""
    entries = {"layers.0.self_attn.qkv_proj.weight": torch.randn(24, 12)}
    config = {"num_attention_heads": 4, "head_dim": 3} | {field: value}
    with pytest.raises(CheckpointError, match=f"config.json field {field} is {value!r}, not a"):
        matrices(entries, config)


def test_a_fused_neox_projection_whose_rows_do_not_split_by_heads_stays_whole():
    heads = 4
    entries = {"gpt_neox.layers.0.attention.query_key_value.weight": torch.randn(4 * 5, 6)}
    found = matrices(entries, {"num_attention_heads": heads, "model_type": "gpt_neox"})
    assert [m.layer_type for m in found] == ["attention_qkv"]  # 20 rows: not 3 x 4 x head


def test_names_with_mathtext_reach_the_figure_as_text(tmp_path):
    """A tensor or checkpoint name with $...$ broke the figure (ParseFatalException)."""
    from matcond.figures.own_weights import plot_own_weights

    spectra = {"$\\foo$": {"$\\bar{x}$.weight": np.array([3.0, 1.0]), "_hidden": np.ones(2)}}
    table = pd.DataFrame({"layer": ["$\\bar{x}$.weight"], "checkpoint": ["$\\foo$"]})
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    plot_own_weights(table, spectra, "$\\foo$ run", str(png), str(pdf))
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0


def test_a_convolution_is_one_row_by_default_the_map_from_a_patch_to_the_output(weights):
    """conv(x) at each output position = W (out x in * k * k) applied to the unfolded input
    patch there (torch's unfold as the reference)."""
    conv = weights["conv.weight"]
    (found,) = [m for m in matrices(weights) if m.tensor == "conv.weight"]
    assert found.layer == "conv" and found.layer_type == "conv2d"
    assert found.matrix.shape == (8, 3 * 3 * 3)
    x = torch.randn(1, 3, 5, 5)
    patches = torch.nn.functional.unfold(x, kernel_size=3)[0]  # (in * k * k, positions)
    direct = torch.nn.functional.conv2d(x, conv)[0].reshape(8, -1)
    torch.testing.assert_close(found.matrix.float() @ patches, direct, rtol=1e-5, atol=1e-6)


def test_a_kernel_per_position_is_the_matrix_applied_at_that_offset(weights):
    """conv(x) = sum over offsets (i, j) of W[:, :, i, j] x[:, i:, j:]: each row is one of
    those matrices."""
    conv = weights["conv.weight"]
    found = [m for m in matrices(weights, conv="per_position") if m.tensor == "conv.weight"]
    assert [m.layer for m in found] == [f"conv[{i},{j}]" for i in range(3) for j in range(3)]
    x = torch.randn(3, 5, 5)
    summed = sum(
        torch.einsum("oc,chw->ohw", m.matrix, x[:, i : i + 3, j : j + 3])
        for m, (i, j) in zip(found, [(i, j) for i in range(3) for j in range(3)], strict=True)
    )
    direct = torch.nn.functional.conv2d(x[None], conv)[0]
    torch.testing.assert_close(summed, direct, rtol=1e-5, atol=1e-6)
    assert all(m.layer_type == "conv2d" and m.matrix.shape == (8, 3) for m in found)
    with pytest.raises(ValueError, match="conv must be one of"):
        matrices(weights, conv="fft")


def test_a_folder_of_checkpoints_in_step_order_with_a_summary(weights, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    torch.manual_seed(1)
    for step in (100, 20, 3):  # written out of order; 100 sorts before 20 as text
        torch.save(
            {k: v + 0.01 * step * torch.randn_like(v) for k, v in weights.items()},
            run / f"step_{step}.pt",
        )
    (run / "notes.txt").write_text("not a checkpoint")
    table = matcond.analyze(run)
    assert table["checkpoint"].unique().tolist() == ["step_3.pt", "step_20.pt", "step_100.pt"]
    assert table["step"].unique().tolist() == [3, 20, 100]
    one = matcond.analyze(run / "step_20.pt")
    in_run = table[table["checkpoint"] == "step_20.pt"].reset_index(drop=True)
    pd.testing.assert_frame_equal(
        numbers(in_run).drop(columns="step"), numbers(one).drop(columns="step")
    )
    summary = matcond.summarize(table)
    assert summary["checkpoint"].tolist() == ["step_3.pt", "step_20.pt", "step_100.pt"]
    first = table[table["checkpoint"] == "step_3.pt"]
    row = summary.iloc[0]
    assert row["n_matrices"] == len(first) and row["step"] == 3
    assert row["condition_number_max"] == first["condition_number"].max()
    assert row["layer_of_max"] == first.loc[first["condition_number"].idxmax(), "layer"]
    assert row["condition_number_median"] == first["condition_number"].median()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="holds no weight file"):
        matcond.analyze(empty)


def test_a_module_is_analysed_like_its_saved_state_dict(weights, tmp_path):
    torch.manual_seed(0)
    block = Block()
    torch.save(block.state_dict(), tmp_path / "b.pt")
    heads = {"num_attention_heads": 4}  # what the module's nn.MultiheadAttention says
    saved = matcond.analyze(tmp_path / "b.pt", config=heads)
    pd.testing.assert_frame_equal(numbers(matcond.analyze(block)), numbers(saved))
    assert matcond.analyze(block)["checkpoint"].unique().tolist() == ["Block"]


def test_the_figure_of_a_run_has_a_panel_along_the_steps(weights, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from matcond.figures import own_weights as figure_module

    run = tmp_path / "run"
    run.mkdir()
    for step in (1, 2):
        torch.save(weights, run / f"ckpt{step}.pt")
    table, spectra, _, _ = full_analysis(run, config={"num_attention_heads": 4})
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    figure_module.plot_own_weights(table, spectra, "run", str(png), str(pdf))
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0
    drawn = {}
    monkeypatch.setattr(figure_module, "save", lambda fig, png, pdf: drawn.update(fig=fig))
    figure_module.plot_own_weights(table, spectra, "run", str(png), str(pdf))
    (along,) = [ax for ax in drawn["fig"].axes if "along 2 checkpoints" in ax.get_title()]
    assert along.get_xlabel() == "step"
    matrices_only = table[~table["layer_type"].isin(["attention_qk", "attention_ov"])]
    # a line per weight matrix (the per-head products, of kappa inf, left out), a legend per type
    assert len(along.get_legend().texts) == matrices_only["layer_type"].nunique()
    assert len(along.lines) - len(along.get_legend().texts) == matrices_only["layer"].nunique()
    plt.close(drawn["fig"])


def test_per_head_products_are_what_the_attention_computes():
    """softmax(x W_Q,h^T W_K,h x^T / sqrt(d_h)) is nn.MultiheadAttention's own attention of
    head h, and W_O,h W_V,h x_j summed under those weights is its output; the products are
    d x d of rank d_h: pseudo-condition number, not condition number."""
    torch.manual_seed(0)
    heads, d = 4, 16
    mha = torch.nn.MultiheadAttention(d, heads, bias=False).double()
    table = matcond.analyze(mha).set_index("layer")
    products = [f"head{h}.{kind}" for h in range(heads) for kind in ("qk", "ov")]
    assert table.index[-2 * heads :].tolist() == products
    found = {
        m.layer: m.matrix for m in matrices(dict(mha.state_dict()), {"num_attention_heads": heads})
    }
    x = torch.randn(5, d, dtype=torch.float64)
    out, weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    mixed = 0
    for h in range(heads):
        scores = x @ found[f"head{h}.qk"] @ x.T / (d // heads) ** 0.5
        torch.testing.assert_close(torch.softmax(scores, dim=-1), weights[h])
        mixed = mixed + weights[h] @ (x @ found[f"head{h}.ov"].T)
    torch.testing.assert_close(mixed, out)
    qk = table.loc["head0.qk"]
    assert qk["layer_type"] == "attention_qk" and qk["numerical_rank"] == d // heads
    assert qk["condition_number"] == np.inf and np.isfinite(qk["pseudo_condition_number"])
    assert matcond.summarize(table.reset_index())["n_matrices"].item() == 4  # q, k, v, o
    without_heads = matcond.analyze(dict(mha.state_dict()))
    assert not without_heads["layer_type"].isin(["attention_qk", "attention_ov"]).any()


def test_grouped_query_heads_share_their_key_and_value():
    torch.manual_seed(0)
    heads, kv_heads, head_dim, d = 4, 2, 3, 12
    entries = {
        "self_attn.q_proj.weight": torch.randn(heads * head_dim, d),
        "self_attn.k_proj.weight": torch.randn(kv_heads * head_dim, d),
        "self_attn.v_proj.weight": torch.randn(kv_heads * head_dim, d),
        "self_attn.o_proj.weight": torch.randn(d, heads * head_dim),
    }
    found = {m.layer: m.matrix for m in matrices(entries, {"num_attention_heads": heads})}
    q, k = entries["self_attn.q_proj.weight"].double(), entries["self_attn.k_proj.weight"].double()
    o, v = entries["self_attn.o_proj.weight"].double(), entries["self_attn.v_proj.weight"].double()
    # query heads 2 and 3 use key/value head 1 (rows 3..5)
    torch.testing.assert_close(found["self_attn.head3.qk"], q[9:12].T @ k[3:6])
    torch.testing.assert_close(found["self_attn.head2.ov"], o[:, 6:9] @ v[3:6])
    assert len([n for n in found if ".head" in n]) == 2 * heads


def test_component_errors_against_a_reference_by_layer_name(weights, tmp_path):
    """Against numpy: relative errors of kappa, the spectrum and the whole matrix; a DDP save
    compared with a plain state dict matches by layer name; a run folder is compared with
    its first checkpoint (zero errors there)."""
    from matcond.own_weights.compare import component_errors

    torch.manual_seed(2)
    trained = {f"module.{k}": v + 0.1 * torch.randn_like(v) for k, v in weights.items()}
    errors = component_errors(trained, weights).set_index(["layer", "component"])
    w = trained["module.mlp.0.weight"].double().numpy()
    w0 = weights["mlp.0.weight"].double().numpy()
    s, s0 = (np.linalg.svd(m, compute_uv=False) for m in (w, w0))
    expected = {
        "condition_number": abs(s[0] / s[-1] - s0[0] / s0[-1]) / (s0[0] / s0[-1]),
        "singular_values": np.linalg.norm(s - s0) / np.linalg.norm(s0),
        "overall": np.linalg.norm(w - w0) / np.linalg.norm(w0),
        "frobenius_norm": abs(np.linalg.norm(w) - np.linalg.norm(w0)) / np.linalg.norm(w0),
    }
    for component, value in expected.items():
        got = errors.loc[("mlp.0", component), "relative_error"]
        assert got == pytest.approx(value, rel=1e-10), component
    assert errors.loc[("mlp.0", "condition_number"), "reference_value"] == pytest.approx(
        s0[0] / s0[-1], rel=1e-12
    )
    assert set(errors.index.get_level_values("layer")) == {m.layer for m in matrices(weights)}
    run = tmp_path / "run"
    run.mkdir()
    torch.save(weights, run / "step0.pt")
    torch.save(trained, run / "step9.pt")
    along = component_errors(run)
    pd.testing.assert_frame_equal(full_analysis(run, errors=True)[3], along)  # the rule's one pass
    assert full_analysis(run / "step9.pt", errors=True)[
        3
    ].empty  # one checkpoint: nothing to compare
    first = along[along["checkpoint"] == "step0.pt"]
    assert (first["relative_error"] == 0).all() and set(along["reference"]) == {"step0.pt"}
    last = along[along["checkpoint"] == "step9.pt"].set_index(["layer", "component"])
    pd.testing.assert_series_equal(last["relative_error"], errors["relative_error"])
    with pytest.raises(ValueError, match="the reference holds 2 checkpoints"):
        component_errors(trained, run)
    with pytest.raises(ValueError, match="no layer of 'state_dict' is in the reference"):
        component_errors({"other.weight": torch.eye(3)}, weights)
    wider = dict(weights) | {"mlp.0.weight": torch.randn(33, D)}
    with pytest.raises(ValueError, match=r"layer 'mlp.0': \(33, 16\) here, \(32, 16\)"):
        component_errors(wider, weights)


def dense_gn_kappa(net: torch.nn.Module, x: torch.Tensor) -> float:
    """kappa over the nonzero eigenvalues of (1/n) J^T J, J the Jacobian of the outputs on x
    with respect to every weight, by autodiff in float64 (eigenvalues above 1e-10 lambda_max)."""
    params = dict(net.named_parameters())

    def outputs(p):
        return torch.func.functional_call(net, p, (x,)).reshape(-1)

    jac = torch.func.jacrev(outputs)(params)
    j = torch.cat([jac[name].reshape(jac[name].shape[0], -1) for name in params], dim=1)
    eigenvalues = torch.linalg.eigvalsh(j.T @ j / x.shape[0])
    kept = eigenvalues[eigenvalues > 1e-10 * eigenvalues[-1]]
    return float((kept[-1] / kept[0]).detach())


@pytest.mark.parametrize("activation", ["linear", "leaky_relu"])
def test_the_gauss_newton_condition_of_a_models_stack(activation, tmp_path):
    from matcond.own_weights.gauss_newton import gauss_newton_condition

    torch.manual_seed(0)
    layers = [torch.nn.Linear(6, 5, bias=False), torch.nn.Linear(5, 3, bias=False)]
    if activation == "linear":
        layers.insert(1, torch.nn.Linear(5, 5, bias=False))
    else:
        layers.insert(1, torch.nn.LeakyReLU(0.2))
    net = torch.nn.Sequential(*layers).double()
    x = torch.randn(40, 6, dtype=torch.float64)
    torch.save(net.state_dict(), tmp_path / "net.pt")
    result = gauss_newton_condition(tmp_path / "net.pt", x, activation, alpha=0.2)
    assert result["kappa"] == pytest.approx(dense_gn_kappa(net, x), rel=1e-8)
    assert result["reliable"] and result["bound_over_kappa"] >= 1 and result["note"] == ""
    assert result["bound_name"] == ("lemma2_convex" if activation == "linear" else "lemma4")


def test_the_gauss_newton_condition_says_what_it_leaves_out_and_refuses_what_does_not_chain():
    from matcond.own_weights.gauss_newton import gauss_newton_condition

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, 3))
    x = torch.randn(30, 6)
    assert gauss_newton_condition(net, x)["note"] == "nonzero biases left out: ['0.bias', '1.bias']"
    with pytest.raises(ValueError, match=r"layer '0' takes 6 inputs, it is given 7"):
        gauss_newton_condition(net, torch.randn(30, 7))
    with pytest.raises(ValueError, match=r"layer '1' takes 5 inputs, it is given 6"):
        gauss_newton_condition(net, x, layers=["1", "0"])
    with pytest.raises(ValueError, match=r"leaky_relu is for one hidden layer: 2 matrices, not 1"):
        gauss_newton_condition(net, x, "leaky_relu", layers=["0"])


def test_a_terabyte_sparse_safetensors_file_is_one_clear_error(tmp_path):
    """Its header matches its (sparse) size: it is refused before anything is read, as more
    than the machine's memory (it was a bare RuntimeError when the file was memory-mapped)."""
    path = tmp_path / "huge.safetensors"
    n = 4_000_000_000_000
    header = json.dumps({"w": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header)
        fh.truncate(8 + len(header) + n)
    with pytest.raises(
        CheckpointError, match=r"\(4,000,000,000,\d+ bytes\) does not fit in memory"
    ):
        matcond.analyze(path)


def test_the_api_shows_itself():
    """dir(matcond) lists analyze; its keywords are in its signature, and a misspelt one
    names analyze (it named analyse, the function behind it)."""
    import inspect

    assert {"analyze", "summarize", "component_errors"} <= set(dir(matcond))
    keywords = list(inspect.signature(matcond.analyze).parameters)
    assert keywords == [
        "source",
        "effective_rank_thresholds",
        "rank_rtol",
        "max_elements",
        "conv",
        "config",
        "layers",
    ]
    with pytest.raises(TypeError, match=r"analyze\(\) got an unexpected keyword"):
        matcond.analyze("x", effective_rank_threshold=[0.1])


def test_a_truncated_checkpoint_in_a_folder_is_skipped_and_the_others_analysed(weights, tmp_path):
    """One truncated file failed the whole folder: the good checkpoints got no output."""
    from matcond.own_weights import UNREADABLE_FILE

    run = tmp_path / "run"
    run.mkdir()
    for step in (1, 2, 3):
        save_file(
            {k: v.contiguous() for k, v in weights.items()}, str(run / f"s{step}.safetensors")
        )
    (run / "s2.safetensors").write_bytes((run / "s2.safetensors").read_bytes()[:-100])
    table, _, skipped, _ = full_analysis(run)
    assert set(table["checkpoint"]) == {"s1.safetensors", "s3.safetensors"}
    bad = skipped[skipped["tensor"] == UNREADABLE_FILE]
    assert list(bad["checkpoint"]) == ["s2.safetensors"]
    assert "truncated or corrupt safetensors" in bad["reason"].iloc[0]
    for step in (1, 3):
        (run / f"s{step}.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(CheckpointError, match="no checkpoint of .* can be read"):
        full_analysis(run)


def test_gpt2_attention_gets_its_per_head_products():
    """GPT-2's fused c_attn (Conv1D, stored in x out) and its c_proj met under different
    layer names (attn.c_attn, attn), so a GPT-2 got no per-head products and no note."""
    torch.manual_seed(0)
    d, heads = 8, 2
    c_attn, c_proj = torch.randn(d, 3 * d), torch.randn(d, d)
    entries = {"h.0.attn.c_attn.weight": c_attn, "h.0.attn.c_proj.weight": c_proj}
    found = {m.layer: m.matrix for m in matrices(entries, {"n_head": heads})}
    q, k, v = (c_attn[:, i * d : (i + 1) * d].T.double() for i in range(3))
    o, hd = c_proj.T.double(), d // heads
    for h in range(heads):
        rows = slice(h * hd, (h + 1) * hd)
        torch.testing.assert_close(found[f"h.0.attn.head{h}.qk"], q[rows].T @ k[rows])
        torch.testing.assert_close(found[f"h.0.attn.head{h}.ov"], o[:, rows] @ v[rows])


def test_two_shards_holding_one_tensor_are_refused_before_any_job(weights, tmp_path):
    """Refused only inside the job before: now at config time, as the other folder defects."""
    folder = sharded_folder(tmp_path / "m", weights)
    first = folder / "model-00001-of-00003.safetensors"
    second = folder / "model-00002-of-00003.safetensors"
    from safetensors.torch import load_file

    save_file({**load_file(str(second)), **load_file(str(first))}, str(second))
    with pytest.raises(ConfigError, match=r"checkpoints\.m: 'm' has shards .* both hold tensor"):
        check_checkpoint_paths({"checkpoints": {"m": "m"}}, base=tmp_path)


def test_a_file_name_that_is_not_utf8_is_named_before_any_job(weights, tmp_path):
    """It was a UnicodeEncodeError before any job."""
    run = tmp_path / "run"
    run.mkdir()
    save_file({k: v.contiguous() for k, v in weights.items()}, str(run / "a.safetensors"))
    (run / os.fsdecode(b"b\xff.safetensors")).write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"checkpoints\.r: 'run' .* not UTF-8 \(b'b\\xff"):
        check_checkpoint_paths({"checkpoints": {"r": "run"}}, base=tmp_path)


def test_a_layer_filter_analyses_only_the_layers_it_finds():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, bias=False)
    every = matcond.analyze(mha)
    heads = matcond.analyze(mha, layers=r"head\d+\.qk$")
    assert heads["layer"].tolist() == ["head0.qk", "head1.qk"]
    pd.testing.assert_frame_equal(
        heads.reset_index(drop=True),
        every[every["layer"].isin(heads["layer"])].reset_index(drop=True),
    )
    assert matcond.analyze(mha, layers="no such layer").empty
    with pytest.raises(ValueError, match=r"layers: '\(' is not a regular expression"):
        matcond.analyze(mha, layers="(")


def test_the_per_layer_figure_has_a_panel_per_matrix_titled_with_its_name(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from matcond.figures import own_weights as figure_module

    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, bias=False)
    table, spectra, _, _ = full_analysis(mha)
    drawn = {}
    monkeypatch.setattr(figure_module, "save", lambda fig, png, pdf: drawn.update(fig=fig))
    figure_module.plot_layer_spectra(table, spectra, "$x$", "a.png", "a.pdf")
    axes = [ax for ax in drawn["fig"].axes if ax.get_visible()]
    assert [ax.get_title().split("\n")[0] for ax in axes] == table["layer"].tolist()
    assert "pseudo" in axes[-1].get_title()  # a per-head product: rank 4 of 8
    plt.close(drawn["fig"])
    monkeypatch.setattr(figure_module, "MAX_PANELS", 3)
    figure_module.plot_layer_spectra(table, spectra, "$x$", "a.png", "a.pdf")
    assert sum(ax.get_visible() for ax in drawn["fig"].axes) == 3
    assert f"{len(table) - 3} more not drawn" in drawn["fig"].get_suptitle()
    plt.close(drawn["fig"])


def test_describe_lists_what_analyze_analyses_without_a_spectrum(monkeypatch):
    import matcond.own_weights.metrics as metrics

    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, bias=False)
    table = matcond.analyze(mha)
    monkeypatch.setattr(metrics, "analyze_matrices", None)  # describe computes no spectrum
    described = matcond.describe(mha)
    columns = ["layer", "tensor", "layer_type", "rows", "cols"]
    pd.testing.assert_frame_equal(described[columns], table[columns], check_dtype=False)
    assert matcond.describe(mha, layers="qk$")["layer"].tolist() == ["head0.qk", "head1.qk"]
    with pytest.raises(ValueError, match="layers: '\\[' is not a regular expression"):
        matcond.describe(mha, layers="[")
    assert "describe" in dir(matcond)
