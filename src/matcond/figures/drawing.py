"""Every figure of the catalog (matcond.figures.catalog) mapped to its drawing function.

:data:`FIGURES` maps a figure's name to the function of the same name in its module:
``paper`` (the condition-number paper), ``controls`` (our controls and analyses), ``depth``
(the depth formula), ``gauss_newton`` and ``gn_training`` (the GN paper); :func:`drawing`
adds the overview of an experiment none of them draws (:mod:`matcond.figures.overview`).
Each takes {table name: table}, a PNG path and a PDF path; the table ``paper_values``
(matcond.figures.style.PAPER_VALUES; may be absent) holds the papers' values the figure
marks (matcond.claims.check.paper_values). :func:`finished_tables` reads a figure's tables
from a finished run (the every-figure test, benchmarks/figure_bench.py).
"""

from functools import partial
from pathlib import Path

import pandas as pd

from matcond.core.files import read_parquet
from matcond.figures import controls, depth, gauss_newton, gn_training, paper
from matcond.figures.catalog import FIGURES as CATALOG
from matcond.figures.overview import draw_overview, entry, experiment_of
from matcond.figures.style import PAPER_VALUES

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


def finished_tables(results: Path, name: str) -> dict[str, pd.DataFrame]:
    """The tables figure ``name`` draws, read from a finished run's ``results`` directory
    (those it has), with an empty table of papers' values."""
    figure = entry(name)
    names = [*figure.experiments, *figure.optional, *figure.tables]
    paths = {n: results / "tables" / f"{n}.parquet" for n in names}
    paths |= {f"{n}_per_trial": results / "per_trial" / f"{n}.parquet" for n in figure.per_trial}
    tables = {n: read_parquet(p) for n, p in paths.items() if p.exists()}
    tables[PAPER_VALUES] = pd.DataFrame([])
    return tables
