"""Every figure of the catalog (matcond.figures.catalog) mapped to its drawing function.

:data:`FIGURES` maps a figure's name to the function of the same name in its module:
``paper`` (the condition-number paper), ``controls`` (our controls and analyses), ``depth``
(the depth formula), ``gauss_newton`` and ``gn_training`` (the GN paper); :func:`drawing`
adds the overview of an experiment none of them draws (:mod:`matcond.figures.overview`).
Each takes {table name: table}, a PNG path and a PDF path; the table ``paper_values``
(matcond.figures.style.PAPER_VALUES; may be absent) holds the papers' values the figure
marks (matcond.claims.check.paper_values).
"""

from functools import partial

from matcond.figures import controls, depth, gauss_newton, gn_training, paper
from matcond.figures.catalog import FIGURES as CATALOG
from matcond.figures.overview import draw_overview, experiment_of

MODULES = {
    "paper": paper,
    "controls": controls,
    "depth": depth,
    "gauss_newton": gauss_newton,
    "gn_training": gn_training,
}
FIGURES = {name: getattr(MODULES[figure.module], name) for name, figure in CATALOG.items()}


def drawing(name: str):
    """The function that draws figure ``name``: its own, or an experiment's overview."""
    experiment = experiment_of(name)
    return partial(draw_overview, experiment=experiment) if experiment else FIGURES[name]
