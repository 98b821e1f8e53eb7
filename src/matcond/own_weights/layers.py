"""Which matrices of a checkpoint are analysed, under which name and layer type.

Names (column ``layer``): the tensor's key with the wrappers every analysed key shares
stripped from its front (:data:`WRAPPERS`: ``module.`` of DDP, ``_orig_mod.`` of
``torch.compile``, ``model.`` / ``state_dict.`` of a training checkpoint), and ``.weight`` /
``_weight`` dropped from its end, so that two saves of one model give the same names. The key
itself is column ``tensor``.

Types (column ``layer_type``), from the name and the shape:

- ``attention_q``, ``attention_k``, ``attention_v``, ``attention_o``: ``q_proj`` .. ``o_proj``,
  ``query`` / ``key`` / ``value``, ``q`` / ``k`` / ``v`` / ``o``, ``wq`` .. ``wo``,
  ``out_proj``, ``c_proj`` and BERT's ``attention.output.dense``, when a parent's name holds
  ``attn`` or ``attention`` (``out_proj`` and ``*_proj_weight`` of ``nn.MultiheadAttention``
  always);
- fused projections split into q, k and v (names ``<layer>.q`` etc.): ``in_proj_weight`` of
  ``nn.MultiheadAttention`` (rows q, k, v), ``qkv`` / ``qkv_proj`` / ``Wqkv`` / ``to_qkv``
  (rows q, k, v; sizes from ``config.json``'s heads when it has them, else thirds), GPT-2's
  ``c_attn`` (stored in x out: columns q, k, v, each transposed to out x in), and
  ``query_key_value`` (GPT-NeoX, BLOOM: rows interleaved per head), split only when
  ``config.json`` gives ``num_attention_heads`` and its ``model_type`` is ``gpt_neox`` or
  ``bloom``; otherwise it is one matrix of type ``attention_qkv`` and the note says why;
- ``embedding``: a name with ``emb``, ``wte`` or ``wpe`` in its last part;
- ``conv1d``, ``conv2d``, ``conv3d``: ``*weight`` tensors of 3, 4 or 5 dimensions
  (out, in, *kernel). With ``conv="reshaped"`` (the default: one row per layer) the kernel
  is one out x (in * prod(kernel)) matrix, the map from an input patch to the output. With
  ``conv="per_position"`` each kernel position is one out x in matrix, named
  ``<layer>[i,j]``: the matrix the layer applies to the input at that offset (the matrices
  whose pooled eigenvalues WeightWatcher fits);
- ``attention_qk``, ``attention_ov``: per head, the products W_Q,h^T W_K,h and W_O,h W_V,h
  of each attention layer whose q, k, v and o are found, when the number of heads is known
  (``config.json``, or an ``nn.MultiheadAttention``): :func:`attention_products`;
- ``linear``: any other 2-D tensor (GPT-2's ``c_fc`` and ``c_proj``, stored in x out, are
  transposed to out x in); ``tensor``: any other tensor of 3 or more dimensions
  (e.g. a stack of experts), reshaped to its first dimension x the rest. Leading dimensions of
  size 1 are dropped first (a ``(1, 197, 768)`` position embedding is a 197 x 768 matrix).

Skipped, with the reason (:func:`skipped_entries`): optimizer and scheduler state,
normalisation buffers, non-tensors, 0-D and 1-D tensors, empty and non-floating tensors,
tensors of more than ``max_elements`` elements (read from the shape: nothing is allocated),
and tied weights (:func:`tied_entries`: GPT-2's ``lm_head`` is its ``wte``), analysed once,
under the first name.

Attention layers whose per-head products cannot be formed (the number of heads unknown, or
shapes that do not fit it) are named in a warning that says how to give the heads.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import torch

# Largest tensor analysed by default (config key checkpoint_max_elements; see the schema).
MAX_ELEMENTS = 2**24
CONV_CONVENTIONS = ("reshaped", "per_position")
# Keys whose entries are optimizer / scheduler state, and an optimizer's per-parameter state.
OPTIMIZER_KEYS = {
    "optimizer",
    "optimizers",
    "optimizer_state",
    "optimizer_state_dict",
    "optim",
    "opt_state",
    "scheduler",
    "lr_scheduler",
    "scaler",
    "grad_scaler",
}
OPTIMIZER_STATE = re.compile(r"(^|\.)state\.\d+\.[a-z_]+$")
BUFFERS = {"running_mean", "running_var", "num_batches_tracked"}
WRAPPERS = {"module", "_orig_mod", "model", "state_dict", "model_state_dict", "model_state"}
ATTENTION_PARTS = {
    **dict.fromkeys(("q_proj", "query", "q", "wq", "q_proj_weight"), "q"),
    **dict.fromkeys(("k_proj", "key", "k", "wk", "k_proj_weight"), "k"),
    **dict.fromkeys(("v_proj", "value", "v", "wv", "v_proj_weight"), "v"),
    **dict.fromkeys(("o_proj", "out_proj", "o", "wo", "c_proj"), "o"),
}
FUSED_ROWS = {"in_proj", "qkv", "qkv_proj", "wqkv", "to_qkv"}
GPT2_CONV1D = {"c_proj", "c_fc"}  # GPT-2's Conv1D weights, stored in x out
PER_HEAD_FUSED = {"gpt_neox", "bloom"}  # model types whose query_key_value interleaves heads


@dataclass
class Matrix:
    """One analysed matrix: its name, the key of the tensor it comes from, its layer type,
    the matrix (a 2-D view, out x in), why it is analysed as it is ('' when plainly) and the
    stored tensor's shape."""

    layer: str
    tensor: str
    layer_type: str
    matrix: torch.Tensor
    note: str = ""
    tensor_shape: tuple[int, ...] = ()


def skip_reason(name: str, value: Any, max_elements: int = MAX_ELEMENTS) -> str | None:
    """Why entry ``name`` of a checkpoint is not analysed as a weight matrix (None: it is)."""
    import torch

    if not isinstance(value, torch.Tensor):
        return f"not a tensor ({type(value).__name__})"
    if OPTIMIZER_KEYS & set(name.split(".")) or OPTIMIZER_STATE.search(name):
        return "optimizer or scheduler state"
    if name.rsplit(".", 1)[-1] in BUFFERS:
        return "normalisation buffer"
    if value.ndim < 2 or value.ndim > 2 and len(_squeezed(value.shape)) < 2:
        return f"{value.ndim}-D tensor of shape {tuple(value.shape)} (bias, scale or token)"
    if value.numel() == 0:
        return "empty tensor"
    if not value.is_floating_point():
        return f"not floating point ({str(value.dtype).removeprefix('torch.')})"
    if (n := value.numel()) > max_elements:  # from the shape: nothing is read or copied
        return (
            f"{value.shape[0]}x{n // value.shape[0]} = {n} elements, above the limit of "
            f"{max_elements} (config key checkpoint_max_elements)"
        )
    return None


def _fingerprint(tensor: torch.Tensor) -> bytes:
    """64 of the tensor's elements, evenly spaced, as float64 bytes: equal tensors have equal
    fingerprints, and tensors with equal fingerprints are compared in full."""
    import torch

    flat = tensor.reshape(-1)
    return flat[torch.linspace(0, flat.numel() - 1, 64).long()].double().numpy().tobytes()


def _is_constant(tensor: torch.Tensor) -> bool:
    return bool((tensor == tensor.reshape(-1)[0]).all())


def tied_entries(entries: Mapping[str, Any], max_elements: int = MAX_ELEMENTS) -> dict[str, str]:
    """The analysable entries that repeat an earlier one (in the file's order), each with the
    earlier one's key: the same tensor (the same memory, shape and strides: tied weights, as
    GPT-2's ``lm_head`` and ``wte``), or equal values under another name (a tie that saving
    lost). Constant tensors (zeros, say) are equal by their initialisation, not tied: equal
    values of those do not count."""
    import torch

    groups: dict[tuple, list[str]] = {}
    for key, value in entries.items():
        if skip_reason(key, value, max_elements) is None:
            shape = (tuple(value.shape), value.dtype, str(value.device))
            groups.setdefault((*shape, _fingerprint(value)), []).append(key)
    tied = {}
    for keys in (k for k in groups.values() if len(k) > 1):
        kept: list[str] = []
        for key in keys:
            a = entries[key]
            for first in kept:
                b = entries[first]
                same = a.data_ptr() == b.data_ptr() and a.stride() == b.stride()
                if same or (torch.equal(a, b) and not _is_constant(a)):
                    tied[key] = first
                    break
            else:
                kept.append(key)
    return tied


def skipped_entries(entries: Mapping[str, Any], max_elements: int = MAX_ELEMENTS) -> pd.DataFrame:
    """One row per entry that is not analysed: ``tensor``, ``tensor_shape`` ('' for a
    non-tensor), ``reason`` (:func:`skip_reason`, or the entry it is tied to)."""
    import pandas as pd

    tied = {
        key: f"tied to {first!r} (the same weights under another name): analysed once, "
        "under that name"
        for key, first in tied_entries(entries, max_elements).items()
    }
    rows = [
        {"tensor": name, "tensor_shape": "x".join(map(str, getattr(v, "shape", ()))), "reason": r}
        for name, v in entries.items()
        if (r := skip_reason(name, v, max_elements) or tied.get(name)) is not None
    ]
    return pd.DataFrame(rows, columns=["tensor", "tensor_shape", "reason"])


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` without its leading 1s, down to 2 dimensions."""
    while len(shape) > 2 and shape[0] == 1:
        shape = shape[1:]
    return shape


def canonical_names(keys: list[str]) -> dict[str, str]:
    """Each key's layer name: the leading wrappers all ``keys`` share stripped, ``.weight`` or
    ``_weight`` dropped from the end (see the module docstring)."""
    parts = [key.split(".") for key in keys]
    start = 0
    while (
        parts
        and all(len(p) - (p[-1] == "weight") > start + 1 for p in parts)
        and len({p[start] for p in parts}) == 1
        and parts[0][start] in WRAPPERS
    ):
        start += 1
    names = {}
    for key, p in zip(keys, parts, strict=True):
        name = ".".join(p[start:])
        name = name.removesuffix(".weight") if name.endswith(".weight") else name
        names[key] = re.sub(r"(in_proj|[qkv]_proj)_weight$", r"\1", name)
    return names


def config_int(config: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` that ``config`` (a model's config.json) gives, as a positive
    integer; None if it gives none of them; CheckpointError naming the field where it gives
    something else (``"8"``, ``8.0``, ``-1``)."""
    from matcond.own_weights.load import CheckpointError

    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CheckpointError(f"config.json field {key} is {value!r}, not a positive integer")
        return value
    return None


def _is_attention(parents: list[str]) -> bool:
    return any("attn" in p.lower() or "attention" in p.lower() for p in parents)


def _fused_sizes(rows: int, config: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """Row counts of q, k, v in a fused projection: from the config's heads if it gives them
    (grouped-query attention: fewer k, v heads), else thirds; None if they do not fit."""
    heads = config_int(config, "num_attention_heads", "n_head")
    if heads is not None:
        kv_heads = config_int(config, "num_key_value_heads") or heads
        hidden = config_int(config, "hidden_size", "n_embd") or 0
        head_dim = config_int(config, "head_dim") or hidden // heads
        sizes = (heads * head_dim, kv_heads * head_dim, kv_heads * head_dim)
        if sum(sizes) == rows:
            return sizes
    return (rows // 3,) * 3 if rows % 3 == 0 else None


def _split(layer: str, key: str, w: torch.Tensor, kind: str, config: Mapping) -> list[Matrix]:
    """The q, k, v matrices of a fused projection ``w`` (``kind``: its last name part)."""
    if kind == "c_attn":  # GPT-2's Conv1D: stored in x out
        if w.shape[1] % 3:
            return [Matrix(layer, key, "attention_qkv", w, "c_attn columns not a multiple of 3")]
        parts = w.T.chunk(3)
    elif kind == "query_key_value":
        heads = config_int(config, "num_attention_heads", "n_head")
        model_type = config.get("model_type")
        if model_type not in PER_HEAD_FUSED or heads is None or w.shape[0] % (3 * heads):
            why = (
                "fused q/k/v interleaved per head: split only for a config.json with "
                f"num_attention_heads and model_type {' or '.join(sorted(PER_HEAD_FUSED))} "
                f"(here {model_type!r}); analysed as one matrix"
            )
            return [Matrix(layer, key, "attention_qkv", w, why)]
        grouped = w.reshape(heads, 3, w.shape[0] // heads // 3, w.shape[1])
        parts = [grouped[:, i].reshape(-1, w.shape[1]) for i in range(3)]
    else:
        sizes = _fused_sizes(w.shape[0], config)
        if sizes is None:
            why = f"fused q/k/v of {w.shape[0]} rows: not a multiple of 3 and no heads in config"
            return [Matrix(layer, key, "attention_qkv", w, why)]
        parts = w.split(sizes)
    return [
        Matrix(f"{layer}.{p}", key, f"attention_{p}", m) for p, m in zip("qkv", parts, strict=True)
    ]


def matrices(
    entries: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    conv: str = "reshaped",
    max_elements: int = MAX_ELEMENTS,
    known_types: Mapping[str, str] | None = None,
) -> list[Matrix]:
    """The matrices analysed among ``entries`` (those without a :func:`skip_reason`), in the
    file's order, named and typed as the module docstring says; ``config`` is the model's
    ``config.json`` ({} or None: none); ``known_types``: the layer type of a key where the
    module is known (an ``nn.Embedding``'s weight), whatever its name."""
    if conv not in CONV_CONVENTIONS:
        raise ValueError(f"conv must be one of {CONV_CONVENTIONS}, not {conv!r}")
    config = config or {}
    kept = [key for key, value in entries.items() if skip_reason(key, value, max_elements) is None]
    names = canonical_names(kept)  # tied ones included: a tie changes no other name
    tied = tied_entries(entries, max_elements)
    found = []
    for key in (k for k in kept if k not in tied):
        tensor, layer = entries[key], names[key]
        *parents, last = layer.split(".")
        last = last.lower()
        if tensor.ndim in (3, 4, 5) and key.endswith("weight"):
            kind = f"conv{tensor.ndim - 2}d"
            if conv == "reshaped":
                found.append(Matrix(layer, key, kind, tensor.reshape(tensor.shape[0], -1)))
                continue
            for position in itertools.product(*map(range, tensor.shape[2:])):
                name = f"{layer}[{','.join(map(str, position))}]"
                found.append(Matrix(name, key, kind, tensor[(slice(None), slice(None), *position)]))
            continue
        tensor = tensor.reshape(_squeezed(tensor.shape))
        if last in GPT2_CONV1D:
            tensor = tensor.mT  # stored in x out
        if tensor.ndim > 2:
            found.append(Matrix(layer, key, "tensor", tensor.reshape(tensor.shape[0], -1)))
        elif last in ("c_attn", "query_key_value") or (
            last in FUSED_ROWS and (last == "in_proj" or _is_attention(parents))
        ):
            found += _split(layer, key, tensor, last, config)
        elif last in ATTENTION_PARTS and (_is_attention(parents) or key.endswith("proj_weight")):
            found.append(Matrix(layer, key, f"attention_{ATTENTION_PARTS[last]}", tensor))
        elif (
            last == "out_proj"
            or last == "dense"
            and parents[-1:] == ["output"]
            and _is_attention(parents)
        ):
            found.append(Matrix(layer, key, "attention_o", tensor))
        elif re.search("emb|^wte$|^wpe$", last) or (known_types or {}).get(key) == "embedding":
            found.append(Matrix(layer, key, "embedding", tensor))
        else:
            found.append(Matrix(layer, key, "linear", tensor))
    for m in found:
        m.tensor_shape = tuple(entries[m.tensor].shape)
    return found + attention_products(found, config)


def _attention_block(m: Matrix) -> str:
    """The name of the attention layer a q/k/v/o matrix belongs to: its name up to the last
    part before the matrix's own (a fused part's: the fused projection's) that holds ``attn``
    or ``attention``, else its parent. GPT-2's ``h.0.attn.c_attn.q`` and ``h.0.attn.c_proj``
    both belong to ``h.0.attn``."""
    parts = m.layer.split(".")
    fused = m.layer.endswith((".q", ".k", ".v")) and m.layer_type != "attention_o"
    own = len(parts) - (2 if fused else 1)
    marked = [
        i for i in range(own) if "attn" in parts[i].lower() or "attention" in parts[i].lower()
    ]
    return ".".join(parts[: marked[-1] + 1] if marked else parts[:own])


def attention_products(found: list[Matrix], config: Mapping[str, Any]) -> list[Matrix]:
    """Per head h of each attention layer with one q, k, v and o matrix, the products the
    layer's function fixes (the factors are not: W_Q -> R W_Q, W_K -> R^-T W_K changes
    nothing): ``<layer>.head{h}.qk`` = W_Q,h^T W_K,h and ``<layer>.head{h}.ov`` = W_O,h W_V,h,
    d x d of rank <= the head dimension (so their condition number is inf and the pseudo
    condition number is the one to read), computed in float64. W_Q,h are the rows of head
    h, W_O,h the columns; grouped-query k, v heads are shared by H / KV query heads. Needs
    the number of heads (``num_attention_heads`` or ``n_head`` in ``config``); none without
    it, and a warning names the layers that get none and says how to give it."""
    blocks: dict[str, dict[str, list[Matrix]]] = {}
    for m in found:
        if m.layer_type in ("attention_q", "attention_k", "attention_v", "attention_o"):
            parts = blocks.setdefault(_attention_block(m), {})
            parts.setdefault(m.layer_type[-1], []).append(m)
    blocks = {
        block: parts
        for block, parts in blocks.items()
        if sorted(parts) == ["k", "o", "q", "v"] and all(len(p) == 1 for p in parts.values())
    }
    heads = config_int(config, "num_attention_heads", "n_head")
    if heads is None:
        _warn_no_products([_shown(b) for b in blocks], "the number of heads is unknown")
        return []
    products, unfit = [], []
    for block, parts in blocks.items():
        q, k, v, o = (parts[p][0].matrix.double() for p in "qkvo")  # products in float64
        head_dim = q.shape[0] // heads
        kv_heads = k.shape[0] // head_dim if head_dim and k.shape[0] % head_dim == 0 else 0
        fits = head_dim and q.shape[0] % heads == 0 and o.shape[1] == q.shape[0]
        fits = fits and kv_heads and heads % kv_heads == 0 and v.shape == k.shape
        if not fits or k.shape[1] != q.shape[1]:
            unfit.append(
                f"{_shown(block)} (q {tuple(q.shape)}, k {tuple(k.shape)}, o {tuple(o.shape)})"
            )
            continue
        for h in range(heads):
            rows = slice(h * head_dim, (h + 1) * head_dim)
            g = h // (heads // kv_heads)
            shared = slice(g * head_dim, (g + 1) * head_dim)
            for kind, product, (a, b) in (
                ("qk", q[rows].mT @ k[shared], (parts["q"][0], parts["k"][0])),
                ("ov", o[:, rows] @ v[shared], (parts["o"][0], parts["v"][0])),
            ):
                products.append(
                    Matrix(
                        f"{block}.head{h}.{kind}".lstrip("."),
                        f"{a.tensor} x {b.tensor}",
                        f"attention_{kind}",
                        product,
                        tensor_shape=tuple(product.shape),
                    )
                )
    _warn_no_products(unfit, f"their shapes do not fit {heads} heads")
    return products


def _shown(block: str) -> str:
    return repr(block) if block else "the top-level attention"


def _warn_no_products(blocks: list[str], why: str) -> None:
    """Warn that the attention layers ``blocks`` (as shown) get no per-head products, why, and
    how to give the number of heads (nothing for no layer)."""
    if not blocks:
        return
    shown = ", ".join(blocks[:3]) + (", ..." if len(blocks) > 3 else "")
    warnings.warn(
        f"{len(blocks)} attention layer(s) ({shown}) get no per-head products (attention_qk, "
        f"attention_ov): {why}. Give the number of heads as matcond.analyze(..., "
        "config={'num_attention_heads': H}) (describe and component_errors take config= "
        "too), or put the model's config.json, with num_attention_heads or n_head, beside the "
        "weights",
        UserWarning,
        stacklevel=3,
    )
