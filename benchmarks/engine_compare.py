"""Two training engines on the same trials: does a change to the training loop change results?

``--out FILE`` trains, with the checkout it runs from, the same seeds of each class
(train_floor.CLASSES, the paper config's settings) and writes each trial's final row-norm,
condition-number and overall errors of the product. ``--compare A B`` reads two such files
(say, one written at the commit before a change and one after) and prints per class and
component: trial-by-trial relative differences (median, max; the two engines draw the same
data from the same streams, so a pure change of arithmetic leaves float32 rounding), the two
means, their difference in units of the Monte-Carlo standard error of a mean of n trials
(the criterion "equal within Monte-Carlo error"), the paired z of the difference (which sees
a rounding bias far below that error) and the two-sample KS p-value.

    git worktree add /tmp/before <commit>
    PYTHONPATH=/tmp/before/src python benchmarks/engine_compare.py --out before.parquet
    python benchmarks/engine_compare.py --out after.parquet
    python benchmarks/engine_compare.py --compare before.parquet after.parquet
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats
import torch
from threadpoolctl import threadpool_limits

from matcond.condition_number.batching import seeds_side_by_side
from matcond.condition_number.run import run_trials

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_bench import paper_defaults  # noqa: E402
from train_floor import CLASSES  # noqa: E402

COMPONENTS = ("row_norms", "condition_number", "overall")
SEEDS = {"d32": 200, "d128": 96, "d256-bs16": 64, "d512": 24, "d512-momentum": 24}


def trained(seeds: dict[str, int]) -> pd.DataFrame:
    """The final errors of ``seeds[c]`` trials of each class ``c``, one row per trial."""
    base, rows = paper_defaults(), []
    for name, count in seeds.items():
        spec = {**base, **CLASSES[name]}
        side = seeds_side_by_side(spec["dim"], "cpu")
        specs = [json.loads(json.dumps({**spec, "seed": s}, sort_keys=True)) for s in range(count)]
        for first in range(0, count, side):
            table, _ = run_trials(specs[first : first + side], torch.device("cpu"))
            final = table[(table.matrix == "product") & (table.epoch == spec["epochs"])]
            wide = final.pivot(index="seed", columns="component", values="error")
            rows += [
                {"class": name, "seed": s, **wide.loc[s, list(COMPONENTS)]} for s in wide.index
            ]
    return pd.DataFrame(rows)


def compare(before: pd.DataFrame, after: pd.DataFrame) -> None:
    """Print the comparison of the module docstring."""
    both = before.merge(after, on=["class", "seed"], suffixes=("_a", "_b"))
    print(
        "class          component          n  median |rel diff|  max |rel diff|"
        "      mean A      mean B  diff/MC SE  paired z    KS p"
    )
    for name, group in both.groupby("class", sort=False):
        for c in COMPONENTS:
            a, b = group[f"{c}_a"].to_numpy(), group[f"{c}_b"].to_numpy()
            rel = np.abs(a - b) / np.abs(a)
            diff = b.mean() - a.mean()
            mc_se = np.std(a, ddof=1) / np.sqrt(len(a))
            paired_se = np.std(b - a, ddof=1) / np.sqrt(len(a))
            paired_z = diff / paired_se if paired_se > 0 else 0.0
            ks = scipy.stats.ks_2samp(a, b, method="asymp").pvalue
            print(
                f"{name:<14} {c:<16} {len(a):>4} {np.median(rel):>17.2e} {rel.max():>15.2e}"
                f" {a.mean():>11.4g} {b.mean():>11.4g} {diff / mc_se:>11.2e}"
                f" {paired_z:>9.2f} {ks:>7.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="train and write the trials' errors here")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.out:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            trained(SEEDS).to_parquet(args.out)
    if args.compare:
        compare(*(pd.read_parquet(path) for path in args.compare))


if __name__ == "__main__":
    main()
