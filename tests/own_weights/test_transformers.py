"""matcond.analyze on transformers' own GPT-2, BERT and LLaMA (tiny, built from their configs,
no download), saved as sharded safetensors folders with their config.json: every attention
head gets its QK and OV products, each the one the model's own modules compute, and every
layer both analyse agrees with WeightWatcher 0.7.7.

PyPI's torchvision cannot import beside the CPU torch wheel, and transformers imports it
when it is installed; it is hidden here, as transformers then runs without it."""

import logging
import sys

import numpy as np
import pytest
import torch

import matcond
from matcond.own_weights.layers import matrices

sys.modules.setdefault("torchvision", None)  # find_spec -> None: transformers goes without
transformers = pytest.importorskip("transformers")
ww = pytest.importorskip("weightwatcher")

# WeightWatcher 0.7.7 calls a pandas API that pandas deprecates
pytestmark = pytest.mark.filterwarnings("ignore:Passing a dict to DataFrame.from_records")

D, HEADS, LAYERS = 32, 4, 2


def tiny(kind: str) -> torch.nn.Module:
    """The model ``kind`` at width 32, 4 heads (LLaMA: 2 key/value heads), 2 layers, seeded,
    biases zero (the products are of the weights: with zero biases the scores are exactly
    x QK x^T)."""
    torch.manual_seed(0)
    if kind == "gpt2":
        config = transformers.GPT2Config(
            n_layer=LAYERS, n_embd=D, n_head=HEADS, vocab_size=64, n_positions=16
        )
        model = transformers.GPT2LMHeadModel(config)
    elif kind == "bert":
        config = transformers.BertConfig(
            num_hidden_layers=LAYERS,
            hidden_size=D,
            num_attention_heads=HEADS,
            intermediate_size=64,
            vocab_size=64,
            max_position_embeddings=16,
        )
        model = transformers.BertModel(config)
    else:
        config = transformers.LlamaConfig(
            num_hidden_layers=LAYERS,
            hidden_size=D,
            num_attention_heads=HEADS,
            num_key_value_heads=2,
            intermediate_size=64,
            vocab_size=64,
        )
        model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(".bias"):
                parameter.zero_()
    return model.double().eval()


def projections(kind: str, model: torch.nn.Module, layer: int):
    """The first attention layer's own modules: x -> queries, keys, values (each
    (tokens, heads, head size), keys and values repeated per query head) and the output
    projection."""
    hd = D // HEADS

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(t.shape[0], -1, hd)

    if kind == "gpt2":
        attn = model.transformer.h[layer].attn
        return (lambda x: [heads(t) for t in attn.c_attn(x).split(D, dim=-1)]), attn.c_proj
    if kind == "bert":
        attn = model.encoder.layer[layer].attention
        own = attn.self
        return (
            lambda x: [heads(own.query(x)), heads(own.key(x)), heads(own.value(x))]
        ), attn.output.dense
    attn = model.model.layers[layer].self_attn
    groups = HEADS // model.config.num_key_value_heads

    def qkv(x):
        k, v = heads(attn.k_proj(x)), heads(attn.v_proj(x))
        return [heads(attn.q_proj(x)), *(t.repeat_interleave(groups, dim=1) for t in (k, v))]

    return qkv, attn.o_proj


@pytest.fixture(scope="module", params=["gpt2", "bert", "llama"])
def saved(request, tmp_path_factory):
    """(kind, model, its sharded folder, matcond's table of the folder)."""
    kind = request.param
    model = tiny(kind)
    folder = tmp_path_factory.mktemp(kind)
    model.save_pretrained(folder, max_shard_size="20KB")
    assert len(list(folder.glob("model-*-of-*.safetensors"))) > 1
    assert (folder / "model.safetensors.index.json").is_file()
    return kind, model, folder, matcond.analyze(folder)


def test_every_head_of_every_layer_gets_its_products(saved):
    kind, _, _, table = saved
    for product in ("attention_qk", "attention_ov"):
        rows = table[table["layer_type"] == product]
        assert len(rows) == LAYERS * HEADS, (kind, product)
        assert (rows["numerical_rank"] == D // HEADS).all()


def test_the_products_are_what_the_models_own_modules_compute(saved):
    """Head h's scores are x Q_h K_h^T x^T = x QK_h x^T (before LLaMA's rotary embedding,
    which turns both by position), and the output projection of head h's values alone is
    x OV_h^T; the products are matcond's, from the model's state dict and config."""
    kind, model, _, _ = saved
    found = {m.layer: m.matrix for m in matrices(model.state_dict(), model.config.to_dict())}
    torch.manual_seed(1)
    x = torch.randn(5, D, dtype=torch.float64)
    hd = D // HEADS
    with torch.no_grad():
        for layer in range(LAYERS):
            qkv, out = projections(kind, model, layer)
            q, k, v = qkv(x)
            prefix = next(n for n in found if f".{layer}." in n and n.endswith("head0.qk"))
            prefix = prefix.removesuffix("head0.qk")
            for h in range(HEADS):
                qk, ov = found[f"{prefix}head{h}.qk"], found[f"{prefix}head{h}.ov"]
                torch.testing.assert_close(q[:, h] @ k[:, h].T, x @ qk @ x.T)
                alone = torch.zeros(5, HEADS, hd, dtype=torch.float64)
                alone[:, h] = v[:, h]
                torch.testing.assert_close(out(alone.reshape(5, D)), x @ ov.T)


def test_every_layer_both_analyse_agrees_with_weightwatcher(saved):
    """By module name: largest eigenvalue, Frobenius norm, stable rank and number of
    eigenvalues to 1e-9. GPT-2's fused c_attn is one layer to WeightWatcher and its q, k and v
    to matcond, its tied lm_head is not in the saved folder, and WeightWatcher skips a matrix
    of fewer than its minimum rows: those are left out."""
    kind, model, _, table = saved
    logging.disable(logging.WARNING)
    try:
        details = ww.WeightWatcher(model=model).analyze()
    finally:
        logging.disable(logging.NOTSET)
    ours = table[~table["layer_type"].isin(["attention_qk", "attention_ov"])]
    ours = ours.set_index("layer")
    shared = [name for name in details["longname"] if name in ours.index]
    expected = {
        "gpt2": 2 + 3 * LAYERS,  # wte, wpe; per block attn.c_proj, mlp.c_fc, mlp.c_proj
        # word and position embeddings (WeightWatcher skips the 2-row token types); q, k, v,
        # o, 2 dense per block; the pooler
        "bert": 2 + 6 * LAYERS + 1,
        "llama": 1 + 7 * LAYERS + 1,  # embed_tokens; q, k, v, o, gate, up, down; lm_head
    }[kind]
    assert len(shared) == expected, sorted(set(ours.index) - set(shared))
    for _, theirs in details[details["longname"].isin(shared)].iterrows():
        row = ours.loc[theirs["longname"]]
        pairs = {
            "lambda_max": row["largest_singular_value"] ** 2,
            "norm": row["frobenius_norm"] ** 2,
            "stable_rank": row["stable_rank"],
            "num_evals": min(row["rows"], row["cols"]),
        }
        for column, value in pairs.items():
            assert theirs[column] == pytest.approx(value, rel=1e-9), (theirs["longname"], column)
    assert np.isfinite(ours["condition_number"]).all()


def test_gpt2s_tied_lm_head_is_counted_once_and_missing_heads_are_named(tmp_path):
    """GPT2LMHeadModel's lm_head is its wte (one tensor): 14 matrices, not 15. Its state dict
    saved with torch.save, without config.json, gets no per-head products, and a warning
    names the config= argument that gives them."""
    from matcond.own_weights import full_analysis

    model = tiny("gpt2")
    table, _, skipped, _ = full_analysis(model)
    assert matcond.summarize(table)["n_matrices"].tolist() == [2 + 6 * LAYERS]
    (reason,) = skipped.loc[skipped["tensor"] == "lm_head.weight", "reason"]
    assert reason.startswith("tied to 'transformer.wte.weight'")
    run = tmp_path / "run"
    run.mkdir()
    torch.save(model.state_dict(), run / "step_1.pt")
    with pytest.warns(UserWarning, match=r"heads is unknown.*config=\{'num_attention_heads'"):
        bare = matcond.analyze(run)
    given = matcond.analyze(run, config=model.config.to_dict())
    for kind, n in (("attention_qk", 0), ("attention_ov", 0)):
        assert (bare["layer_type"] == kind).sum() == n
        assert (given["layer_type"] == kind).sum() == HEADS * LAYERS
    assert "lm_head" not in set(bare["layer"])
