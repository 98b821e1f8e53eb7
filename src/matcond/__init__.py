"""matcond: structural components of weight matrices and Gauss-Newton conditioning.

The math behind the Snakemake workflow lives here; rules and scripts only glue it together.
``matcond.analyze`` and ``matcond.summarize`` are :mod:`matcond.own_weights`'s.
"""

import importlib

__all__ = ["analyze", "summarize"]


def __getattr__(name: str):
    """``analyze`` and ``summarize`` from :mod:`matcond.own_weights`, imported on first use:
    by name, not by an import statement, so that the rules' code fingerprints
    (:mod:`matcond.fingerprints` follows import statements) do not take in that code."""
    if name in __all__:
        return getattr(importlib.import_module("matcond.own_weights"), name)
    raise AttributeError(f"module 'matcond' has no attribute {name!r}")
