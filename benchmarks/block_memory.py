"""Host memory of a training batch against the training rule's ``mem_mb``.

Trains ``n`` trials of one setting side by side on the CPU (as a GPU block trains all its
seeds at once, the host keeping each trial's matrices; the CPU adds the training's own state)
in a fresh process each, and prints the peak RSS it adds per trial beside
``matcond.condition_number.batching.trial_host_mb``, and the whole job's peak beside
``block_mem_mb`` for cuda. ``python benchmarks/block_memory.py [dim] [epochs]`` (default 512, 4).
"""

import json
import subprocess
import sys

from matcond.condition_number.batching import block_mem_mb, trial_host_mb
from matcond.core.config import validate_config

SETTINGS = {
    "linear": {},
    "deep_linear L3": {"model": "deep_linear", "depth": 3},
    "linear, every epoch saved": {"record_every": 1, "save_recorded_weights": True},
    "deep_linear L3, every epoch saved": {
        "model": "deep_linear",
        "depth": 3,
        "record_every": 1,
        "save_recorded_weights": True,
    },
    "relu_mlp": {"model": "relu_mlp"},
}
CHILD = """
import json, resource, sys, torch
from matcond.condition_number.run import run_trials
specs = json.loads(sys.stdin.read())
torch.set_num_threads(1)
run_trials(specs, torch.device("cpu"))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def peak_mb(specs: list[dict]) -> float:
    """Peak RSS (MB) of a fresh process that trains ``specs`` side by side."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(specs), capture_output=True, text=True
    )
    out.check_returncode()
    return float(out.stdout)


def main(dim: int = 512, epochs: int = 4, few: int = 1, many: int = 8) -> None:
    defaults = validate_config({"experiments": {"x": {"seeds": 1}}})["defaults"]
    print(f"d = {dim}, {epochs} epochs, {few} and {many} trials side by side on the CPU")
    print("| setting | MB per trial, measured | trial_host_mb | ratio | job peak | mem_mb (cuda) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, extra in SETTINGS.items():
        spec = {**defaults, "dim": dim, "epochs": epochs, **extra}
        specs = [{**spec, "seed": seed} for seed in range(many)]
        low, high = peak_mb(specs[:few]), peak_mb(specs)
        measured = (high - low) / (many - few)
        model = trial_host_mb(spec)
        print(
            f"| {name} | {measured:.1f} | {model:.1f} | {model / measured:.2f} | {high:.0f} "
            f"| {block_mem_mb(spec, many, 'cuda')} |"
        )


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
