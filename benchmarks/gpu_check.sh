#!/usr/bin/env bash
# On the GPU machine, from the checkout's root, with .whl carried (made on the development
# machine by ../shared/tools/gpu-wheels.sh: Snakemake and what the machine's image lacks):
#   SECS=440 bash benchmarks/gpu_check.sh [--gpu-min-dim auto] [snakemake arguments]
# installs the wheels into a temporary directory and runs benchmarks/gpu_check.py (the README's
# command for at most SECS seconds, and what the GPU did). Keep SECS two to three minutes under
# the device call's limit: the wheels, the probes and the report take about two.
set -u
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl || exit 3
export PYTHONPATH="$site:$PWD/src" PYTHONUNBUFFERED=1
python3 benchmarks/gpu_check.py --seconds "${SECS:-420}" "$@"
