"""The claims: their validation at parse time, what each measures (on the values per trial of
:mod:`matcond.core.arms`), their evaluation and verdicts, the readings of the papers' unstated
settings, and their pages.
"""
