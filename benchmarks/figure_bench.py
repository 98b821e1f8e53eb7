"""CPU time of drawing and saving every catalogued figure of a finished run, in one process.

Reads the run's tables (``results/tables``, ``results/per_trial``), draws each figure the run
drew with an empty table of papers' values (the plot job's work less its reading of
``params``) and writes its PNG and PDF through ``matcond.figures.style.save`` to a temporary
directory; prints the CPU seconds per figure (the slowest first), their median and total.

``--placeholder`` draws each figure a second time, alternating which goes first, with the
layout engine that ``save`` removes replaced by matplotlib's placeholder (``"none"``, as
before 2026-11-28), and prints both totals and their ratio: the cost of ``savefig``'s extra
draw, measured in one process so that the machine's drift cancels.

    python benchmarks/figure_bench.py --run small-run [--top 10] [--placeholder]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("agg")

from matplotlib.figure import Figure  # noqa: E402

from matcond.figures.drawing import drawing, finished_tables  # noqa: E402
from matcond.figures.style import warm_up  # noqa: E402


@contextlib.contextmanager
def placeholder_engine():
    """``Figure.set_layout_engine(None)`` as ``set_layout_engine("none")``."""
    original = Figure.set_layout_engine

    def set_layout_engine(self, layout=None, **kwargs):
        return original(self, "none" if layout is None else layout, **kwargs)

    Figure.set_layout_engine = set_layout_engine
    try:
        yield
    finally:
        Figure.set_layout_engine = original


def cpu_seconds(name: str, tables: dict, out: str, placeholder: bool) -> float:
    """CPU seconds of drawing and saving figure ``name`` into ``out``."""
    context = placeholder_engine() if placeholder else contextlib.nullcontext()
    with context:
        start = time.process_time()
        drawing(name)(tables, f"{out}/{name}.png", f"{out}/{name}.pdf")
        return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished run's directory")
    parser.add_argument("--top", type=int, default=10, help="slowest figures to list")
    parser.add_argument("--placeholder", action="store_true", help="compare (see above)")
    args = parser.parse_args()
    results = args.run / "results"
    names = sorted(p.stem for p in (results / "figures").glob("*.png"))
    jobs = [(name, finished_tables(results, name)) for name in names]
    warm_up()  # as the job server does before it forks a plot job
    seconds, placeholder = {}, {}
    with tempfile.TemporaryDirectory() as out:
        for i, (name, tables) in enumerate(jobs):
            for first in [i % 2 == 1, i % 2 == 0] if args.placeholder else [False]:
                if first:
                    placeholder[name] = cpu_seconds(name, tables, out, placeholder=True)
                else:
                    seconds[name] = cpu_seconds(name, tables, out, placeholder=False)
    for name in sorted(seconds, key=seconds.get, reverse=True)[: args.top]:
        print(f"{seconds[name]:6.2f} s  {name}")
    values = list(seconds.values())
    print(
        f"{len(values)} figures: median {statistics.median(values):.2f} CPU s, "
        f"total {sum(values):.1f} CPU s"
    )
    if placeholder:
        total = sum(placeholder.values())
        print(
            f"with the placeholder engine: total {total:.1f} CPU s; "
            f"ratio now / placeholder {sum(values) / total:.3f}"
        )


if __name__ == "__main__":
    main()
