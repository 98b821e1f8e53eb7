"""How figures draw a statistic (matcond.figures.style): the axis each error gets, points
with intervals instead of bars, seeds' values where an interval would mean little, and the
papers' values marked where a figure draws the point they are about."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from support import REPO

from matcond.claims.check import paper_values
from matcond.claims.evaluate import VERDICTS
from matcond.core.config import load_yaml
from matcond.figures import paper as paper_figures
from matcond.figures.controls import VERDICT_COLORS
from matcond.figures.marks import OURS_BAND_LABEL, mark_paper, paper_rows
from matcond.figures.style import (
    MIN_INTERVAL_N,
    PAPER_VALUES,
    error_axis,
    figure,
    interval_points,
    median_line,
)
from matcond.jobs.plot import with_accepted_values
from matcond.stats.heavy_tail import accepted_values

CLAIMS = load_yaml(REPO / "config" / "claims.yaml")


@pytest.fixture
def ax():
    fig, axes = figure(width=3.0, height=2.5)
    yield axes[0, 0]
    plt.close(fig)


@pytest.mark.parametrize(
    ("values", "scale", "bottom"),
    [
        ([0.124, 0.134], "linear", 0.0),  # a 7 % drift, drawn from 0
        ([0.01, 0.5], "log", None),  # more than a decade
        ([0.0, 1e-3, 0.5], "symlog", 0.0),  # decades and an exact zero
        ([0.0, 1e-3], "linear", 0.0),  # zeros and values within a decade of each other
    ],
)
def test_an_error_axis_is_log_only_where_the_values_span_decades(ax, values, scale, bottom):
    ax.plot(range(len(values)), values)
    error_axis(ax)
    assert ax.get_yscale() == scale
    if bottom is not None:
        assert ax.get_ylim()[0] == bottom
        assert ax.get_ylim()[1] >= max(values)


def test_the_axis_rule_counts_bands_and_whiskers_not_only_lines(ax):
    """A line within a decade whose interval reaches two decades lower gets a log axis."""
    ax.plot([0, 1], [0.1, 0.2])
    ax.fill_between([0, 1], [0.001, 0.002], [0.3, 0.4])
    error_axis(ax)
    assert ax.get_yscale() == "log"


def rows_of(estimates: dict) -> pd.DataFrame:
    """An experiment table's rows: (component, arm) -> estimate, interval ± 10 %."""
    return pd.DataFrame(
        [
            {"component": c, "arm": a, "estimate": v, "ci_low": 0.9 * v, "ci_high": 1.1 * v}
            for (c, a), v in estimates.items()
        ]
    )


def test_interval_points_draw_points_with_whiskers_side_by_side_and_no_bars(ax):
    rows = rows_of({("kappa", "a"): 1.0, ("kappa", "b"): 2.0, ("norms", "a"): 3.0})
    drawn = interval_points(ax, rows, "component", {"kappa": "κ", "norms": "norms"}, hue="arm")
    assert not ax.patches  # no bar
    where = drawn.set_index(["component", "arm"])["position"]
    assert where["kappa", "a"] < 0 < where["kappa", "b"] < 0.5  # side by side around tick 0
    assert where["norms", "a"] == pytest.approx(where["kappa", "a"] + 1)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["κ", "norms"]
    # each whisker spans the row's interval
    segments = np.concatenate([np.asarray(c.get_segments()) for c in ax.collections])
    spans = sorted((round(s[0, 1], 6), round(s[1, 1], 6)) for s in segments)
    assert spans == [(0.9, 1.1), (1.8, 2.2), (2.7, 3.3)]


def seeds_table(n_seeds: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        [
            {"depth": d, "seed": s, "kappa": rng.uniform(1, 2)}
            for d in (1, 2)
            for s in range(n_seeds)
        ]
    )


@pytest.mark.parametrize("n_seeds", [MIN_INTERVAL_N - 2, MIN_INTERVAL_N])
def test_median_line_draws_an_interval_from_five_seeds_and_the_seeds_below(ax, n_seeds):
    median_line(ax, seeds_table(n_seeds), "depth", "kappa", "C0", "κ")
    dots = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
    bands = [
        p.vertices
        for c in ax.collections
        if not isinstance(c, PathCollection)
        for p in c.get_paths()
    ]
    has_band = any(len(v) and np.isfinite(v).all() for v in bands)
    if n_seeds < MIN_INTERVAL_N:
        assert (dots, has_band) == (2 * n_seeds, False)  # every seed's value, no interval
    else:
        assert (dots, has_band) == (0, True)


def paper(tables: list[str]) -> pd.DataFrame:
    """The papers' values of config/claims.yaml on ``tables``, as the plot job passes them."""
    return pd.DataFrame(paper_values(CLAIMS, tables))


def test_paper_values_are_the_papers_value_claims_with_the_arms_defaults():
    values = paper(["exp7_depth", "exp1_dimension"]).set_index("source", append=True)
    marks = {
        (row.table, row.component, row.low, row.high, row.field) for row in values.itertuples()
    }
    assert ("exp7_depth", "condition_number", 13167, 13167, "error") in marks
    assert ("exp7_depth", "condition_number", 1000, 1600, "trained") in marks  # a range
    assert ("exp1_dimension", "spectral_gap", 0.03, 0.13, "error") in marks
    assert not any(low == 0.31 for _, _, low, _, _ in marks)  # a std (exp1_kappa_d32_std)
    assert not any(low == 129.3 for _, _, low, _, _ in marks)  # a ratio (exp1_kappa_growth)
    assert set(values["matrix"]) >= {"product", "layer1"}  # no matrix: the product
    sources = set(values.index.get_level_values("source"))
    assert sources == {"paper", "slides", "peer review"}


def test_own_checks_and_infinite_ranges_mark_nothing():
    claims = {
        "claims": [
            {"claim_id": "a", "where": "control", "paper_value": 1.0, "table": "t",
             "filter": {"component": "overall"}},
            {"claim_id": "b", "where": "§1", "paper_value": "theory", "table": "t",
             "filter": {"component": "overall"}},
            {"claim_id": "c", "where": "§1", "paper_value": [1.0, float("inf")], "table": "t",
             "filter": {"component": "overall"}},
        ]
    }  # fmt: skip
    assert paper_values(claims, ["t"]) == []


def drawn_rows() -> pd.DataFrame:
    """exp7-like rows at their drawn x: one per network, two epochs."""
    return pd.DataFrame(
        [
            {"component": "condition_number", "matrix": "product", "model": m, "depth": d,
             "epoch": e, "x": x}
            for x, (m, d) in enumerate([("linear", np.nan), ("deep_linear", 2), ("deep_linear", 3)])
            for e in (10, 20)
        ]
    )  # fmt: skip


def marks_of(ax) -> list[tuple[float, float, float]]:
    """(x, low, high) of every paper's mark drawn on ``ax``."""
    return [
        (line.get_xdata()[0], *line.get_ydata()) for line in ax.lines if line.get_color() == "black"
    ]


def test_a_papers_value_is_marked_at_the_point_its_filter_selects(ax):
    values = paper_rows({PAPER_VALUES: paper(["exp7_depth"])}, ["exp7_depth"])
    assert mark_paper(ax, values, drawn_rows(), "x")
    marks = sorted(marks_of(ax))
    # the single matrix (no depth in its filter), depth 2 and depth 3, at their x
    assert marks == [(0, 0.24, 0.24), (1, 653, 653), (2, 13167, 13167)]


def test_a_value_whose_point_is_not_drawn_or_ambiguous_is_not_marked(ax):
    values = paper_rows({PAPER_VALUES: paper(["exp7_depth"])}, ["exp7_depth"])
    rows = drawn_rows()
    only_deep = rows[rows["model"] == "deep_linear"]
    mark_paper(ax, values, only_deep, "x")
    assert sorted(m[0] for m in marks_of(ax)) == [1, 2]
    # the single matrix drawn twice (two optimizers the filter does not name): no mark
    linear = rows[rows["model"] == "linear"]
    twice = pd.concat([linear.assign(optimizer="sgd"), linear.assign(optimizer="adam", x=5)])
    fig, axes = figure(width=3.0, height=2.5)
    assert not mark_paper(axes[0, 0], values, twice, "x")
    assert marks_of(axes[0, 0]) == []
    plt.close(fig)


def test_no_epoch_in_a_filter_is_the_last_drawn_epoch(ax):
    rows = drawn_rows().assign(x=lambda r: r["epoch"])
    rows = rows[rows["model"] == "linear"]
    values = paper_rows({PAPER_VALUES: paper(["exp7_depth"])}, ["exp7_depth"])
    mark_paper(ax, values, rows, "x")
    assert marks_of(ax) == [(20, 0.24, 0.24)]


def test_a_papers_mean_carries_its_claim_pool_and_number_of_trials():
    """exp1's means name pool_exp1_dimension and the paper's 15 trials (config/claims.yaml's
    heavy_tail; the review's claims its own 10); a GN paper's value gets no band (one value
    per seed, no pool)."""
    marks = paper_values(CLAIMS, ["exp1_dimension", "gn_fig2_depth"])
    exp1 = [m for m in marks if m["table"] == "exp1_dimension"]
    assert exp1 and all(m["pool"] == "pool_exp1_dimension" for m in exp1)
    assert {(m["source"], m["paper_n"]) for m in exp1} == {
        ("paper", 15),
        ("slides", 15),
        ("peer review", 10),
    }
    assert all(m["claim"]["table"] == "exp1_dimension" for m in exp1)
    gn = [m for m in marks if m["table"] == "gn_fig2_depth"]
    assert gn and not any("claim" in m for m in gn)


def test_the_grey_bar_is_what_the_verdict_accepts(ax):
    """The plot job adds to a paper's mean the values the heavy-tail verdict on 15-trial means
    of its pool's trials accepts (the verdict's own draws); mark_paper draws it behind the star,
    with its legend entry. A mark whose trials are not among the inputs gets no bar."""
    errors = np.random.default_rng(1).pareto(1.5, 200)
    table = pd.DataFrame(
        {"dim": 8, "seed": range(200), "matrix": "product", "epoch": 10,
         "component": "condition_number", "trained": 1.0, "target": 1.0, "error": errors,
         "diverged": False}
    )  # fmt: skip
    claim = {"claim_id": "c", "where": "§1", "paper_value": 0.5, "table": "t",
             "filter": {"component": "condition_number"}}  # fmt: skip
    mark = {"table": "t", "source": "paper", "low": 0.5, "high": 0.5, "field": "error",
            "matrix": "product", "component": "condition_number"}  # fmt: skip
    marks = pd.DataFrame(
        [mark | {"claim": claim, "pool": "t", "paper_n": 15}, mark | {"table": "other"}]
    )
    banded = with_accepted_values(marks, {"t_per_trial": table})
    expected = accepted_values([errors], np.mean, 15)
    assert tuple(banded.loc[0, ["ours_low", "ours_high"]]) == pytest.approx(expected, rel=1e-12)
    assert banded.loc[1, ["ours_low", "ours_high"]].isna().all()
    drawn = pd.DataFrame([{"component": "condition_number", "matrix": "product", "x": 3}])
    assert mark_paper(ax, banded.iloc[:1], drawn, "x")
    bars = [line for line in ax.lines if line.get_label() == OURS_BAND_LABEL]
    assert len(bars) == 1 and tuple(bars[0].get_ydata()) == pytest.approx(expected)


def test_fig8_draws_the_papers_ratio_of_means_and_the_laws_ratio_of_medians(monkeypatch):
    """The paper's cond/norm ratios (9.2x, 440x) are ratios of means; the law that the
    condition-number error exceeds the norm error is judged on the ratio of medians: the
    right axis draws both, not a median over a mean."""
    drawn = {}
    monkeypatch.setattr(paper_figures, "save", lambda fig, png, pdf: drawn.update(fig=fig))

    def summary(x: str, values) -> pd.DataFrame:
        rows = []
        for i, value in enumerate(values):
            for component, mean, median in [
                ("condition_number", 8.0 + i, 2.0),
                ("row_norms", 2.0, 1.0),
            ]:
                rows.append({x: value, "component": component, "matrix": "product", "epoch": 5,
                             "mean": mean, "median": median, "estimate": median,
                             "ci_low": 0.5 * median, "ci_high": 2 * median,
                             "n": 10, "n_nonfinite": 0, "n_diverged": 0})  # fmt: skip
        return pd.DataFrame(rows)

    tables = {
        "exp8_lr": summary("lr", [0.001, 0.01]),
        "exp8_wd": summary("weight_decay", [0.0, 0.01]),
    }
    paper_figures.fig8_sensitivity(tables, "unused.png", "unused.pdf")
    twins = [ax for ax in drawn["fig"].axes if ax.get_ylabel() == "kappa / norm error ratio"]
    assert len(twins) == 2
    for ax in twins:
        ratios = {line.get_label(): list(line.get_ydata()) for line in ax.lines}
        assert ratios == {
            "mean kappa / mean norm error (the paper's ratio)": [4.0, 4.5],
            "median kappa / median norm error (the law's)": [2.0, 2.0],
        }
    plt.close(drawn["fig"])


def test_the_readings_figure_has_a_colour_for_every_verdict():
    """A verdict the claims table can give that the readings figure has no colour for stops
    the plot job (it did for *too few trials*)."""
    assert set(VERDICT_COLORS) == set(VERDICTS)


def test_the_readings_figure_hatches_a_reading_that_does_not_read_a_claim(monkeypatch):
    """Readings of different experiments have different arms (exp7 reads its row scale only):
    a claim's cell under another experiment's arm is hatched, "not read", not a verdict's
    solid colour and not the plain white of "not comparable" (the figure once stopped the
    plot job there)."""
    from matcond.figures import controls

    drawn = {}
    monkeypatch.setattr(controls, "save", lambda fig, png, pdf: drawn.update(fig=fig))
    rows = [("exp1_a", "init=gaussian, init_scale=0.02", "reproduced", 0.13),
            ("exp1_a", "init=gaussian, init_scale=0.01", "inconclusive", 0.2),
            ("exp7_b", "row_log_std=0.25", "not reproduced", 5.0)]  # fmt: skip
    table = pd.DataFrame(rows, columns=["claim_id", "arm", "verdict", "measured"])
    controls.readings({"readings": table}, "unused.png", "unused.pdf")
    image = drawn["fig"].axes[0].images[0].get_array()
    names = list(VERDICT_COLORS)
    assert image[0, 0] == names.index("reproduced") and image[1, 2] == names.index("not reproduced")
    assert np.ma.is_masked(image[0, 2]) or np.isnan(image[0, 2])
    assert np.ma.is_masked(image[1, 0]) or np.isnan(image[1, 0])
    legend = [t.get_text() for t in drawn["fig"].axes[0].get_legend().get_texts()]
    assert legend[-1] == "not read"  # hatched, told apart from a white "not comparable"
    assert (
        drawn["fig"].axes[0].get_legend().get_patches()[-1].get_hatch() == controls.NOT_READ_HATCH
    )
    hatched = {
        (round(r.get_x() + 0.5), round(r.get_y() + 0.5))  # (column, row) of each hatched cell
        for r in drawn["fig"].axes[0].patches
        if r.get_hatch() == controls.NOT_READ_HATCH
    }
    assert hatched == {(2, 0), (0, 1), (1, 1)}  # exactly the cells no reading reads
    plt.close(drawn["fig"])
