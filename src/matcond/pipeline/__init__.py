"""The run a config asks for, above the experiments, claims and figures it plans (``plan``),
and its bookkeeping: code fingerprints, damaged outputs set aside, the run lock, the last run's
record. Light at parse time.
"""
