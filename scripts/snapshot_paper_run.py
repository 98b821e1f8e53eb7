"""Keep a finished paper run's results in the repository, so that they can be read without a
run: its claims table and pages, the tables the docs quote, and every figure.

    python scripts/snapshot_paper_run.py RUN_DIR [--to docs/paper-run]

RUN_DIR is the directory the paper config ran in (it holds ``results/``). Copies the files of
:data:`FILES` as they are and each figure of ``results/figures/`` as a PNG of at most
:data:`COLOURS` colours (about a quarter of the bytes; the PDFs stay in the run). Figures the
run no longer draws are removed from the snapshot. The docs site shows the figures on
``paper-figures.md`` (docs/hooks/paper_run_page.py) and the claims page as it is.
"""

import argparse
import shutil
import sys
from pathlib import Path

from PIL import Image

# results/<source> -> <snapshot>/<name>
FILES = {
    "claims.csv": "claims.csv",
    "claims.html": "claims.html",
    "summary.md": "summary.md",
    "readings.md": "readings.md",
    "tables/calibration.csv": "calibration.csv",
    "tables/depth_theory.csv": "depth_theory.csv",
}
COLOURS = 64


def small_png(source: Path, target: Path, colours: int = COLOURS) -> None:
    """``source`` written to ``target`` with a palette of at most ``colours`` colours."""
    with Image.open(source) as image:
        image.convert("RGB").quantize(colors=colours).save(target, optimize=True)


def snapshot(run: Path, to: Path) -> list[str]:
    """Copy the run's files and figures into ``to``; the names written, in order."""
    results = run / "results"
    missing = [s for s in FILES if not (results / s).is_file()]
    if missing:
        raise FileNotFoundError(f"{results} lacks {', '.join(missing)}: is the run finished?")
    figures = sorted((results / "figures").glob("*.png"))
    (to / "figures").mkdir(parents=True, exist_ok=True)
    for source, name in FILES.items():
        shutil.copyfile(results / source, to / name)
    for stale in (to / "figures").glob("*.png"):
        if not (results / "figures" / stale.name).exists():
            stale.unlink()
    for figure in figures:
        small_png(figure, to / "figures" / figure.name)
    return [*FILES.values(), *(f"figures/{f.name}" for f in figures)]


def main(argv: list[str] | None = None) -> int:
    """The command line: 0 once written, 1 with one line where the run is not finished."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the directory the paper config ran in")
    parser.add_argument("--to", type=Path, default=Path("docs") / "paper-run")
    args = parser.parse_args(argv)
    try:
        written = snapshot(args.run, args.to)
    except FileNotFoundError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    print(f"{len(written)} files written to {args.to}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
