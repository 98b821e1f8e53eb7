"""The figure of an experiment that no catalogued figure draws (``overview_{experiment}``):
its errors per component at the last epoch, one point per setting, so that a new experiment
has a figure without a catalog entry or drawing code.

Light at import (the Snakefile reads :func:`overview_figure` at parse time); the drawing
imports matplotlib when it draws.
"""

from __future__ import annotations

from matcond.figures.catalog import FIGURES, Figure, caption

PREFIX = "overview_"
CATEGORY = "Other experiments"


def overview_figure(experiment: str) -> Figure:
    """The catalog entry of ``experiment``'s overview."""
    return Figure(
        (experiment,),
        CATEGORY,
        module="overview",
        caption=caption("overview", experiment=experiment),
    )


def experiment_of(name: str) -> str | None:
    """The experiment whose overview is figure ``name``, or None for another figure."""
    experiment = name.removeprefix(PREFIX)
    return experiment if experiment and experiment != name else None


def entry(name: str) -> Figure:
    """Figure ``name``'s catalog entry: the catalog's, or an experiment's overview."""
    experiment = experiment_of(name)
    return overview_figure(experiment) if experiment else FIGURES[name]


def draw_overview(tables: dict, png: str, pdf: str, experiment: str) -> None:
    """Draw ``experiment``'s overview from its table (``tables[experiment]``)."""
    from matcond.condition_number.components import component_names
    from matcond.figures.marks import legend_outside
    from matcond.figures.style import (
        error_axis,
        figure,
        interval_points,
        n_label,
        product_rows,
        save,
    )

    rows = product_rows(tables[experiment])
    columns = list(rows.columns)
    varied = columns[columns.index("experiment") + 1 : columns.index("matrix")]
    label = (
        rows[varied].astype(str).apply(lambda r: ", ".join(f"{k} {v}" for k, v in r.items()), 1)
        if varied
        else "all trials"
    )
    rows = rows.assign(setting=label)
    # every component in compare's order but the log error (absolute, another scale) and
    # the effective ranks (small integers, whose zero errors would stretch the log axis)
    present = set(rows["component"])
    shown = {
        c: c.replace("_", " ")
        for c in component_names(())
        if c in present and c != "log_condition_number"
    }
    fig, ((ax,),) = figure(width=8)
    interval_points(ax, rows, "component", shown, hue="setting")
    error_axis(ax)
    ax.set_title(f"{experiment} ({n_label(rows)})")
    legend_outside(ax, fontsize=7)
    save(fig, png, pdf)
