"""The bottom layer, which every other package may import and which imports none of them:
the config validated against the schema (``config``), the trials it defines and their paths
(``trials``), the result files and their checks (``files``, ``paths``), a user's GN data file
(``gn_data``), values per trial from the tables (``arms``), the workflow's console lines
(``console``). Light at parse time (yaml, jsonschema, ast, numpy); ``arms`` reads tables with
pandas.
"""
