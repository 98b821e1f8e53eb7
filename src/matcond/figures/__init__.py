"""The figures of both papers, drawn from the tables (one function per figure).

:data:`FIGURES` maps every figure of the catalog (matcond.catalog) to the function of the same
name in its module: ``paper`` (the condition-number paper), ``controls`` (our controls and
analyses), ``depth`` (the depth formula), ``gauss_newton`` (the GN paper). Each takes {table
name: table}, a PNG path and a PDF path; the table ``paper_values``
(matcond.figures.style.PAPER_VALUES; may be absent) holds the papers' values the figure marks
(matcond.claims_check.paper_values).
"""

from matcond.catalog import FIGURES as CATALOG
from matcond.figures import controls, depth, gauss_newton, paper

MODULES = {
    "paper": paper,
    "controls": controls,
    "depth": depth,
    "gauss_newton": gauss_newton,
}
FIGURES = {name: getattr(MODULES[figure.module], name) for name, figure in CATALOG.items()}
