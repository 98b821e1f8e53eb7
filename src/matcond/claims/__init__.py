"""The claims: their validation at parse time, the values per trial (arms), their evaluation
and verdicts, the readings of the papers' unstated settings, and their pages.
"""
