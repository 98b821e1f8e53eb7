"""matcond: structural components of weight matrices and Gauss-Newton conditioning.

The math behind the Snakemake workflow lives here; rules and scripts only glue it together.
``matcond.analyze``, ``matcond.summarize`` and ``matcond.component_errors`` are
:mod:`matcond.own_weights`'s.
"""

import importlib

__all__ = ["analyze", "component_errors", "summarize"]


def __getattr__(name: str):
    """The functions of :mod:`matcond.own_weights` named in ``__all__``, imported on first use:
    by name, not by an import statement, so that the rules' code fingerprints
    (:mod:`matcond.fingerprints` follows import statements) do not take in that code."""
    if name in __all__:
        return getattr(importlib.import_module("matcond.own_weights"), name)
    raise AttributeError(f"module 'matcond' has no attribute {name!r}")
