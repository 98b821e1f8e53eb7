"""How far the verdicts hold on other draws: the paper config with every condition-number
trial on other seeds, and two claims tables compared.

A GPU trial draws its data from CUDA's generator, so it is another draw than the CPU trial of
its seed (docs/slurm-and-gpu.md); a run on a GPU can then move a verdict that sits near its
rule's threshold. This measures how many move on a CPU when every trial is drawn anew, the
noise against which a GPU run's moved verdicts are read.

    python benchmarks/reseeded.py config 1000000 > reseeded.yaml
    snakemake --cores all --configfile reseeded.yaml --directory reseeded
    python benchmarks/reseeded.py compare docs/paper-run/claims.csv reseeded/results/claims.csv

``config OFFSET`` writes the config (``--configfile``, default config/config.yaml) with every
experiment's seeds moved by OFFSET (a count n becomes OFFSET .. OFFSET + n - 1) and
``depth_theory.overlap_seeds`` with them, so that the same trials keep the same roles (pools
hold their experiments' trials, powered checks' seeds stay apart); the Gauss-Newton sweeps
keep theirs (they train nothing). ``compare A B`` prints the claims whose verdict, law
verdict or reading robustness differ, by source, with each one's statistic and p in both.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import pandas as pd
import yaml

from matcond.core.config import validate_config

REPO = Path(__file__).resolve().parents[1]
COMPARED = ["verdict", "law_verdict", "reading_robust"]


def reseeded(config: dict, offset: int) -> dict:
    """``config`` (as read from YAML) with every experiment's seeds and the depth formula's
    ``overlap_seeds`` moved by ``offset`` (module docstring)."""
    experiments = {}
    for name, experiment in config["experiments"].items():
        seeds = experiment["seeds"]
        seeds = range(seeds) if isinstance(seeds, int) else seeds
        experiments[name] = {**experiment, "seeds": [offset + s for s in seeds]}
    overlap = validate_config(copy.deepcopy(config))["depth_theory"]["overlap_seeds"]
    depth_theory = config.get("depth_theory", {})
    if overlap is not None:
        depth_theory = {**depth_theory, "overlap_seeds": overlap + offset}
    return {**config, "experiments": experiments, "depth_theory": depth_theory}


def moved_claims(first: pd.DataFrame, second: pd.DataFrame) -> pd.Index:
    """The ``claim_id`` of the claims in both tables whose verdict, law verdict or reading
    robustness differ (empty cells equal)."""
    first, second = first.set_index("claim_id"), second.set_index("claim_id")
    shared = first.index.intersection(second.index)
    a, b = (t.loc[shared, COMPARED].fillna("") for t in (first, second))
    return shared[(a != b).any(axis=1)]


def compare(first: pd.DataFrame, second: pd.DataFrame) -> str:
    """The moved claims (:func:`moved_claims`) by source, each with its verdicts, measured
    value and p (or law statistic) in both tables."""
    moved = moved_claims(first, second)
    shared = len(set(first["claim_id"]) & set(second["claim_id"]))
    lines = [f"{len(first)} and {len(second)} claims, {shared} in both, {len(moved)} moved"]
    a, b = (t.set_index("claim_id").loc[moved] for t in (first, second))
    for source in sorted(a["source"].unique()):
        ids = a.index[a["source"] == source]
        lines.append(f"{source}: {len(ids)} of {(first['source'] == source).sum()}")
        for claim in ids:
            x, y = a.loc[claim], b.loc[claim]
            what = " ".join(
                f"{col} {x[col]} -> {y[col]}" for col in COMPARED if str(x[col]) != str(y[col])
            )
            lines.append(
                f"  {claim}: {what} (measured {x['measured']:.4g} -> {y['measured']:.4g}, "
                f"p {x['p_value']:.3g} -> {y['p_value']:.3g}, "
                f"law {x['law']:.4g} -> {y['law']:.4g})"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    config = commands.add_parser("config", help="the config, reseeded, on stdout")
    config.add_argument("offset", type=int)
    config.add_argument("--configfile", type=Path, default=REPO / "config" / "config.yaml")
    tables = commands.add_parser("compare", help="two claims tables' moved verdicts")
    tables.add_argument("first", type=Path)
    tables.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "config":
        text = yaml.safe_dump(reseeded(yaml.safe_load(args.configfile.read_text()), args.offset))
        sys.stdout.write(text)
    else:
        print(compare(pd.read_csv(args.first), pd.read_csv(args.second)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
