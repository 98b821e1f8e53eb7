"""matcond: structural components of weight matrices and Gauss-Newton conditioning.

The math behind the Snakemake workflow lives here; rules and scripts only glue it together.
The functions for your own weights are here too: ``matcond.analyze``, ``matcond.describe``,
``matcond.summarize``, ``matcond.component_errors`` and ``matcond.gauss_newton_condition``
(docs/own-weights.md).
"""

import importlib

# Where each of them lives.
_OWN_WEIGHTS = {
    "analyze": "matcond.own_weights",
    "summarize": "matcond.own_weights",
    "describe": "matcond.own_weights",
    "component_errors": "matcond.own_weights.compare",
    "gauss_newton_condition": "matcond.own_weights.gauss_newton",
}
__all__ = list(_OWN_WEIGHTS)


def __getattr__(name: str):
    """The functions of ``__all__``, imported on first use: by name, not by an import
    statement, so that the rules' code fingerprints (:mod:`matcond.pipeline.fingerprints` follows
    import statements) do not take in that code."""
    if name in _OWN_WEIGHTS:
        return getattr(importlib.import_module(_OWN_WEIGHTS[name]), name)
    raise AttributeError(f"module 'matcond' has no attribute {name!r}")


def __dir__() -> list[str]:
    """What ``dir(matcond)`` lists: the functions of ``__all__`` beside the module's own."""
    return sorted({*globals(), *__all__})
