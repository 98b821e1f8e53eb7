"""Safetensors files read without a memory map: the safetensors library's tensors, and an
error, not SIGBUS or a mixed read, for a file that changes while it is read."""

import errno

import pytest
import torch
from safetensors.torch import load_file, save_file

from matcond.own_weights import tensor_file
from matcond.own_weights.load import CheckpointError
from matcond.own_weights.load import load_file as load_checkpoint
from matcond.own_weights.tensor_file import DTYPES, read_tensors


def tensors_of_every_dtype() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    out = {}
    for name, dtype in DTYPES.items():
        if dtype.is_floating_point:
            out[name] = torch.randn(5, 3, generator=gen).to(dtype)
        elif dtype == torch.bool:
            out[name] = torch.randint(0, 2, (4, 2), generator=gen).bool()
        else:
            out[name] = torch.randint(0, 100, (7,), generator=gen).to(dtype)
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.empty(0, 4)
    return out


def test_every_dtype_reads_as_the_safetensors_library_reads_it(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file(tensors_of_every_dtype(), str(path), metadata={"format": "pt"})
    ours, theirs = read_tensors(path), load_file(str(path))
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert ours[name].dtype == tensor.dtype and ours[name].shape == tensor.shape, name
        assert torch.equal(ours[name].view(-1).view(torch.uint8), tensor.view(-1).view(torch.uint8))


@pytest.mark.parametrize("change", ["rewritten", "truncated"])
def test_a_file_that_changes_while_it_is_read_is_one_clear_error(tmp_path, monkeypatch, change):
    """Another process rewrites the file in place (a longer tensor) or truncates it between
    the reader's parse of the header and its reads: the reader says so, naming the file. A
    memory-mapped read of a truncated file was killed by SIGBUS."""
    path = tmp_path / "w.safetensors"
    save_file({"w": torch.ones(64, 64)}, str(path))
    parse = tensor_file.safetensors_header

    def parse_then_change(p):
        header = parse(p)
        if change == "truncated":
            with open(path, "r+b") as fh:
                fh.truncate(path.stat().st_size // 2)
        else:
            save_file({"w": torch.zeros(64, 65)}, str(path))
        return header

    monkeypatch.setattr(tensor_file, "safetensors_header", parse_then_change)
    with pytest.raises(CheckpointError, match=r"w\.safetensors' changed while it was read"):
        load_checkpoint(path)


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_invalid(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    save_file({"w": torch.ones(4, 4)}, str(path))
    header = tensor_file.safetensors_header(path)
    header["w"]["shape"] = [4, 5]
    monkeypatch.setattr(tensor_file, "safetensors_header", lambda p: header)
    with pytest.raises(ValueError, match=r"tensor 'w' of shape \[4, 5\] has 64 bytes"):
        read_tensors(path)


def test_an_io_error_while_reading_is_one_clear_error(tmp_path, monkeypatch):
    """A read that fails (e.g. a network file system gone mid-read) names the file and the
    system's reason, as a CheckpointError, not an OSError from deep inside the reader."""
    path = tmp_path / "w.safetensors"
    save_file({"w": torch.ones(8, 8)}, str(path))

    class FailingRead:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def readinto(self, buffer):
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(
        tensor_file, "open", lambda p, mode: FailingRead(open(p, mode)), raising=False
    )
    with pytest.raises(CheckpointError, match=r"w\.safetensors' cannot be read \(Input/output"):
        load_checkpoint(path)
