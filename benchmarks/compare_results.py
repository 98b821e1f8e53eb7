"""Reproducibility: two `results/` trees (e.g. a run from empty and the tree docs/paper-run/
was written from) compared byte for byte, every file but the logs, the benchmarks and the
set-aside damaged files.

    python benchmarks/compare_results.py results other/results

Prints the number of files in each, in common, and how many of those differ (with the first
few, by top-level folder); exits 1 if any does.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

SKIPPED = ("logs", "benchmarks", "damaged")  # what differs from run to run by design


def files(root: Path) -> dict[str, Path]:
    """Every compared file under ``root``, by its path relative to it."""
    return {
        str(path.relative_to(root)): path
        for path in root.rglob("*")
        if path.is_file() and path.relative_to(root).parts[0] not in SKIPPED
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    args = parser.parse_args()
    first, second = files(args.first), files(args.second)
    common = sorted(set(first) & set(second))
    differ = [name for name in common if first[name].read_bytes() != second[name].read_bytes()]
    print(f"{len(first)} files vs {len(second)}; {len(common)} in common; {len(differ)} differ")
    for label, names in (("only in the first", set(first) - set(second)),
                         ("only in the second", set(second) - set(first)),
                         ("differ", differ)):  # fmt: skip
        folders = Counter(name.split("/")[0] for name in names)
        if folders:
            print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in folders.most_common()))
    for name in differ[:10]:
        print(f"  {name}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
