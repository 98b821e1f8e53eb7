"""matcond: structural components of weight matrices and Gauss-Newton conditioning.

The math behind the Snakemake workflow lives here; rules and scripts only glue it together.
"""

from matcond.own_weights import analyze, summarize

__all__ = ["analyze", "summarize"]
