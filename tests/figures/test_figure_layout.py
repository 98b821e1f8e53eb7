"""The layout check every saved figure goes through (matcond.figures.layout.layout_problems),
and how ``save`` writes the PNG from that check's draw."""

import matplotlib.pyplot as plt
import numpy as np
import PIL.Image

from matcond.figures.layout import _drawn_ticklabels, layout_problems
from matcond.figures.style import DPI, error_axis, figure, save


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
    """error_axis on data over ~1.5 decades: only 2 and 5 x 10^k are labelled, which do not
    collide; within one decade the axis is linear from 0 and labelled too."""
    for low, high in ((0.125, 0.134), (0.015, 0.4)):
        fig, axes = figure(width=3.0, height=2.5)
        ax = axes[0, 0]
        ax.plot([1, 2, 3], [low, (low + high) / 2, high])
        ax.set(xlabel="x", title="t")
        error_axis(ax)
        assert ax.get_yscale() == ("log" if high > 10 * low else "linear")
        assert layout_problems(fig) == [], (low, high)
        plt.close(fig)


def test_a_tick_decades_outside_a_log_axis_is_not_drawn():
    """A log axis from 125 to 1.2e11 does not draw its 10^1 tick's label: the check compares
    on the log scale (a linear slack of 1e-9 of the span is 120, which took 10 in)."""
    fig, axes = figure(width=3.0, height=2.5)
    ax = axes[0, 0]
    ax.semilogy([0, 1], [125.0, 1.2e11])
    ax.set_ylim(125.0, 1.2e11)
    labelled(ax)
    fig.canvas.draw()
    drawn = {t.get_text() for t in _drawn_ticklabels(ax.yaxis) if t.get_text()}
    assert "$\\mathdefault{10^{1}}$" not in drawn
    assert "$\\mathdefault{10^{3}}$" in drawn
    plt.close(fig)


def drawn_twice(tmp_path, outside: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """The same figure written by ``save`` (the layout draw's image, cut out) and by a fresh
    ``savefig`` draw with the same box, as grey images; and the canvas width in pixels."""
    images = []
    for name in ("save", "reference"):
        fig, axes = figure(ncols=2, width=3.0, height=2.0)
        for ax in axes[0]:
            ax.semilogy([1, 2, 3], [1e-3, 1e-1, 10.0], label="a line")
            labelled(ax)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        if outside:
            fig.text(1.05, 0.5, "beyond the canvas")
        width = round(fig.get_figwidth() * fig.dpi)
        path = tmp_path / f"{name}.png"
        if name == "save":
            save(fig, str(path), str(tmp_path / "save.pdf"))
        else:
            layout_problems(fig)
            tight = fig.get_tightbbox(fig.canvas.get_renderer())
            fig.set_layout_engine("none")
            fig.savefig(path, dpi=DPI, bbox_inches=tight.padded(plt.rcParams["savefig.pad_inches"]))
            plt.close(fig)
        images.append(np.asarray(PIL.Image.open(path).convert("L"), dtype=int))
    return images[0], images[1], width


def test_the_png_is_the_layout_draw_cut_to_the_tight_box(tmp_path):
    saved, reference, _ = drawn_twice(tmp_path, outside=False)
    # the same box, up to the rounding of its edges to whole pixels
    assert abs(saved.shape[0] - reference.shape[0]) <= 1
    assert abs(saved.shape[1] - reference.shape[1]) <= 1
    rows, cols = min(saved.shape[0], reference.shape[0]), min(saved.shape[1], reference.shape[1])
    # the same picture, up to a sub-pixel shift (antialiased edges)
    best = min(
        (
            np.abs(
                saved[dy : dy + rows - 1, dx : dx + cols - 1] - reference[: rows - 1, : cols - 1]
            )
            > 64
        ).mean()
        for dy in (0, 1)
        for dx in (0, 1)
    )
    assert best < 0.02
    assert (tmp_path / "save.pdf").read_bytes().startswith(b"%PDF")


def test_an_artist_beyond_the_canvas_is_in_the_png(tmp_path):
    saved, reference, width = drawn_twice(tmp_path, outside=True)
    assert saved.shape[1] > width + 50  # the text beyond the right edge is in
    assert saved.shape == reference.shape and np.array_equal(saved, reference)


def test_save_draws_the_figure_twice_once_per_format(tmp_path, monkeypatch):
    """The layout check's Agg draw gives the PNG; the PDF is the only other draw (a layout
    engine left on the figure, even a placeholder, makes ``savefig`` draw it once more
    before it writes)."""
    fig, axes = figure(ncols=2, width=3.0, height=2.0)
    for ax in axes[0]:
        ax.semilogy([1, 2, 3], [1e-3, 1e-1, 10.0], label="a line")
        labelled(ax)
    draws = []
    original = type(fig).draw
    monkeypatch.setattr(type(fig), "draw", lambda self, r: draws.append(r) or original(self, r))
    save(fig, str(tmp_path / "f.png"), str(tmp_path / "f.pdf"))
    assert [type(r).__name__ for r in draws] == ["RendererAgg", "MixedModeRenderer"]  # PDF
