"""matcond: structural components of weight matrices and Gauss-Newton conditioning.

The math behind the Snakemake workflow lives here; rules and scripts only glue it together.
"""
