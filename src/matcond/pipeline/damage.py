"""The check of a results directory before any job (:func:`damaged_files`): each training
block's manifest and the files it lists, and the structure of every other output (parquet
footers and the name each table was written as, CSV against the parquet table beside it, the ends
of Markdown, PNG, PDF and HTML files, safetensors headers), so that damaged files are set
aside (:func:`set_aside`) and rebuilt (common.smk).

Only the Snakefile imports it (parse time), no job: editing it reruns nothing. Light imports
at module level.
"""

from __future__ import annotations

import csv
import filecmp
import json
import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

from matcond.core.files import (
    SETTINGS_KEY,
    TABLE_KEY,
    UNREADABLE,
    DamagedFileError,
    bundled_block_manifest,
    changed_settings,
    file_record,
    is_bundle,
    listed_files,
    not_a_file,
    parquet_footer,
    read_bundle_manifest,
    read_manifest,
    safetensors_header,
    table_identity,
)

# Snakemake options that show something (a summary, a list, a graph, the report, a lint) or
# tidy its own records, and run no job: with one of them damaged files are named, never moved.
QUERY_OPTIONS = frozenset(
    {
        *("--summary", "-S", "--detailed-summary", "-D"),
        *("--list-rules", "--list", "-l", "--list-target-rules", "--lt"),
        *("--list-changes", "--list-input-changes", "--li", "--list-params-changes", "--lp"),
        *("--list-untracked", "--lu", "--dag", "--rulegraph", "--filegraph", "--d3dag"),
        *("--report", "--lint", "--containerize", "--export-cwl", "--archive"),
        *("--print-compilation", "--unlock", "--cleanup-metadata", "--cleanup-shadow"),
    }
)


def query_only(argv: Iterable[str]) -> bool:
    """Whether a Snakemake command line (``sys.argv``) only queries: one of QUERY_OPTIONS."""
    return any(arg.split("=", 1)[0] in QUERY_OPTIONS for arg in list(argv)[1:])


def settings_problem(path: Path, settings_json: str) -> str | None:
    """What is wrong with a table that stores the settings it was computed with (footer,
    those settings against ``settings_json``), or None. Reads the footer only."""
    footer = parquet_footer(path)
    if isinstance(footer, str):
        return footer
    stored = footer.get(SETTINGS_KEY.encode())
    if stored is None:
        return "no settings in its metadata (written by an older version)"
    try:
        return changed_settings(json.loads(stored), json.loads(settings_json))
    except UNREADABLE as err:
        return f"unreadable settings in its metadata ({type(err).__name__}: {err})"


def block_damage(manifest: Path, block_json: str) -> dict[Path, str]:
    """A block's damaged files, each with what is wrong: {} if its manifest is readable, was
    made for the block ``block_json`` describes (its setting, seeds and saved weights), and
    every file it lists exists with the size it lists. Otherwise the manifest, so that the
    block is trained again, and the files that must not be overwritten unseen: all those it
    lists if it was made for other settings, else those that differ from its record
    (:func:`_record_problem`). Cheap enough for every block before a run: trial tables are
    small (hashing one costs less than parsing its footer)."""
    try:
        stored = read_manifest(manifest)
    except DamagedFileError as err:
        return {manifest: err.reason}
    files = listed_files(manifest, stored)
    made_for, expected = stored["block"], json.loads(block_json)
    if made_for != expected:
        if made_for["spec"] == expected["spec"]:
            problem = f"made for seeds {seed_ranges(made_for['seeds'])}"
            problem += f", not {seed_ranges(expected['seeds'])}"
            saved, to_save = made_for.get("save_weights") or [], expected["save_weights"]
            if saved != to_save:
                problem += f"; saving the weights of {seed_ranges(saved)}"
                problem += f", not {seed_ranges(to_save)}"
        elif isinstance(made_for["spec"], dict):
            problem = changed_settings(made_for["spec"], expected["spec"])
        else:
            problem = "made for another setting"
        return {manifest: problem} | {f: problem for f in files if os.path.lexists(f)}
    altered = {
        f: problem
        for f, record in files.items()
        if os.path.lexists(f) and (problem := _record_problem(f, record))
    }
    missing = [f for f in files if not os.path.lexists(f)]
    if altered or missing:
        names = ", ".join(f.name for f in [*missing, *altered])
        return {manifest: f"its trial files {names} are missing or altered"} | altered
    return {}


def bundle_damage(manifest: Path, bundle_json: str) -> dict[Path, str]:
    """A bundle's damaged files, each with what is wrong: those of each of its blocks whose
    manifest exists (:func:`block_damage`), and the bundle's manifest, so that the bundle is
    trained again, where it exists and is unreadable, was made for other blocks or requests,
    or lists a block manifest that is missing, damaged or not the one it records."""
    expected = json.loads(bundle_json)
    damaged = {}
    for block, request in expected["blocks"].items():
        path = bundled_block_manifest(manifest, block)
        if os.path.lexists(path):
            damaged |= block_damage(path, json.dumps(request, sort_keys=True))
    if not os.path.lexists(manifest):
        return damaged
    try:
        stored = read_bundle_manifest(manifest)
    except DamagedFileError as err:
        return damaged | {manifest: err.reason}
    if stored["bundle"] != expected:
        return damaged | {manifest: "made for other blocks or settings"}
    for block, record in stored["blocks"].items():
        path = bundled_block_manifest(manifest, block)
        if path in damaged or (problem := _record_problem(path, record)):
            problem = f"the manifest of its block {block} is missing or altered"
            return damaged | {manifest: problem}
    return damaged


def seed_ranges(seeds: Iterable[int]) -> str:
    """Seeds as sorted runs, "1000-1039, 1041" (none: "none")."""
    runs: list[list[int]] = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][1] + 1:
            runs[-1][1] = seed
        else:
            runs.append([seed, seed])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def by_block(damaged: Mapping[Path, str]) -> dict[Path, tuple[str, list[Path]]]:
    """The damaged files as a run names them: each with its problem and the trial files that
    go with it, those set aside with their block's manifest for the same reason (one line per
    block, not one per trial)."""
    grouped: dict[Path, tuple[str, list[Path]]] = {}
    # one dict lookup per file (a changed block_size sets every trial file aside at once)
    manifests = {
        (path.parent, problem): path
        for path, problem in reversed(damaged.items())
        if path.suffix == ".json"
    }
    for path, problem in damaged.items():
        manifest = manifests.get((path.parent, problem))
        if path.suffix != ".json" and "trials" in path.parts and manifest:
            grouped.setdefault(manifest, (problem, []))[1].append(path)
        else:
            grouped.setdefault(path, (problem, []))
    return grouped


def _record_problem(path: Path, record: Mapping) -> str | None:
    """How a file differs from its manifest record, or None: its size, and for a table its
    SHA-256 too (weights, which may be large, are hashed where they are read)."""
    if problem := not_a_file(path):
        return problem
    if path.stat().st_size != record["bytes"]:
        return "not the file its block's manifest lists (another size)"
    if path.suffix == ".parquet" and file_record(path)["sha256"] != record["sha256"]:
        return "not the file its block's manifest lists (checksum mismatch)"
    return None


def _tail_problem(path: Path, ending: bytes, what: str) -> str | None:
    """None if the file ends with ``ending`` (after trailing whitespace, unless ``ending`` is
    a newline), else that it is truncated."""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - 64))
        tail = fh.read()
    tail = tail if ending == b"\n" else tail.rstrip()
    return None if tail.endswith(ending) else f"truncated {what} (does not end with {ending!r})"


def _parquet_problem(path: Path) -> str | None:
    """An unreadable footer, or a table written under another name (:data:`TABLE_KEY`: e.g.
    another experiment's table copied over this one), or None. Reads the footer only."""
    footer = parquet_footer(path)
    if isinstance(footer, str):
        return footer
    stored = footer.get(TABLE_KEY.encode(), b"").decode()
    if stored and stored != table_identity(path):
        return f"holds the table written as {stored}, not {table_identity(path)}"
    return None


def _csv_problem(path: Path) -> str | None:
    """A CSV cut short: one that does not end with a newline, or whose columns or number of
    rows are not those of the parquet table beside it (the same table; a cut at a line
    boundary or another table's CSV), or None. Reads the CSV and the twin's footer."""
    import pyarrow.parquet as pq

    if problem := _tail_problem(path, b"\n", "CSV"):
        return problem
    twin = path.with_suffix(".parquet")
    try:
        footer = pq.read_metadata(twin)
        columns, rows = footer.schema.to_arrow_schema().names, footer.num_rows
    except (OSError, ValueError):
        return None  # no twin, or a damaged one, which its own check names
    with open(path, newline="") as fh:
        header = next(csv.reader([fh.readline()]), [])
        lines, quoted = 0, False
        for chunk in iter(lambda: fh.read(1 << 20), ""):
            lines, quoted = lines + chunk.count("\n"), quoted or '"' in chunk
        if quoted:  # a quoted field may hold a newline: count the records
            fh.seek(0)
            lines = sum(1 for _ in csv.reader(fh)) - 1
    if columns and header != columns:
        return f"its columns are not those of {twin.name}"
    if lines != rows:
        return f"truncated CSV or another table ({lines} rows, {twin.name} has {rows})"
    return None


CHECKS: dict[str, Callable[[Path], str | None]] = {
    ".parquet": _parquet_problem,
    ".csv": _csv_problem,
    ".md": lambda p: _tail_problem(p, b"\n", "Markdown"),
    ".png": lambda p: _tail_problem(p, b"IEND\xaeB`\x82", "PNG"),
    ".pdf": lambda p: _tail_problem(p, b"%%EOF", "PDF"),
    ".html": lambda p: _tail_problem(p, b"</html>", "HTML"),
    ".safetensors": lambda p: h if isinstance(h := safetensors_header(p), str) else None,
}


def file_problem(path: Path) -> str | None:
    """What is wrong with one output file by its format (empty, truncated, unreadable), or None."""
    if problem := not_a_file(path):
        return problem
    check = CHECKS.get(path.suffix)
    return check(path) if check else None


def damaged_files(
    results: Path,
    jobs: Mapping[str, str],
    outputs: Iterable[str],
    settings: Mapping[str, str] | None = None,
) -> dict[Path, str]:
    """Every damaged file among a run's existing outputs, with what is wrong.

    ``jobs``: training job path -> its request JSON (:func:`block_damage` checks a block's
    manifest and trial files, :func:`bundle_damage` a bundle's); ``outputs``: the run's other
    output files, relative to ``results``' parent; ``settings``: those of them that store
    their settings (:data:`SETTINGS_KEY`) -> the settings JSON they must hold.
    """
    settings = settings or {}
    damaged = {}
    for job, request in jobs.items():
        manifest = results / "trials" / f"{job}.json"
        if is_bundle(manifest):
            damaged |= bundle_damage(manifest, request)
        elif os.path.lexists(manifest):
            damaged |= block_damage(manifest, request)
    for output in outputs:
        path = results.parent / output
        check = (
            partial(settings_problem, settings_json=settings[output])
            if output in settings
            else CHECKS.get(path.suffix, lambda _: None)
        )
        if os.path.lexists(path) and (problem := not_a_file(path) or check(path)):
            damaged[path] = problem
    return damaged


def set_aside(path: Path, results: Path) -> Path:
    """Move a damaged file to ``results/damaged/`` (same relative path, a free name), so that
    the run rebuilds it and nothing is deleted; returns where it went. A file whose very bytes
    are set aside there already is removed instead (that copy is returned): toggling a
    setting back and forth keeps one copy of each version, not one per toggle."""
    target = results / "damaged" / path.relative_to(results)
    n = 0
    while os.path.lexists(target):
        if _same_bytes(path, target):
            path.unlink()
            return target
        n += 1
        target = target.with_name(f"{path.name}.{n}")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(path, target)
    return target


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether regular files ``a`` and ``b`` hold the same bytes (links and others: no)."""
    if a.is_symlink() or b.is_symlink() or not (a.is_file() and b.is_file()):
        return False
    if a.stat().st_size != b.stat().st_size:
        return False
    return filecmp.cmp(a, b, shallow=False)
