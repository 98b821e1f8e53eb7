"""A safetensors file's tensors read into memory, one after the other, never memory-mapped.

A memory-mapped file that another process rewrites in place kills its reader with SIGBUS (the
safetensors library maps the file). Read with plain reads, a file that changes under the
reader ends in an error instead: a read that comes up short, or a size, modification time or
inode that differ after the reading from before it. Each tensor is read straight into its own
buffer, so the file's bytes are held once.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

from matcond.core.files import safetensors_header

# safetensors' dtype names (its format's specification) and the torch dtypes they are read as
DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


class ChangedWhileRead(OSError):
    """The file changed (was rewritten, truncated or replaced) while it was read."""


def _identity(stat: os.stat_result) -> tuple[int, int, int, int]:
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of the safetensors file at ``path`` by name. Raises ValueError for a file
    whose header does not fit it (:func:`matcond.core.files.safetensors_header`) or a
    tensor whose dtype is not in :data:`DTYPES` or whose bytes do not match its shape,
    :class:`ChangedWhileRead` if the file changed while it was read (not seen: a rewrite that
    keeps the size within the file system's timestamp resolution), and MemoryError before
    reading tensors larger than the machine's memory."""
    before = os.stat(path)
    header = safetensors_header(path)
    if isinstance(header, str):
        raise ValueError(header)
    entries = {name: entry for name, entry in header.items() if name != "__metadata__"}
    needed = sum(end - begin for begin, end in (e["data_offsets"] for e in entries.values()))
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if needed > memory:
        raise MemoryError(f"{needed:,} bytes of tensors, {memory:,} bytes of memory")
    tensors = {}
    with open(path, "rb") as fh:
        start = 8 + int.from_bytes(fh.read(8), "little")
        for name, entry in entries.items():
            if entry["dtype"] not in DTYPES:
                raise ValueError(f"tensor {name!r} has dtype {entry['dtype']}, not read here")
            dtype, (begin, end) = DTYPES[entry["dtype"]], entry["data_offsets"]
            if math.prod(entry["shape"]) * dtype.itemsize != end - begin:
                raise ValueError(
                    f"tensor {name!r} of shape {entry['shape']} has {end - begin} bytes"
                )
            tensor = torch.empty(entry["shape"], dtype=dtype)
            fh.seek(start + begin)
            if fh.readinto(tensor.view(-1).view(torch.uint8).numpy()) != end - begin:
                raise ChangedWhileRead(f"the file ended inside tensor {name!r}")
            tensors[name] = tensor
    if _identity(os.stat(path)) != _identity(before):
        raise ChangedWhileRead("the file changed while it was read")
    return tensors
