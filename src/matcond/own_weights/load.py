"""Reading a user's weights: which files a path stands for, and their tensors by name.

A path given to :func:`sources` (config key ``checkpoints``, or :func:`matcond.analyze`) is

- a weight file: safetensors, or anything ``torch.load(weights_only=True)`` reads (a state
  dict, a training checkpoint ``{"model": ..., "optimizer": ..., "epoch": ...}``, DDP and
  compiled models' saves); the format is read from the content, not the extension;
- a Hugging Face model folder (one holding ``model.safetensors``, ``pytorch_model.bin`` or the
  ``.index.json`` of their shards, searched in that order), or such an index file itself: the
  shards the index lists are read as one model. A single shard given alone is refused, naming
  its index: it holds only part of the model;
- a folder of checkpoints of one run (any other folder): every weight file
  (:data:`WEIGHT_SUFFIXES`) and model folder in it is one checkpoint, ordered by the step
  read from its name (the last integer in it: ``checkpoint-500``, ``epoch_3.pt``).

A ``config.json`` beside the weights (a model folder's, or the file's folder's) is read as
the model's settings (e.g. ``num_attention_heads``).

Loading never runs code from a file: safetensors files are parsed as safetensors, anything
else goes through ``torch.load(weights_only=True)``, and a file that needs more than tensors
and plain containers to unpickle is refused with :class:`UnsafeCheckpointError`. Files are
read, not memory-mapped: a mapped file that another process rewrites kills its reader with
SIGBUS, a read one gives an error naming the file
(:mod:`matcond.own_weights.tensor_file`).
"""

from __future__ import annotations

import codecs
import os
import pickle
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matcond.core import files
from matcond.core.config import ConfigError
from matcond.core.files import safetensors_header
from matcond.core.paths import not_readable_as


class CheckpointError(ValueError):
    """A checkpoint path cannot be read as a set of tensors."""


class UnsafeCheckpointError(CheckpointError):
    """A pickled checkpoint needs more than tensors to load (it could run code): refused."""


# Deepest nesting of containers in a torch file (a training checkpoint has a handful).
MAX_DEPTH = 100
SAFETENSORS_MAX_HEADER = 100_000_000  # the safetensors library's own limit
TEXT_PROBE = 65536  # bytes read to tell a text file
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's default format
LEGACY_MAGIC = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2)  # torch's legacy format
BAD_SAFETENSORS = "is truncated or corrupt safetensors"
# A Hugging Face model folder's weights, in the order transformers looks for them.
MODEL_FILES = (
    "model.safetensors.index.json",
    "model.safetensors",
    "pytorch_model.bin.index.json",
    "pytorch_model.bin",
)
# The files of a folder of checkpoints that are taken as checkpoints.
WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".ckpt")
SHARD_NAME = re.compile(r"^(.+)-\d+-of-\d+(\.safetensors|\.bin)$")


@dataclass(frozen=True)
class Source:
    """One checkpoint: its name, its weight files (a sharded model's shards), the step read
    from its name, the shards' index and the ``config.json`` beside it (None: none)."""

    name: str
    files: tuple[Path, ...]
    step: int | None = None
    index: Path | None = None
    config: Path | None = None


def read_json(path: Path) -> Any:
    """A small JSON file's content (an index, a config.json); CheckpointError naming the file
    when it cannot be read (:func:`matcond.core.files.read_json`)."""
    try:
        return files.read_json(path)
    except files.JSONFileError as err:
        raise CheckpointError(f"{str(path)!r} {err}") from None


def _step(name: str) -> int | None:
    numbers = re.findall(r"\d+", name)
    return int(numbers[-1]) if numbers else None


def _config_beside(folder: Path) -> Path | None:
    config = folder / "config.json"
    return config if config.is_file() else None


def _shards(index: Path) -> tuple[Path, ...]:
    """The shard files an ``*.index.json`` lists, in order of first appearance."""
    try:
        weight_map = read_json(index)["weight_map"]
        names = list(dict.fromkeys(weight_map.values()))
    except CheckpointError as err:
        raise CheckpointError(f"index {str(index)!r} cannot be read: {err}") from None
    except (KeyError, TypeError, AttributeError) as err:
        raise CheckpointError(
            f"index {str(index)!r} is not a shard index ({type(err).__name__}: {err})"
        ) from None
    if not names or not all(isinstance(n, str) and "/" not in n for n in names):
        raise CheckpointError(
            f"index {str(index)!r} lists no shard files in its weight_map, or a path outside "
            "its folder"
        )
    shards = tuple(index.parent / n for n in names)
    if missing := [str(s) for s in shards if not s.is_file()]:
        raise CheckpointError(f"index {str(index)!r} lists shards that are missing: {missing}")
    return shards


def _lone_shard_index(path: Path) -> Path | None:
    """The index a file is a shard of (the index beside it that lists it, or for a file named
    ``*-00001-of-00003.*`` the index it would have), else None."""
    for index in path.parent.glob("*.index.json"):
        try:
            if path.name in read_json(index).get("weight_map", {}).values():
                return index
        except (CheckpointError, AttributeError, TypeError):
            continue
    if found := SHARD_NAME.match(path.name):
        return path.parent / f"{found.group(1)}{found.group(2)}.index.json"
    return None


def _model_folder(
    folder: Path, name: str, step: int | None, index: Path | None = None
) -> Source | None:
    """The Source of a Hugging Face model folder (read through ``index`` if given), or None
    if ``folder`` is not one."""
    for path in [index] if index else (folder / file for file in MODEL_FILES):
        if path.is_file():
            if path.name.endswith(".index.json"):
                return Source(name, _shards(path), step, path, _config_beside(folder))
            return Source(name, (path,), step, None, _config_beside(folder))
    return None


def sources(path: str | Path) -> list[Source]:
    """The checkpoints ``path`` stands for (see the module docstring); CheckpointError saying
    why it stands for none. Reads directory listings and index files, no weights."""
    path = Path(path)
    if path.is_file():
        if path.name.endswith(".index.json"):
            return [_model_folder(path.parent, path.parent.name, None, path)]
        if index := _lone_shard_index(path):
            raise CheckpointError(
                f"checkpoint {str(path)!r} is one shard of a sharded model: give its folder or "
                f"its index file {str(index)!r}"
                + ("" if index.is_file() else " (which is not beside it)")
            )
        return [Source(path.name, (path,), config=_config_beside(path.parent))]
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {str(path)!r} {not_readable_as(path, 'a weight file')}")
    if model := _model_folder(path, path.name, None):
        return [model]
    found = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        try:
            child.name.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(child.name)
            raise CheckpointError(
                f"folder {str(path)!r} holds a file whose name is not UTF-8 ({shown!r}): "
                "rename it, or move it out of the folder"
            ) from None
        if child.is_dir():
            found += [m] if (m := _model_folder(child, child.name, _step(child.name))) else []
        elif child.suffix in WEIGHT_SUFFIXES and not SHARD_NAME.match(child.name):
            found.append(
                Source(child.name, (child,), _step(child.name), None, _config_beside(path))
            )
    if not found:
        raise CheckpointError(
            f"folder {str(path)!r} holds no weight file ({', '.join(WEIGHT_SUFFIXES)}) and no "
            f"model folder ({' or '.join(MODEL_FILES)})"
        )
    return sorted(found, key=lambda s: (s.step is None, s.step or 0, s.name))


def input_files(path: str | Path) -> list[Path]:
    """Every file the analysis of ``path`` reads (its weights, indexes and configs): a rule's
    input, so that a change to any of them reruns it."""
    files = []
    for source in sources(path):
        files += [*source.files, *(p for p in (source.index, source.config) if p)]
    return list(dict.fromkeys(files))


def check_checkpoint_paths(config: Mapping[str, Any], base: str | Path | None = None) -> None:
    """Raise ConfigError naming ``checkpoints.<name>`` for every path that stands for no
    checkpoint (:func:`sources`) or holds a file that :func:`file_problem` finds unusable.

    Relative paths are read from ``base`` (default: the working directory, which is
    Snakemake's ``--directory``).
    """
    root = Path.cwd() if base is None else Path(base)
    problems = []
    for name, path in (config.get("checkpoints") or {}).items():
        try:
            what = None
            found = sources(root / path)
            for file in (f for s in found for f in s.files):
                if what := file_problem(file):
                    what = (
                        f"{what}" if file == root / path else f"holds {file.name!r}, which {what}"
                    )
                    break
            what = what or next(filter(None, (_shard_overlap(s.files) for s in found)), None)
        except CheckpointError as err:
            what = re.sub(r"^(checkpoint|folder|index) '[^']*' ", "", str(err))
        except OSError as err:
            what = f"cannot be read ({err.strerror})"
        if what:
            problems.append(f"config key checkpoints.{name}: {path!r} {what}")
    if problems:
        raise ConfigError("; ".join(problems) + f" (relative paths are read from {root.resolve()})")


def _shard_overlap(files: tuple[Path, ...]) -> str | None:
    """Two safetensors shards of one model holding a tensor of the same name, from their
    headers (no weights read); None if none do."""
    held: dict[str, str] = {}
    for file in files:
        if file.suffix != ".safetensors" or isinstance(header := safetensors_header(file), str):
            continue
        for name in header:
            if name != "__metadata__" and (other := held.setdefault(name, file.name)) != file.name:
                return f"has shards {other!r} and {file.name!r} that both hold tensor {name!r}"
    return None


def _safetensors_header_len(head: bytes) -> int | None:
    """The JSON header's length if ``head`` starts like safetensors (an 8-byte little-endian
    length, then ``{``), else None."""
    length = int.from_bytes(head[:8], "little")
    return length if head[8:9] == b"{" and 2 <= length <= SAFETENSORS_MAX_HEADER else None


def file_problem(path: Path) -> str | None:
    """What makes ``path`` unusable as a weight file, found without loading it (None: nothing):
    empty, text, or a safetensors header that does not match the file's size."""
    size = path.stat().st_size
    if size == 0:
        return "is empty (0 bytes)"
    with open(path, "rb") as fh:
        head = fh.read(TEXT_PROBE)
        if _safetensors_header_len(head) is not None:
            header = safetensors_header(path)
            return f"{BAD_SAFETENSORS}: {header}" if isinstance(header, str) else None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) == size)
    except UnicodeDecodeError:
        return None
    return None if b"\0" in head else "looks like a text file, not a weight file"


def _flatten(obj: Any, prefix: str, out: dict[str, Any], depth: int = 0) -> None:
    """Collect the leaves (tensors and anything else) of nested dicts / lists under dotted
    names; CheckpointError for containers nested deeper than MAX_DEPTH."""
    import torch

    if isinstance(obj, torch.Tensor):
        out[prefix or "tensor"] = obj
    elif isinstance(obj, Mapping | list | tuple):
        if depth == MAX_DEPTH:
            raise CheckpointError(
                f"containers nested more than {MAX_DEPTH} levels deep (at {prefix[:60]!r}...): "
                "not a state dict or training checkpoint"
            )
        for key, value in obj.items() if isinstance(obj, Mapping) else enumerate(obj):
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    else:
        out[prefix or "value"] = obj


def _pickle_callables(path: Path) -> list[str] | None:
    """The functions and classes a pickle would call (``module.name``), read from its opcodes
    without running any (:func:`pickletools.genops`); None if it is not a readable pickle."""
    import pickletools

    found, strings = [], []
    try:
        with open(path, "rb") as fh:
            for opcode, arg, _ in pickletools.genops(fh):
                if isinstance(arg, str) and opcode.name != "GLOBAL":
                    strings = [*strings[-1:], arg]
                elif opcode.name in ("GLOBAL", "INST"):
                    found.append(arg.replace(" ", "."))
                elif opcode.name == "STACK_GLOBAL" and len(strings) == 2:
                    found.append(".".join(strings))
    except (ValueError, EOFError, pickle.UnpicklingError, UnicodeDecodeError):
        return None
    return sorted(set(found))


def load_file(path: str | Path) -> dict[str, Any]:
    """The entries of one safetensors or torch file, tensors on the CPU, by name.

    Nested containers (e.g. ``{"model": state_dict, "optimizer": ..., "epoch": 3}``) are
    flattened to dotted names; non-tensor leaves are kept as they are. Never unpickles anything
    but tensors and plain values. Raises CheckpointError saying what is wrong (see
    :func:`file_problem`; a corrupt or truncated torch file; a file that is neither; too deep
    a nesting).
    """
    import torch

    path = Path(path)
    if problem := not_readable_as(path, "a weight file"):
        raise CheckpointError(f"checkpoint {str(path)!r} {problem}")
    if problem := file_problem(path):
        raise CheckpointError(f"checkpoint {str(path)!r} {problem}")
    with open(path, "rb") as fh:
        head = fh.read(len(LEGACY_MAGIC))
    if _safetensors_header_len(head) is not None:
        from matcond.own_weights.tensor_file import ChangedWhileRead, read_tensors

        try:
            return read_tensors(path)
        except ChangedWhileRead as err:
            raise CheckpointError(
                f"checkpoint {str(path)!r} changed while it was read ({err}): read it again "
                "once whatever writes it has finished"
            ) from None
        except OSError as err:  # e.g. an I/O error on a network file system mid-read
            raise CheckpointError(
                f"checkpoint {str(path)!r} cannot be read ({err.strerror or err})"
            ) from None
        except (ValueError, KeyError, TypeError) as err:
            raise CheckpointError(
                f"checkpoint {str(path)!r} is invalid safetensors: {err}"
            ) from None
        except (MemoryError, RuntimeError) as err:  # torch's allocator: e.g. a TB-sized file
            raise CheckpointError(
                f"checkpoint {str(path)!r} ({path.stat().st_size:,} bytes) does not fit in "
                f"memory: {err}"
            ) from None
    is_zip = head.startswith(ZIP_MAGIC)
    what = "neither safetensors nor a torch file"
    if is_zip or head == LEGACY_MAGIC:
        what = "a corrupt or truncated torch file"
    try:
        with warnings.catch_warnings():  # torch warns of a plain pickle's protocol first
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            loaded = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"WeightsUnpickler error:\s*(.*?)(?: Please use|\n|$)", str(err))
        reason = found.group(1) if found else str(err)
        if not re.search("GLOBAL|allowlist", reason) and head.startswith(b"\x80"):
            # a plain pickle (not torch.save's format), which torch cannot read: what it calls
            if (callables := _pickle_callables(path)) is None:
                raise CheckpointError(f"checkpoint {str(path)!r} is {what}: {reason}") from None
            if not callables:
                raise CheckpointError(
                    f"checkpoint {str(path)!r} is a plain pickle, not a torch.save file or "
                    "safetensors"
                ) from None
            reason = f"a plain pickle that calls {', '.join(callables[:5])}"
        elif not re.search("GLOBAL|allowlist", reason):  # a bad opcode, not a callable
            raise CheckpointError(f"checkpoint {str(path)!r} is {what}: {reason}") from None
        raise UnsafeCheckpointError(
            f"refusing to load checkpoint {str(path)!r}: unpickling it needs more than "
            f"tensors and could run code ({reason}). "
            "Save model.state_dict() with torch.save, or convert the file to safetensors."
        ) from None
    except Exception as err:  # torch raises many types for a file that is not a checkpoint
        raise CheckpointError(
            f"checkpoint {str(path)!r} is {what}: {type(err).__name__}: {err}"
        ) from None
    entries: dict[str, Any] = {}
    try:
        _flatten(loaded, "", entries)
    except CheckpointError as err:
        raise CheckpointError(f"checkpoint {str(path)!r}: {err}") from None
    return entries


def load_source(source: Source) -> dict[str, Any]:
    """The entries of every file of ``source`` (a sharded model's shards as one), by name;
    CheckpointError if two shards hold a tensor of the same name, or if the index promises a
    tensor that no shard holds."""
    entries: dict[str, Any] = {}
    for file in source.files:
        part = load_file(file)
        if twice := sorted(set(part) & set(entries)):
            raise CheckpointError(f"shard {str(file)!r} repeats tensors of another: {twice[:5]}")
        entries |= part
    if source.index is not None:
        promised = read_json(source.index)["weight_map"]
        if missing := sorted(set(promised) - set(entries)):
            raise CheckpointError(
                f"index {str(source.index)!r} promises {len(missing)} tensors that no shard "
                f"holds: {missing[:5]}"
            )
    return entries


def model_config(source: Source) -> dict[str, Any]:
    """The ``config.json`` beside ``source``'s weights as a dict ({} when there is none or it is
    not a JSON object)."""
    if source.config is None:
        return {}
    try:
        config = read_json(source.config)
    except CheckpointError:
        return {}
    return config if isinstance(config, dict) else {}
