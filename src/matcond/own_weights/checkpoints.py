"""The checkpoints a source stands for (a file, a folder of a model or of a run's
checkpoints, an nn.Module, a state dict), each loaded when reached: what
:func:`matcond.own_weights.analyze`, :mod:`.compare` and :mod:`.gauss_newton` read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def checkpoint_entries(
    source: str | Path | torch.nn.Module | Mapping[str, Any],
    config: Mapping | None,
    unreadable: list[tuple[str, str]] | None = None,
) -> Iterator[tuple[str, int | None, dict[str, Any], dict[str, Any], dict[str, str]]]:
    """(name, step, entries, model config, layer types known from the modules) of each
    checkpoint ``source`` stands for, each loaded when reached (a run's checkpoints are not
    held in memory together); what the path stands for is checked first. With a list
    ``unreadable``, a checkpoint of several that cannot be read is left out and listed there
    as (name, why), unless none can be read."""
    if isinstance(source, str | Path):
        from matcond.own_weights.load import CheckpointError, load_source, model_config, sources

        found = sources(source)
        for s in found:
            try:
                entries = load_source(s)
            except CheckpointError as err:
                if unreadable is None or len(found) == 1:
                    raise
                unreadable.append((s.name, str(err)))
                if len(unreadable) == len(found):
                    raise CheckpointError(
                        f"no checkpoint of {str(source)!r} can be read: {err}"
                    ) from None
                continue
            yield s.name, s.step, entries, dict(config or model_config(s)), {}
    elif hasattr(source, "state_dict"):  # an nn.Module; a Hugging Face model has its config
        import torch

        own = getattr(source, "config", None)
        own = own.to_dict() if hasattr(own, "to_dict") else {}
        embeddings = (torch.nn.Embedding, torch.nn.EmbeddingBag)
        types = {
            f"{name}.weight".lstrip("."): "embedding"
            for name, module in source.named_modules()
            if isinstance(module, embeddings)
        }
        heads = {
            m.num_heads for m in source.modules() if isinstance(m, torch.nn.MultiheadAttention)
        }
        if len(heads) == 1:  # the heads of the attention layers, where they agree
            own.setdefault("num_attention_heads", heads.pop())
        entries = dict(source.state_dict())
        yield type(source).__name__, None, entries, dict(config or own), types
    else:
        yield "state_dict", None, dict(source), dict(config or {}), {}


def single_checkpoint(
    source: str | Path | torch.nn.Module | Mapping[str, Any], config: Mapping | None, what: str
) -> tuple[str, int | None, dict[str, Any], dict[str, Any], dict[str, str]]:
    """The :func:`checkpoint_entries` of a source of one checkpoint; ValueError naming it as
    ``what`` if it holds several (counted without loading them)."""
    from matcond.own_weights.load import sources

    if isinstance(source, str | Path) and (count := len(sources(source))) != 1:
        raise ValueError(f"{what} holds {count} checkpoints; give one of them")
    return next(checkpoint_entries(source, config))
