"""The layout check every saved figure goes through (matcond.figures.style.layout_problems)."""

import matplotlib.pyplot as plt
import numpy as np

from matcond.figures.style import error_axis, figure, layout_problems


def labelled(ax, title: str = "t") -> None:
    ax.set(xlabel="x", ylabel="y", title=title)


def test_a_clean_figure_has_no_problem():
    fig, axes = figure(ncols=2)
    for ax in axes[0]:
        ax.plot([0, 1], [0, 1], label="a line")
        labelled(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    assert layout_problems(fig) == []
    plt.close(fig)


def test_overlapping_texts_are_found():
    fig, axes = figure()
    ax = axes[0, 0]
    ax.plot([0, 1], [0, 1])
    labelled(ax)
    ax.text(0.5, 0.5, "first words", transform=ax.transAxes)
    ax.text(0.5, 0.5, "second words", transform=ax.transAxes)
    assert layout_problems(fig) == ["text 'first words' overlaps 'second words'"]
    plt.close(fig)


def test_crowded_tick_labels_are_found():
    fig, axes = figure(width=2.0)
    ax = axes[0, 0]
    ticks = np.arange(12)
    ax.bar(ticks, ticks + 1)
    ax.set_xticks(ticks, [f"component {i}" for i in ticks])
    labelled(ax)
    assert any(p.startswith("text 'component") for p in layout_problems(fig))
    plt.close(fig)


def test_a_legend_over_the_data_is_found():
    fig, axes = figure()
    ax = axes[0, 0]
    x = np.linspace(0, 1, 200)
    for k in range(4):
        ax.plot(x, x + k / 10, label=f"line {k}")
    labelled(ax, "lines")
    ax.legend(loc="center")
    assert layout_problems(fig) == ["legend of 'lines' covers data"]
    plt.close(fig)


def test_a_legend_over_bars_is_found():
    fig, axes = figure()
    ax = axes[0, 0]
    ax.bar(np.arange(5), np.full(5, 10.0), label="bars")
    labelled(ax, "bars")
    ax.legend(loc="center")
    assert layout_problems(fig) == ["legend of 'bars' covers data"]
    plt.close(fig)


def test_an_unlabelled_axis_is_found_unless_its_ticks_are_hidden_too():
    fig, axes = figure(nrows=2)
    for ax in axes[:, 0]:
        ax.plot([0, 1], [0, 1])
        ax.set_ylabel("y")
    axes[1, 0].set_xlabel("x")
    axes[0, 0].set_title("top")
    axes[1, 0].set_title("bottom")
    assert layout_problems(fig) == ["x axis of 'top' has no label"]
    axes[0, 0].tick_params(labelbottom=False)
    assert layout_problems(fig) == []
    plt.close(fig)


def test_rotated_tick_labels_are_compared_by_their_rotated_boxes():
    """Labels at 30 degrees whose axis-aligned extents overlap but whose text does not are
    fine; packed tightly enough to touch, they are found."""
    for width, crowded in ((7.0, False), (1.5, True)):
        fig, axes = figure(width=width)
        ax = axes[0, 0]
        ticks = np.arange(6)
        ax.bar(ticks, ticks + 1)
        ax.set_xticks(ticks, [f"long component {i}" for i in ticks], rotation=30, ha="right")
        labelled(ax)
        found = [p for p in layout_problems(fig) if p.startswith("text 'long")]
        assert bool(found) == crowded, found
        plt.close(fig)


def test_a_log_axis_keeps_tick_labels_and_thins_crowded_minor_ones():
    """error_axis on data within one decade keeps matplotlib's minor labels (no major tick
    shows); over ~1.5 decades only 2 and 5 x 10^k are labelled, which do not collide."""
    for low, high in ((0.125, 0.134), (0.015, 0.4)):
        fig, axes = figure(width=3.0, height=2.5)
        ax = axes[0, 0]
        ax.plot([1, 2, 3], [low, (low + high) / 2, high])
        ax.set(xlabel="x", title="t")
        error_axis(ax)
        assert layout_problems(fig) == [], (low, high)
        plt.close(fig)
