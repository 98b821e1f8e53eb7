"""Traps a new user met (issue 60): per-head products lost without a word when the number of
heads is unknown, tied weights counted twice, spectra figures of unnamed lines stretched down
to rounding noise, and a layers figure that does not say which checkpoint it draws. (The
column names against WeightWatcher's: tests/own_weights/test_weightwatcher.py.)"""

import json
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import matcond
from matcond.figures import own_weights as figure_module
from matcond.own_weights import full_analysis

D, HEADS, LAYERS, VOCAB = 16, 4, 2, 32


def gpt2_like() -> dict[str, torch.Tensor]:
    """A state dict with GPT-2's names and layout (Conv1D weights stored in x out) and its
    tied ``lm_head``: the very tensor of ``wte``, as GPT2LMHeadModel.state_dict() gives."""
    torch.manual_seed(0)
    sd = {
        "transformer.wte.weight": torch.randn(VOCAB, D),
        "transformer.wpe.weight": torch.randn(8, D),
    }
    for i in range(LAYERS):
        block = f"transformer.h.{i}"
        sd[f"{block}.attn.c_attn.weight"] = torch.randn(D, 3 * D)
        sd[f"{block}.attn.c_proj.weight"] = torch.randn(D, D)
        sd[f"{block}.mlp.c_fc.weight"] = torch.randn(D, 4 * D)
        sd[f"{block}.mlp.c_proj.weight"] = torch.randn(4 * D, D)
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    return sd


def per_head(table) -> int:
    return int(table["layer_type"].isin(["attention_qk", "attention_ov"]).sum())


def test_unknown_heads_warn_naming_the_config_argument(tmp_path):
    """A torch.save folder without config.json lost every per-head row without a word."""
    run = tmp_path / "run"
    run.mkdir()
    torch.save(gpt2_like(), run / "step_1.pt")
    with pytest.warns(UserWarning, match=r"config=\{'num_attention_heads': H\}") as record:
        table = matcond.analyze(run)
    assert per_head(table) == 0
    message = str(record[0].message)
    assert "2 attention layer(s) ('transformer.h.0.attn', 'transformer.h.1.attn')" in message
    assert "the number of heads is unknown" in message and "config.json" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = matcond.analyze(run, config={"n_head": HEADS})
        (run / "config.json").write_text(json.dumps({"n_head": HEADS}))
        beside = matcond.analyze(run)
    assert per_head(given) == per_head(beside) == 2 * HEADS * LAYERS


def test_heads_that_do_not_fit_the_shapes_warn():
    with pytest.warns(UserWarning, match=r"\('transformer.h.0.attn' \(q \(16, 16\).* fit 5 heads"):
        table = matcond.analyze(gpt2_like(), config={"n_head": 5})
    assert per_head(table) == 0


def test_a_model_without_attention_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matcond.analyze(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2)))


class Tied(torch.nn.Module):
    """An embedding, a linear layer, and an output layer tied to the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D)
        self.fc = torch.nn.Linear(D, D)
        self.lm_head = torch.nn.Linear(D, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight


def test_tied_weights_are_one_row_and_counted_once(tmp_path):
    torch.manual_seed(0)
    model = Tied()
    torch.save(model.state_dict(), tmp_path / "tied.pt")  # torch.save keeps the sharing
    copies = {k: v.clone() for k, v in model.state_dict().items()}  # a tie lost in saving
    for source in (model, tmp_path / "tied.pt", copies):
        table, _, skipped, _ = full_analysis(source)
        assert table["layer"].tolist() == ["wte", "fc"], source
        assert matcond.summarize(table)["n_matrices"].tolist() == [2]
        (reason,) = skipped.loc[skipped["tensor"] == "lm_head.weight", "reason"]
        assert reason.startswith("tied to 'wte.weight'")
        assert matcond.describe(source)["layer"].tolist() == ["wte", "fc"]
    sd = gpt2_like()
    summary = matcond.summarize(matcond.analyze(sd, config={"n_head": HEADS}))
    assert summary["n_matrices"].tolist() == [2 + 6 * LAYERS]  # wte, wpe; q, k, v, o, fc, proj


def test_equal_values_are_tied_but_not_constant_or_merely_alike_tensors():
    from matcond.own_weights.layers import tied_entries

    torch.manual_seed(0)
    w = torch.randn(6, 4)
    entries = {
        "a": w,
        "b": w.clone(),  # equal values under another name
        "c": w.T.contiguous().T,  # the same values, other strides
        "view": w[:3],  # the same memory, another shape
        "zeros1": torch.zeros(6, 4),
        "zeros2": torch.zeros(6, 4),  # equal by initialisation
        "other": w + 1e-7,  # alike, not equal
        "half": w.half(),  # another dtype
    }
    assert tied_entries(entries) == {"b": "a", "c": "a"}


def test_a_tie_changes_no_other_name():
    """The wrapper every analysed key shares is stripped: leaving the tied lm_head out must not
    make ``model.`` shared (LLaMA's names with tie_word_embeddings)."""
    torch.manual_seed(0)
    embed = torch.randn(VOCAB, D)
    sd = {"model.embed_tokens.weight": embed, "model.fc.weight": torch.randn(D, D)}
    table = matcond.analyze({**sd, "lm_head.weight": embed})
    assert table["layer"].tolist() == ["model.embed_tokens", "model.fc"]


def test_numerical_zeros_are_not_drawn():
    s = np.array([2.0, 1e-3, 1e-14, 1e-17, 0.0])
    drawn = figure_module.drawn_singular_values(s, 100)  # cut: 2 * 2.2e-16 * 100 = 4.4e-14
    np.testing.assert_array_equal(drawn, [2.0, 1e-3, np.nan, np.nan, np.nan])


def captured(monkeypatch, plot, *args) -> plt.Figure:
    """The figure ``plot`` draws, without writing it."""
    drawn = {}
    monkeypatch.setattr(figure_module, "save", lambda fig, png, pdf: drawn.update(fig=fig))
    plot(*args, "model", "a.png", "a.pdf")
    return drawn["fig"]


def test_the_spectra_are_grouped_by_type_named_and_cut_at_numerical_zero(monkeypatch):
    """8 rank-4 products of 16 x 16 of each kind, 2 embeddings, 2 q, k, v, o and 4 linear: a
    panel per type, the products in their own, no line below s_1 eps max(m, n)."""
    table, spectra, _, _ = full_analysis(gpt2_like(), config={"n_head": HEADS})
    fig = captured(monkeypatch, figure_module.plot_own_weights, table, spectra)
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    counts = table["layer_type"].value_counts()
    assert set(panels) == {f"{kind}: {n} matrices" for kind, n in counts.items()}
    for title, ax in panels.items():
        kind = title.split(":")[0]
        assert len(ax.lines) == counts[kind]
        for line in ax.lines:
            y = np.asarray(line.get_ydata(), dtype=float)
            assert np.nanmin(y) > 1e-10 * np.nanmax(y)  # no rounding noise drawn
    products = panels[f"attention_qk: {HEADS * LAYERS} matrices"]
    assert all(np.isfinite(line.get_ydata()).sum() == D // HEADS for line in products.lines)
    named = panels[f"linear: {2 * LAYERS} matrices"].get_legend()
    assert named.get_title().get_text() == "transformer.h.*"
    assert [t.get_text() for t in named.texts] == [
        "0.mlp.c_fc",
        "0.mlp.c_proj",
        "1.mlp.c_fc",
        "1.mlp.c_proj",
    ]
    assert "checkpoint state_dict" in fig.get_suptitle()
    assert f"{2 * HEADS * LAYERS * (D - D // HEADS)} values at" in fig.get_suptitle()
    assert "numerical zero" in fig.get_suptitle()
    plt.close(fig)


def test_many_lines_are_named_on_a_colorbar(monkeypatch):
    torch.manual_seed(0)
    sd = {f"blocks.{i}.fc.weight": torch.randn(6, 6) for i in range(12)}
    table, spectra, _, _ = full_analysis(sd)
    fig = captured(monkeypatch, figure_module.plot_own_weights, table, spectra)
    bar = next(ax for ax in fig.axes if ax.get_ylabel().startswith("blocks.*.fc"))
    labels = [t.get_text() for t in bar.get_yticklabels()]
    assert labels[0] == "0" and labels[-1] == "11"
    plt.close(fig)


def test_the_layers_figure_names_its_checkpoint(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    torch.manual_seed(0)
    for step in (10, 20):
        torch.save({"fc.weight": torch.randn(5, 3)}, run / f"step_{step}.pt")
    table, spectra, _, _ = full_analysis(run)
    fig = captured(monkeypatch, figure_module.plot_layer_spectra, table, spectra)
    assert "checkpoint step_20.pt" in fig.get_suptitle()
    plt.close(fig)
    fig = captured(monkeypatch, figure_module.plot_own_weights, table, spectra)
    assert "checkpoint step_20.pt" in fig.get_suptitle()
    plt.close(fig)
