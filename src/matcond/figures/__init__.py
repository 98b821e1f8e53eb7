"""The figures of both papers: the catalog (:mod:`matcond.figures.catalog`, light: read at
parse time), the captions of the report (:mod:`matcond.figures.captions`) and the drawing
code, one module per group of figures (:mod:`matcond.figures.drawing` maps each figure to its
function).
"""
