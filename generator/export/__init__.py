"""Export: winners as `generated_algorithms/<name>.py` modules with provenance; adapters for tuners
that drive the search themselves (ask/tell, an Optuna sampler).

Imports the archive, tuning results and the sandbox's source reader.
"""
