"""Defaults that rooms below pydantic's weight share with the campaign model: imports nothing.

The run timeout is written here once. It is `[evaluation] timeout`'s default, the sandbox's, and
`tunesmith evaluate --timeout`'s; `tunesmith hpo` uses the run's own stored [evaluation] timeout.
"""

RUN_TIMEOUT_S = 60.0  # wall-clock seconds of one run (one repeat on one task)
