"""The condition-number paper's figures and our controls, drawn from the tables.

:data:`FIGURES` maps a figure's name (matcond.catalog) to the function that draws it.
"""

from matcond.figures import controls, paper

FIGURES = {
    name: getattr(module, name)
    for module in (paper, controls)
    for name in dir(module)
    if name.startswith(("fig", "ctrl_", "exp_")) or name in ("theory", "readings")
}
