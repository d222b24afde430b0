"""Candidate: a candidate optimizer's source, read and edited through its syntax tree, never run.

checks.py: the static checks before a candidate goes to the sandbox (it parses, has the interface,
declares well-formed hyperparameters); source.py: its optimizer class, hyperparameters and imports, and
new default values written in place for export. Imports `scoring` (the error type) and nothing above;
the sandbox, evaluation, tuning and export use it.
"""
