"""The workflow's plumbing, light at parse time: the config, the trials and their paths,
the result files, damaged outputs, code fingerprints.
"""
