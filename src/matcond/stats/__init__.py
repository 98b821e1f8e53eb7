"""Statistics: bootstrap intervals and the tables of statistics per group, the exact
bootstrap of a median, the heavy-tail rule.
"""
