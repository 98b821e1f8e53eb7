"""Reading and writing the workflow's files so that damage is detected, never read as data.

Every parquet file is written atomically with a CRC checksum per page (pyarrow's
``write_page_checksum``) and read with verification, so a flipped byte or a truncated file
fails naming the file. A trial's table and weights also carry the trial's spec, which the
reader checks against the path it was asked for, and the manifest of the training block that
wrote them lists their sizes and SHA-256 (outside the files they protect); every table's
footer records the name it was written as. :mod:`matcond.pipeline.damage` checks a results directory
with them before any job. Light imports only at module level: the Snakefile imports it at parse
time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from matcond.core.paths import file_kind, not_readable_as
from matcond.core.trials import BUNDLES, NEUTRAL, Trial

if TYPE_CHECKING:
    import pandas as pd

SPEC_KEY = "matcond.spec"  # a trial table's spec (parquet metadata)
SETTINGS_KEY = "matcond.settings"  # the settings a GN table was computed with (parquet metadata)
TABLE_KEY = "matcond.table"  # the file name a table was written as (parquet metadata)
# A trial's weights: {"spec": ..., "sha256": ...} under one key (safetensors writes its
# metadata from a hash map: two keys would come out in either order, and the bytes differ).
WEIGHTS_KEY = "matcond"
# What parsing a damaged file's JSON (header, manifest, stored spec) can raise: a syntax error,
# values of the wrong type or shape, nesting past Python's recursion limit.
UNREADABLE = (ValueError, TypeError, LookupError, AttributeError, RecursionError)


def weights_metadata(spec: Mapping, digest: str) -> dict[str, str]:
    """The safetensors metadata of a trial's weights: its spec and their digest."""
    return {WEIGHTS_KEY: json.dumps({"sha256": digest, "spec": spec}, sort_keys=True)}


def _stored_weights_record(metadata: Mapping[str, str] | None) -> dict:
    try:
        return json.loads((metadata or {})[WEIGHTS_KEY])
    except UNREADABLE:
        return {}


TRIALS_ROOT = Path("results/trials")


class DamagedFileError(ValueError):
    """A file the workflow wrote is truncated, altered or not the file it was asked for."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(f"{path}: {reason} (delete it and rerun: it is rebuilt)")
        self.path, self.reason = Path(path), reason


def replace_atomically(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it onto ``path``: a reader
    never sees half a file, and a killed job leaves no partial output."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would: some writers create files 0600
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def arrow_table(table: pd.DataFrame):
    """``table`` as the arrow table :func:`write_parquet` writes (no index column)."""
    import pyarrow as pa

    return pa.Table.from_pandas(table, preserve_index=False)


def write_parquet(table, path: str | Path, metadata: Mapping[str, str] | None = None) -> None:
    """Write ``table`` (pandas, or arrow from :func:`arrow_table`) as parquet with page
    checksums (atomically), ``metadata`` and the file name it is written as
    (:data:`TABLE_KEY`, :func:`table_identity`) in its footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = table if isinstance(table, pa.Table) else arrow_table(table)
    metadata = {TABLE_KEY: table_identity(path), **(metadata or {})}
    extra = {k.encode(): v.encode() for k, v in metadata.items()}
    arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), **extra})
    replace_atomically(path, lambda tmp: pq.write_table(arrow, tmp, write_page_checksum=True))


def table_identity(path: str | Path) -> str:
    """A table's name as its footer records it (:data:`TABLE_KEY`): its file name, so the
    bytes do not depend on the directory (a copy of the results elsewhere is the same)."""
    return Path(path).name


def _read_arrow(path: str | Path, columns: list[str] | None):
    """The arrow table of a parquet file (its footer metadata with it), page checksums
    verified; DamagedFileError if it cannot be read."""
    import pyarrow.parquet as pq

    path = Path(path)
    if kind := file_kind(path):
        raise DamagedFileError(path, f"not a regular file: {kind}")
    try:
        return pq.read_table(path, columns=columns, page_checksum_verification=True)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise DamagedFileError(path, f"unreadable parquet ({err})") from None


def read_parquet(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """Read a parquet file, verifying its page checksums; DamagedFileError if it cannot be."""
    return _read_arrow(path, columns).to_pandas()


def parquet_footer(path: Path) -> dict[bytes, bytes] | str:
    """A parquet file's footer metadata, or what makes it unreadable (a str). Reads the
    footer only."""
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path).metadata or {}
    except (OSError, ValueError) as err:
        return f"unreadable parquet ({err})"


def trial_path(path: str | Path, root: Path = TRIALS_ROOT) -> str:
    """The trial a file under ``root`` belongs to: 'linear/.../seed0' for its .parquet."""
    return str(Path(path).relative_to(root).with_suffix(""))


def _spec_problem(stored: str | None, path: str | Path, root: Path) -> str | None:
    if stored is None:
        return "no trial spec in its metadata"
    expected = trial_path(path, root)
    try:
        found = Trial(json.dumps(json.loads(stored), sort_keys=True)).path
    except UNREADABLE as err:
        return f"unreadable trial spec in its metadata ({type(err).__name__}: {err})"
    if found != expected:
        return f"holds the trial {found}, not {expected}"
    return None


def changed_settings(stored: dict, expected: dict) -> str | None:
    """'computed with other settings (a, b.c)' naming what differs (one level down), or None."""
    if stored == expected:
        return None
    changed = []
    for key in sorted(set(stored) | set(expected)):
        old, new = stored.get(key), expected.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changed += [
                f"{key}.{k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)
            ]
        elif old != new:
            changed.append(key)
    return f"computed with other settings ({', '.join(changed)})"


def weights_problem(path: Path, spec_json: str) -> str | None:
    """What is wrong with a trial's safetensors file (header, size, stored spec), or None."""
    header = safetensors_header(path)
    if isinstance(header, str):
        return header
    if _stored_weights_record(header.get("__metadata__")).get("spec") != json.loads(spec_json):
        return "weights of another trial or other settings"
    return None


def safetensors_header(path: Path) -> dict | str:
    """The JSON header of a safetensors file whose size matches it, or what is wrong."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 < length <= size - 8:
            return f"a {length}-byte header in a {size}-byte file"
        try:
            header = json.loads(fh.read(length))
            tensors = [t for k, t in header.items() if k != "__metadata__"]
            end = max((t["data_offsets"][1] for t in tensors), default=0)
        except UNREADABLE as err:
            return f"unreadable header ({type(err).__name__}: {err})"
    if 8 + length + end != size:
        return f"its header places {end} bytes of tensor data, the file holds {size - 8 - length}"
    return header


def file_record(path: str | Path) -> dict[str, int | str]:
    """A file's size and SHA-256, as a block's manifest records them."""
    data = Path(path).read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_manifest(
    path: str | Path, block: Mapping, trials: Mapping[str, Mapping], device: str
) -> None:
    """Write a training block's manifest (atomically): the block's request (``block``: its
    setting, seeds and the seeds that save weights), the ``device`` it trained on (``cpu``
    or ``cuda``) and, per trial (``seed{s}``), its diverged epoch and the :func:`file_record`
    of each file it wrote, keyed by file name."""
    content = {"block": block, "device": device, "trials": trials}
    text = json.dumps(content, sort_keys=True, indent=1) + "\n"
    replace_atomically(path, lambda tmp: tmp.write_text(text))


def read_manifest(path: str | Path) -> dict:
    """A block's manifest; DamagedFileError naming it if it is not one."""

    def check(manifest: dict) -> None:
        manifest["block"]["spec"], manifest["block"]["seeds"]
        for record in manifest["trials"].values():
            record["diverged_epoch"], record["files"].items()

    return _read_manifest_of(path, "a block manifest", check)


def _read_manifest_of(path: str | Path, what: str, check: Callable[[dict], None]) -> dict:
    """The JSON file at ``path``, on which ``check`` raises none of UNREADABLE; else
    DamagedFileError naming it, "not ``what``"."""
    path = Path(path)
    if problem := not_a_file(path):
        raise DamagedFileError(path, problem)
    try:
        manifest = read_json(path, what)
        check(manifest)
    except UNREADABLE as err:
        raise DamagedFileError(path, f"not {what} ({type(err).__name__}: {err})") from None
    return manifest


def write_bundle_manifest(path: str | Path, request: Mapping) -> None:
    """Write a bundle's manifest (atomically), once its blocks' manifests are written: its
    request (``request``: its blocks' requests by path) and the :func:`file_record` of each
    block's manifest, keyed by block path."""
    path = Path(path)
    blocks = {
        block: file_record(bundled_block_manifest(path, block)) for block in request["blocks"]
    }
    text = json.dumps({"bundle": request, "blocks": blocks}, sort_keys=True, indent=1) + "\n"
    replace_atomically(path, lambda tmp: tmp.write_text(text))


def read_bundle_manifest(path: str | Path) -> dict:
    """A bundle's manifest; DamagedFileError naming it if it is not one."""

    def check(manifest: dict) -> None:
        for block, record in manifest["blocks"].items():
            manifest["bundle"]["blocks"][block], record["bytes"], record["sha256"]

    return _read_manifest_of(path, "a bundle manifest", check)


def is_bundle(manifest: str | Path) -> bool:
    """Whether a training job's manifest is a bundle's (below results/trials/bundles)."""
    return Path(manifest).parent.name == BUNDLES


def bundled_block_manifest(bundle: str | Path, block: str) -> Path:
    """Where the manifest of block ``block`` (its path below results/trials) of the bundle
    whose manifest is ``bundle`` lies: where the block's own job would write it."""
    return Path(bundle).parent.parent / f"{block}.json"


def block_manifests(manifests: Iterable[str | Path]) -> list[Path]:
    """The block manifests behind training jobs' ``manifests``: a block's job manifest is its
    block's; a bundle's lists its blocks' manifests, each read here and checked against its
    record (size, SHA-256; DamagedFileError naming it if it differs)."""
    blocks = []
    for manifest in map(Path, manifests):
        if not is_bundle(manifest):
            blocks.append(manifest)
            continue
        for block, record in read_bundle_manifest(manifest)["blocks"].items():
            path = bundled_block_manifest(manifest, block)
            verified_bytes(path, record, f"not the manifest its bundle {manifest} lists")
            blocks.append(path)
    return blocks


def listed_files(path: Path, manifest: Mapping) -> dict[Path, dict]:
    """Every file a block's manifest (at ``path``) lists -> its record."""
    return {
        path.parent / name: record
        for trial in manifest["trials"].values()
        for name, record in trial["files"].items()
    }


def verified_bytes(
    path: str | Path,
    record: Mapping,
    mismatch: str = "not the file its block's manifest lists (checksum mismatch)",
) -> bytes:
    """A file's bytes, checked against its manifest record (size and SHA-256);
    DamagedFileError saying ``mismatch`` if they differ."""
    path = Path(path)
    if problem := not_a_file(path):
        raise DamagedFileError(path, problem)
    data = path.read_bytes()
    if len(data) != record["bytes"] or hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise DamagedFileError(path, mismatch)
    return data


def read_trials(
    manifests: Iterable[str | Path],
    trials: Iterable[str],
    root: Path = TRIALS_ROOT,
    columns: list[str] | None = None,
    settings: Collection[str] = (),
) -> pd.DataFrame:
    """The tables of ``trials`` (paths below ``root``) stacked in that order, as one frame,
    with a column for each of ``settings`` (a trial at a setting's neutral value, where the
    trial does not store it, gets that value: :data:`matcond.core.trials.NEUTRAL`) and,
    where every column is read (``columns`` None), a last column ``device``: the device its
    block trained on, as its manifest records it (``cpu``, ``cuda``; "" for a manifest from
    before devices were recorded).

    Each file is read once and checked: against the record of the manifest of its block among
    ``manifests`` (size, SHA-256), its page checksums, and the spec in its metadata against
    its path; DamagedFileError naming the file if not.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    records: dict[Path, dict] = {}
    devices: dict[Path, str] = {}
    for manifest in block_manifests(manifests):
        content = read_manifest(manifest)
        listed = listed_files(manifest, content)
        records.update(listed)
        devices.update(dict.fromkeys(listed, str(content.get("device", ""))))
    tables, trained_on = [], []
    for trial in trials:
        path = root / f"{trial}.parquet"
        if path not in records:
            raise DamagedFileError(path, "listed in none of the manifests of its blocks")
        data = pa.BufferReader(verified_bytes(path, records[path]))
        try:
            table = pq.read_table(data, columns=columns, page_checksum_verification=True)
        except (OSError, ValueError) as err:
            raise DamagedFileError(path, f"unreadable parquet ({err})") from None
        stored = (table.schema.metadata or {}).get(SPEC_KEY.encode())
        if problem := _spec_problem(stored and stored.decode(), path, root):
            raise DamagedFileError(path, problem)
        tables.append(table)
        trained_on += [devices[path]] * table.num_rows
    if not tables:
        raise ValueError("no trials to read")
    frame = pa.concat_tables(tables, promote_options="default").to_pandas()
    for name in settings:  # a trial at a setting's neutral value does not store it
        if name in NEUTRAL:
            value = NEUTRAL[name]
            filled = frame[name].fillna(value) if name in frame else value
            frame[name] = pd.Series(filled, index=frame.index).astype(type(value))
    if columns is None:
        frame["device"] = trained_on
    return frame


def weights_digest(weights: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of named arrays (names, dtypes, shapes and values, in name order)."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def load_weights(path: str | Path, spec_json: str) -> dict[str, np.ndarray]:
    """A trial's saved weights as float64 arrays, checked against the digest and the spec
    stored with them; DamagedFileError naming the file if either does not match."""
    from safetensors import safe_open

    path = Path(path)
    if problem := not_a_file(path) or weights_problem(path, spec_json):
        raise DamagedFileError(path, problem)
    with safe_open(str(path), framework="numpy") as fh:
        weights = {name: fh.get_tensor(name) for name in fh.keys()}
        stored = _stored_weights_record(fh.metadata()).get("sha256")
    if stored != weights_digest(weights):
        raise DamagedFileError(path, "weight values altered (checksum mismatch)")
    return weights


def load_trial_weights(manifest: str | Path, trial: str, spec_json: str) -> dict[str, np.ndarray]:
    """The saved weights of ``trial`` (its path below results/trials), checked against the
    manifest of its block (``manifest``, or one that the bundle ``manifest`` lists) (size,
    SHA-256), then as :func:`load_weights` checks them."""
    cell, name = Path(trial).parent.parts, f"{Path(trial).name}.safetensors"
    records, path = {}, Path(manifest).parent / name
    for block in block_manifests([manifest]):
        if block.parent.parts[-len(cell) :] == cell:
            path = block.parent / name
            records |= listed_files(block, read_manifest(block))
    if path not in records:
        raise DamagedFileError(path, f"not listed in its block's manifest {manifest}")
    verified_bytes(path, records[path])
    return load_weights(path, spec_json)


# Largest JSON file read whole (a block's manifest, a model's index or config.json, the run
# record): kilobytes to a few MB where nothing is wrong.
MAX_JSON_BYTES = 64 * 2**20


class JSONFileError(ValueError):
    """A JSON file that cannot be read; the message says why, without the file's name."""


def read_json(path: str | Path, what: str = "a JSON file", max_bytes: int = MAX_JSON_BYTES):
    """The content of the JSON file at ``path``, the one reader of every JSON file the
    workflow consumes. JSONFileError when it is not a regular file (a FIFO is never opened),
    holds more than ``max_bytes`` (never read past them), cannot be read, is not JSON, or is
    nested deeper than Python can parse."""
    if problem := not_readable_as(path, what):
        raise JSONFileError(problem)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as err:
        raise JSONFileError(f"cannot be read ({err.strerror})") from None
    if len(data) > max_bytes:
        raise JSONFileError(f"is {os.path.getsize(path)} bytes, above {max_bytes} for JSON")
    try:
        return json.loads(data)
    except RecursionError:
        raise JSONFileError("is JSON nested too deeply to read") from None
    except ValueError as err:  # not UTF-8, not JSON
        raise JSONFileError(f"is not JSON ({err})") from None


def not_a_file(path: Path) -> str | None:
    """'not a regular file: <what it is>' (:func:`file_kind`) or 'empty file', or None."""
    if kind := file_kind(path):
        return f"not a regular file: {kind}"
    return "empty file" if path.stat().st_size == 0 else None
