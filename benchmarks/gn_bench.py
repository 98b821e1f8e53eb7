"""Benchmark: structured vs dense GN condition numbers (time, agreement, peak memory).

Cases run in subprocesses that report their peak resident memory (``ru_maxrss``) and the
part of it above the resident memory after importing torch and building the inputs. In the
default mode every case has its own subprocess; ``--quick`` runs all its (small) cases in one
subprocess, so its memory figures are cumulative. Networks: ``k = d`` (so ``kd = d^2``),
hidden width ``m = 2d``, ``n = 2d`` Gaussian samples with per-coordinate scales
``exp(N(0, 1/4))`` (non-whitened ``Sigma``; "whitened" cases use ``X -> U V^T``), weights
``N(0, 1/fan_in)``. BLAS / OpenMP threads are fixed by ``--threads`` (default 1: on a shared
2-core machine two spinning thread pools slow dense LAPACK calls by up to 40x).

    python benchmarks/gn_bench.py            # default sizes and the size sweep (minutes)
    python benchmarks/gn_bench.py --quick    # < 30 s
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

WORKER_FLAG = "--worker"


def _inputs(d: int, layers: int, whiten: bool, width: float) -> tuple[list, object]:
    """Weights ``[W_1, ..., W_L]`` and samples for ``k = d``, ``m = width d``, ``n = 2d``."""
    import torch

    gen = torch.Generator().manual_seed(0)
    dims = [d] + [round(width * d)] * (layers - 1) + [d]
    weights = [
        torch.randn(dims[i + 1], dims[i], generator=gen, dtype=torch.float64) / dims[i] ** 0.5
        for i in range(layers)
    ]
    scales = torch.exp(0.5 * torch.randn(d, generator=gen, dtype=torch.float64))
    x = torch.randn(2 * d, d, generator=gen, dtype=torch.float64) * scales
    if whiten:
        u, _, vh = torch.linalg.svd(x, full_matrices=False)
        x = u @ vh
    return weights, x


def _maxrss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_case(case: dict) -> dict:
    """Compute one case in this process and return its figures."""
    from matcond.gauss_newton import linear_gn_matrix, linear_gn_rank, linear_gn_spectrum
    from matcond.gauss_newton.solvers import dense_eigenvalues
    from matcond.gauss_newton.spectrum import spectrum_from_eigenvalues

    weights, x = _inputs(case["d"], case["layers"], case["whiten"], case["width"])
    baseline = _maxrss_mb()
    start = time.perf_counter()
    if case["solver"] == "dense_kd":
        result = spectrum_from_eigenvalues(
            dense_eigenvalues(linear_gn_matrix(weights, x, form="kd")),
            solver="dense_kd",
            seconds=0.0,
            rank=linear_gn_rank(weights, x),
        )
    else:
        result = linear_gn_spectrum(weights, x, solver=case["solver"])
    return {
        "kappa": result.kappa,
        "rank": result.rank,
        "gap": result.gap_at_cut,
        "reliable": result.reliable,
        "seconds": time.perf_counter() - start,
        "peak_mb": _maxrss_mb(),
        "baseline_mb": baseline,
    }


def _worker(cases: list[dict], threads: int) -> None:
    """Run cases in order, printing one JSON line each."""
    import torch

    torch.set_num_threads(threads)
    for case in cases:
        print(json.dumps(_run_case(case)), flush=True)


def run_cases(cases: list[dict], threads: int, timeout: float) -> list[dict | None]:
    """Run ``cases`` in one fresh interpreter; ``None`` for those cut off by ``timeout``."""
    env = {**os.environ, **{v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    command = [sys.executable, __file__, WORKER_FLAG, json.dumps(cases), str(threads)]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=True, env=env
        )
        lines = proc.stdout
    except subprocess.TimeoutExpired as stopped:
        lines = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else ""
    done = [json.loads(line) for line in (lines or "").splitlines() if line.startswith("{")]
    return done + [None] * (len(cases) - len(done))


def case(d: int, layers: int, solver: str, whiten: bool = False, width: float = 2.0) -> dict:
    """A case description (``width``: hidden width over ``d``)."""
    return {"d": d, "layers": layers, "solver": solver, "whiten": whiten, "width": width}


def line(spec: dict, res: dict | None, timeout: float) -> str:
    """Format a case's result."""
    data = "whitened" if spec["whiten"] else "non-whitened"
    shape = f"L={spec['layers']} kd={spec['d'] ** 2:>7} m={spec['width']:g}d"
    label = f"{shape} {data:>12} {spec['solver']:<11}"
    if res is None:
        return f"{label}  > {timeout:.0f} s (stopped)"
    return (
        f"{label} {res['seconds']:8.2f} s  kappa={res['kappa']:.12e}  rank={res['rank']:>7}  "
        f"gap={res['gap']:.1e}  reliable={res['reliable']}  peak={res['peak_mb']:6.0f} MiB "
        f"(+{res['peak_mb'] - res['baseline_mb']:.0f} over inputs)"
    )


def report_against_dense(specs: list[dict], results: list[dict | None], timeout: float) -> None:
    """Print structured cases and the dense one (last), with speed-ups and agreement."""
    for spec, res in zip(specs, results, strict=True):
        print(line(spec, res, timeout))
    dense = results[-1]
    for spec, res in zip(specs[:-1], results[:-1], strict=True):
        if res and dense:
            rel = abs(res["kappa"] - dense["kappa"]) / dense["kappa"]
            speedup = dense["seconds"] / res["seconds"]
            print(
                f"  -> {spec['solver']}: speed-up {speedup:.1f}x over dense, "
                f"|kappa / kappa_dense - 1| = {rel:.1e}"
            )


def sweep(spec: dict, limit: float, threads: int) -> None:
    """Double ``kd`` (``d -> 2d``) until a case takes more than ``limit`` seconds."""
    best = None
    while True:
        res = run_cases([spec], threads, limit + 60)[0]
        print(line(spec, res, limit + 60))
        if res is None or res["seconds"] > limit:
            break
        best = spec["d"] ** 2
        spec = {**spec, "d": 2 * spec["d"]}
    print(f"  -> largest kd done within {limit:.0f} s: {best}")


def main() -> None:
    """Parse options, run the cases, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes in one process, < 30 s")
    parser.add_argument("--compare-d", type=int, default=64, help="d = k for the dense comparison")
    parser.add_argument("--one-hidden-d", type=int, default=256, help="d = k, one hidden layer")
    parser.add_argument("--width", type=float, default=2.0, help="m / d in the dense comparison")
    parser.add_argument("--compare-only", action="store_true", help="only the dense comparison")
    parser.add_argument("--deep-d", type=int, default=128, help="d = k for L = 3 (Lanczos)")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds for the size sweep")
    parser.add_argument("--no-sweep", action="store_true", help="skip the largest-size sweep")
    parser.add_argument("--threads", type=int, default=1, help="torch / BLAS threads per case")
    args = parser.parse_args()
    timeout = 1800.0
    print(f"threads={args.threads}  load average={os.getloadavg()[0]:.2f}  cpus={os.cpu_count()}")

    if args.quick:
        specs = [
            case(32, 2, "block_diag"),
            case(32, 2, "dense_kd"),
            case(32, 3, "lanczos"),
            case(32, 3, "arpack"),
            case(32, 3, "dense_kd"),
            case(128, 2, "block_diag"),
            case(64, 3, "lanczos"),
        ]
        results = run_cases(specs, args.threads, timeout)
        report_against_dense(specs[:2], results[:2], timeout)
        report_against_dense(specs[2:5], results[2:5], timeout)
        for spec, res in zip(specs[5:], results[5:], strict=True):
            print(line(spec, res, timeout))
        return

    print(f"== structured vs dense at kd = {args.compare_d**2}, m = {args.width:g} d ==")
    for layers, solvers in ((2, ["block_diag"]), (3, ["lanczos", "arpack"])):
        specs = [case(args.compare_d, layers, s, width=args.width) for s in [*solvers, "dense_kd"]]
        results = [run_cases([s], args.threads, timeout)[0] for s in specs]
        report_against_dense(specs, results, timeout)
    if args.compare_only:
        return

    print("== large structured cases ==")
    for spec in (
        case(args.one_hidden_d, 2, "block_diag"),
        case(args.one_hidden_d, 2, "closed_form", whiten=True),
        case(args.deep_d, 3, "lanczos"),
    ):
        print(line(spec, run_cases([spec], args.threads, timeout)[0], timeout))
    dense_gb = 8 * args.one_hidden_d**4 / 1e9
    print(f"  (a dense float64 kd x kd matrix at kd = {args.one_hidden_d**2}: {dense_gb:.1f} GB)")

    if not args.no_sweep:
        print(f"== largest kd within {args.limit:.0f} s ==")
        sweep(case(128, 2, "block_diag"), args.limit, args.threads)
        sweep(case(64, 3, "lanczos"), args.limit, args.threads)
        sweep(case(256, 2, "closed_form", whiten=True), args.limit, args.threads)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == WORKER_FLAG:
        _worker(json.loads(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
