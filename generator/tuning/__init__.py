"""Tuning: Optuna over the hyperparameters a candidate declares; results in RUN_DIR/hpo/.

Imports the archive, task entries and evaluation; the campaign calls it as its last stage.
"""
