"""Evaluation: a candidate's source x tasks x repeats -> Fitness, on local processes or Dask.

Static checks, sandbox jobs sent to an executor, live runs, P from the traces. Imports the rooms
below it (tasks, scoring, sandbox, live); never the LLM or the loop.
"""
