"""One rule's jobs of a finished run, each alone and sampled by py-spy: how much of the job
is its numerical kernels, and the job against them.

A job's floor here is the time it spends in compiled numerical code: the samples whose
native frames below the innermost Python frame include numpy's, scipy's or torch's libraries
(decompositions, draws, gathers, reductions, sorts, products; whoever calls them). The rest is
what the job does around them: the interpreter running the project's Python, pandas and
pyarrow (reading tables, selecting rows, building frames), imports and writing files. So
`job / kernels` says how far a job is from the arithmetic it asks for; whether that
arithmetic is the least the science needs (a method's choice) is said beside each figure in
docs/benchmarks.md.

Each job runs as benchmarks/job_alone.py runs it (its request read off `snakemake -n -p`,
`python scripts/job.py LOG < request`, outputs moved under `job-alone/kernels/`), on one
thread (``threads`` set to 1 in its request), under `py-spy record --native --format raw`
(py-spy: `pip install py-spy`). py-spy stops the job for each sample, so its wall time grows
with the rate (about 1.8x at the default 10 per second) while the shares stay the job's.

    python benchmarks/job_kernels.py RUN_DIR claims theory
    python benchmarks/job_kernels.py RUN_DIR aggregate --match ctrl_noise_free --top 8
"""

from __future__ import annotations

import collections
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from job_alone import REPO, job_parser, moved, run_job, selected_jobs  # noqa: E402

KERNEL_LIBRARIES = ("numpy", "scipy", "torch")  # their packages and wheels' .libs folders
# shared libraries py-spy names without a path: torch's, and BLAS/LAPACK/OpenMP
KERNEL_FILES = re.compile(r"^lib(torch|c10|mkl|openblas|scipy_openblas|gomp)")
PYTHON_FRAME = re.compile(r"\([^()]*\.py:\d+\)$")
NATIVE_FRAME = re.compile(r"\((?P<path>[^()]*)\)$")


def in_kernel(stack: str) -> bool:
    """Whether a py-spy ``--native`` stack (frames ``name (file)`` joined by ``;``, outermost
    first) is in a kernel: one of its native frames below its innermost Python frame is in a
    library of :data:`KERNEL_LIBRARIES` (py-spy names a package's library by its path from
    site-packages: ``numpy/_core/_multiarray_umath...so``, ``numpy.libs/libscipy_openblas...``)
    or one that :data:`KERNEL_FILES` names (``libtorch_cpu.so``)."""
    frames = stack.split(";")
    python = [i for i, frame in enumerate(frames) if PYTHON_FRAME.search(frame)]
    for frame in frames[python[-1] + 1 if python else 0 :]:
        match = NATIVE_FRAME.search(frame)
        path = match["path"] if match else ""
        if path.split("/")[0].split(".")[0] in KERNEL_LIBRARIES or KERNEL_FILES.match(path):
            return True
    return False


def innermost_python(stack: str) -> str:
    """The innermost Python frame of a stack, without its line (the whole stack if none)."""
    frames = [f for f in stack.split(";") if PYTHON_FRAME.search(f)]
    return re.sub(r":\d+\)$", ")", frames[-1]) if frames else stack


def shares(raw: str) -> tuple[int, int, collections.Counter]:
    """From py-spy's raw output (``stack count`` per line): all samples, the samples in a
    kernel (:func:`in_kernel`), and the samples per innermost Python frame and whether in a
    kernel."""
    total = kernels = 0
    frames: collections.Counter = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        kernel = in_kernel(stack)
        total += int(count)
        kernels += int(count) * kernel
        frames[innermost_python(stack), kernel] += int(count)
    return total, kernels, frames


def sampled_job(run_dir: Path, request: dict, log: Path, out: Path, rate: int) -> float:
    """Wall seconds of ``request`` run alone on one thread under py-spy (``rate`` samples a
    second), its samples in ``out``."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    prefix = (spy, "record", "--native", "--rate", str(rate), "--format", "raw")
    prefix += ("--output", str(out), "--")
    return run_job(REPO, run_dir, {**request, "threads": 1}, log, prefix)


def main() -> None:
    parser = job_parser(__doc__)
    parser.add_argument("--top", type=int, default=0, help="print the N busiest frames")
    parser.add_argument("--rate", type=int, default=10, help="py-spy's samples per second")
    args = parser.parse_args()
    run_dir = args.run_dir.resolve()
    logs = run_dir / "job-alone" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print("job                                  wall s (sampled)  kernels  job / kernels")
    with tempfile.TemporaryDirectory() as tmp:
        for number, name, request in selected_jobs(run_dir, args.rules, args.match):
            out = Path(tmp) / f"{number}.txt"
            here = moved(request, "job-alone/kernels")
            wall = sampled_job(run_dir, here, logs / f"{number}.log", out, args.rate)
            total, kernels, frames = shares(out.read_text())
            ratio = total / kernels if kernels else float("inf")
            print(f"{name[:42]:<42} {wall:>10.1f} {kernels / total:>8.0%} {ratio:>14.2f}")
            for (frame, kernel), count in frames.most_common(args.top):
                print(f"    {count / total:5.1%}  {'kernel' if kernel else '      '}  {frame}")


if __name__ == "__main__":
    main()
