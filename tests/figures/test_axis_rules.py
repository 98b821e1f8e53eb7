"""The axis rules (matcond.figures.axes): integer quantities get integer ticks, a log axis only
over more than a decade, every value of a sweep labelled; checked on the rules' own helpers and
on real figure-drawing code fed small synthetic tables (every check runs inside ``save``, whose
findings go to stderr as ``layout: ...`` lines)."""

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from support import REPO

from matcond.claims.check import paper_values
from matcond.core.config import load_yaml
from matcond.figures import controls, depth, gn_training, paper
from matcond.figures import style as style_module
from matcond.figures.axes import (
    apply_integer_ticks,
    axis_problems,
    decade_scale,
    integer_axis,
    is_integer_axis,
)
from matcond.figures.style import PAPER_COMPONENTS, PAPER_VALUES, figure

# words of an axis label that name an integer quantity: such an axis must be marked integer
INTEGER_WORDS = ("depth", "epoch", "dim", "dimension", "width", "batch size", "layer l")


@pytest.fixture
def ax():
    fig, axes = figure(width=3.0, height=2.5)
    yield axes[0, 0]
    plt.close(fig)


@pytest.mark.parametrize("scale", ["linear", "log"])
def test_an_integer_axis_labels_integers_only(ax, scale):
    """Depths 1-2 on a linear axis get ticks 1.2, 1.4, ... unless marked; a marked log axis
    labels no 0.9 or 1.5 either."""
    high = 2 if scale == "linear" else 30
    ax.plot([1, high], [1.0, 2.0])
    ax.set_xscale(scale)
    ax.set(xlabel="depth", ylabel="y")
    integer_axis(ax.xaxis)
    ax.figure.canvas.draw()
    if scale == "linear":
        assert any("labels" in p for p in axis_problems(ax.figure))  # the check can fail
    apply_integer_ticks(ax.figure)
    ax.figure.canvas.draw()
    assert axis_problems(ax.figure) == []
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels


def test_fixed_ticks_of_an_integer_axis_stay(ax):
    ax.plot([0, 1, 2], [1, 2, 3])
    ax.set_xticks([0, 1, 2], ["a", "b", "c"])
    integer_axis(ax.xaxis)
    apply_integer_ticks(ax.figure)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]


@pytest.mark.parametrize(("high", "scale"), [(50.0, "linear"), (500.0, "log")])
def test_an_axis_is_log_only_over_more_than_a_decade(ax, high, scale):
    """x as y: a horizontal line's x (the axes' 0-1) is not data, nor a vertical one's y."""
    ax.plot([20.0, high], [20.0, high])
    ax.axhline(30.0)
    ax.axvline(30.0)
    for which in "xy":
        decade_scale(ax, which)
    assert (ax.get_xscale(), ax.get_yscale()) == (scale, scale)


def test_a_log_axis_within_a_decade_is_a_problem(ax):
    ax.plot([1, 2], [1.0, 5.0])
    ax.set_yscale("log")
    ax.figure.canvas.draw()
    assert axis_problems(ax.figure) == ["y axis of '' is log over less than a decade"]


# --- real figures from synthetic tables -------------------------------------------------


def summary(keys: list[dict], components, rng, epoch=10) -> pd.DataFrame:
    """Experiment-table rows (matcond.stats.summary) of the product for each key and
    component, errors within a decade of 0.5 unless a key says otherwise."""
    rows = []
    for key in keys:
        for component in components:
            value = key.get("value", 0.5) * rng.uniform(0.8, 1.2)
            rows.append(
                {"matrix": "product", "epoch": epoch, "component": component, "estimate": value,
                 "ci_low": 0.8 * value, "ci_high": 1.2 * value, "mean": value, "median": value,
                 "n": 10, "n_nonfinite": 0, "n_diverged": 0, "trained_median": 10 * value,
                 "target_mean": 8.0} | {k: v for k, v in key.items() if k != "value"}
            )  # fmt: skip
    return pd.DataFrame(rows)


COMPONENTS = [*(c for c in PAPER_COMPONENTS if c != "effective_rank"), "effective_rank_t0.01"]


def fig5_tables(rng) -> dict:
    """Two epochs: a linear axis with ticks 1.2, 1.4, ... unless integer."""
    keys = [{"epoch": e} for e in (0, 1, 2)]
    rows = pd.concat([summary([k], COMPONENTS, rng, epoch=k["epoch"]) for k in keys])
    return {"exp5_dynamics": rows}


def fig1_tables(rng) -> dict:
    """The small run's dimensions 4, 8, 12: on a log-2 axis 12 had no label."""
    return {"exp1_dimension": summary([{"dim": d} for d in (4, 8, 12)], COMPONENTS, rng)}


def fig7_tables(rng) -> dict:
    """exp7's networks, layers and product, with the papers' values (their marks bring the
    papers' legend)."""
    networks = [("linear", np.nan, 1), ("deep_linear", 2, 2), ("deep_linear", 3, 3),
                ("relu_mlp", 2, 2)]  # fmt: skip
    parts = []
    for model, d, layers in networks:
        key = {"model": model, "depth": d}
        parts.append(summary([key], ["condition_number", "overall"], rng))
        for layer in range(1, layers + 1 if model != "linear" else 1):
            part = summary([key], ["condition_number"], rng)
            parts.append(part.assign(matrix=f"layer{layer}"))
    claims = load_yaml(REPO / "config" / "claims.yaml")
    return {
        "exp7_depth": pd.concat(parts, ignore_index=True),
        PAPER_VALUES: pd.DataFrame(paper_values(claims, ["exp7_depth"])),
    }


def depth_theory_tables(rng) -> dict:
    """Depths 1-2, ratios within a decade of 1 (the table's ratio panel was log)."""
    rows = []
    cells = [
        ("deep_linear", "sgd", 0.01, d, dim, init)
        for d in (1, 2)
        for dim in (16, 32)
        for init in (0.5, 1.0, 2.0)
    ]
    cells += [("deep_linear", "adam", 0.001, 3, 32, 1.0), ("relu_mlp", "sgd", 0.01, 2, 32, 1.0),
              ("deep_linear", "sgd", 0.01, 3, 32, 1.0)]  # fmt: skip
    for model, optimizer, lr, d, dim, init in cells:
        for prediction in depth.PREDICTION_STYLES:
            measured = 0.5 * d * rng.uniform(0.8, 1.2)
            ratio = rng.uniform(0.7, 1.3)
            rows.append(
                {"model": model, "depth": float(d), "dim": dim, "optimizer": optimizer, "lr": lr,
                 "init_per_sqrt_dim": init, "bottom_overlap_median": 0.2,
                 "bottom_overlap_chance": 0.1, "component": "condition_number",
                 "prediction": prediction, "prediction_label": f"({prediction[-1]}) x",
                 "measured_median": measured, "predicted_median": ratio * measured,
                 "ratio": ratio, "measured_ci_low": 0.8 * measured,
                 "measured_ci_high": 1.2 * measured, "ratio_ci_low": 0.8 * ratio,
                 "ratio_ci_high": 1.2 * ratio}
            )  # fmt: skip
    return {"depth_theory": pd.DataFrame(rows)}


def pruning_tables(rng) -> dict:
    """κ at init within a decade (300-900) and a loss from 2.4 to 1: both axes linear."""
    rows = []
    for rate in (0.0, 0.5, 0.9):
        for seed in range(2):
            for epoch in range(4):
                rows.append(
                    {"dataset": "digits", "whitened": False, "n_samples": 40, "d": 64, "k": 10,
                     "gn_samples": 4, "network": "ViT", "optimizer": "adamw", "lr": 0.01,
                     "prune_rate": rate, "seed": seed, "epoch": epoch,
                     "kappa": 300 * (1 + 2 * rate) * rng.uniform(0.9, 1.1),
                     "rank": 40 - int(20 * rate), "reliable": True,
                     "train_loss": 2.4 - 0.4 * epoch + 0.1 * rate}
                )  # fmt: skip
    return {"gn_fig13_pruning_vit": pd.DataFrame(rows)}


def held_out_tables(rng) -> dict:
    """The paper run's 12 held-out cells: d drawn at random, some a few apart (27, 31, ...),
    whose labels overlapped when every d was labelled."""
    rows = []
    for dim in (27, 31, 41, 51, 58, 60, 110, 136, 150, 175, 178, 194):
        lr, batch = rng.choice([0.005, 0.01, 0.02]), int(rng.choice([16, 64, 256]))
        for component in ("condition_number", "row_norms"):
            measured = rng.uniform(0.5, 1.5)
            rows.append(
                {"experiment": "theory_held_out", "component": component, "dim": dim, "lr": lr,
                 "batch_size": batch, "measured": measured, "ci_low": 0.8 * measured,
                 "ci_high": 1.2 * measured, "predicted": measured * rng.uniform(0.8, 1.3), "n": 100}
            )  # fmt: skip
    return {"theory": pd.DataFrame(rows)}


FIGURES = {
    "theory_held_out": (controls, held_out_tables),
    "fig5_dynamics": (paper, fig5_tables),
    "fig1_dimension": (paper, fig1_tables),
    "fig7_depth": (paper, fig7_tables),
    "depth_theory": (depth, depth_theory_tables),
    "gn_fig13_pruning_vit": (gn_training, pruning_tables),
}


def draw(name: str, tmp_path, monkeypatch, capsys):
    """Figure ``name`` drawn from its synthetic tables and saved by the real ``save``: the
    figure, and what ``save``'s checks found."""
    module, tables = FIGURES[name]
    kept = {}

    def keep(fig, png, pdf):
        kept["fig"] = fig
        style_module.save(fig, png, pdf)

    monkeypatch.setattr(module, "save", keep)
    capsys.readouterr()
    getattr(module, name)(
        tables(np.random.default_rng(0)), str(tmp_path / "f.png"), str(tmp_path / "f.pdf")
    )
    found = [line for line in capsys.readouterr().err.splitlines() if line.startswith("layout:")]
    return kept["fig"], found


@pytest.mark.parametrize("name", list(FIGURES))
def test_a_figure_keeps_the_axis_rules(name, tmp_path, monkeypatch, capsys):
    """No problem found, integer quantities' axes marked integer (their labels say which) and
    every integer axis with integer labels only."""
    fig, found = draw(name, tmp_path, monkeypatch, capsys)
    assert found == []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            label = axis.label.get_text().lower()
            if any(word in label for word in INTEGER_WORDS) and "/" not in label:  # no ratio
                assert is_integer_axis(axis), (name, label)
            if is_integer_axis(axis):
                for tick in ax.get_xticklabels() if axis is ax.xaxis else ax.get_yticklabels():
                    text = tick.get_text().replace("\u2212", "-")
                    assert not text or text.lstrip("-").isdigit() or "^" in text, (name, text)
            if axis.get_scale() == "log":
                assert label  # and axis_problems found no log axis within a decade


def test_every_dimension_of_fig1_is_labelled(tmp_path, monkeypatch, capsys):
    fig, _ = draw("fig1_dimension", tmp_path, monkeypatch, capsys)
    for ax in (a for a in fig.axes if a.get_visible()):
        assert {t.get_text() for t in ax.get_xticklabels()} >= {"4", "8", "12"}


def test_fig7_has_one_legend_for_all_panels(tmp_path, monkeypatch, capsys):
    """The matrices and the papers' marks in one legend below the panels, none in a panel."""
    fig, found = draw("fig7_depth", tmp_path, monkeypatch, capsys)
    assert found == []
    assert [ax.get_legend() for ax in fig.axes] == [None] * len(fig.axes)
    assert len(fig.legends) == 1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "target (product)" in labels and "paper's value (its mean)" in labels


def test_pruning_axes_within_a_decade_are_linear(tmp_path, monkeypatch, capsys):
    fig, _ = draw("gn_fig13_pruning_vit", tmp_path, monkeypatch, capsys)
    left, right = fig.axes[:2]
    assert (left.get_yscale(), right.get_yscale()) == ("linear", "linear")


def test_depth_theory_says_what_each_line_is(tmp_path, monkeypatch, capsys):
    fig, _ = draw("depth_theory", tmp_path, monkeypatch, capsys)
    texts = [t.get_text() for legend in filter(None, (a.get_legend() for a in fig.axes))
             for t in legend.get_texts()]  # fmt: skip
    texts += [a.get_title() for a in fig.axes]
    assert set(depth.PREDICTION_LABELS.values()) <= set(texts)
    assert not [t for t in texts if t[:3] in ("(a)", "(b)", "(m)", "(c)")], texts


@pytest.mark.parametrize(("top", "log"), [(0.95, False), (9.5, True)])
def test_a_heatmaps_colours_are_log_only_over_a_decade(top, log):
    """ctrl_spectral_reg's κ errors 0.1-0.95 had a log colour bar without a label."""
    fig, ((ax,),) = figure(1)
    values = pd.DataFrame([[0.1, 0.5], [0.3, top]], index=[0.1, 1.0], columns=[1.0, 10.0])
    controls._heatmap(ax, values, ".2f", "t", log=True, cmap="viridis", label="kappa error")
    image = ax.get_images()[0]
    assert isinstance(image.norm, mcolors.LogNorm) is log
    assert log or image.norm.vmin == 0.0
    plt.close(fig)
