"""The declared interfaces of tasks that come from elsewhere: a task source, and a task measured for real.

A `TaskSource` serves the entries that begin with its name and ':' (`hub:`, `problem:`, `live:`); the
registry (`generator.registry`, kind "task_source") maps the name to it. A `MeasuredTask` is a task whose
objective is measured while a candidate runs (a live kernel on a device) instead of looked up in an answer
key; the evaluation asks the task itself how to measure and score it, so it never imports the room that
defines one (`generator.live`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class TaskSource(Protocol):
    """A kind of task entry, `NAME:REST`, registered under NAME."""

    def load(self, entry: str, hub: Path | None = None, base: Path | None = None) -> list:
        """The Tasks the entry names. Called whenever a task list is loaded (a campaign's train/test/validation
        sets, `tunesmith evaluate --tasks`, `bench --tasks`); `hub` is the benchmark hub of the campaign (None:
        the default), `base` the campaign file's folder for relative paths. Bad entries raise TunesmithError."""
        ...

    def resolve(self, entry: str, base: Path) -> str:
        """The entry in canonical, absolute form, checked. Called once when a campaign starts, before anything
        is written (`resolve_paths`): a problem that cannot run here fails then, not mid-run. The result is
        what the run directory's config.json records, and what `load` gets on resume."""
        ...


@runtime_checkable
class MeasuredTask(Protocol):
    """A task measured while the candidate runs (its key may be empty); the evaluation delegates to it."""

    def make_oracle(self, budget, space=None):
        """The Oracle that answers one run of this task. Called in the evaluating process, once per run, by the
        sandbox host that serves the candidate's objective calls."""
        ...

    def run_job(self, job):
        """Run a sandbox job that contains runs of this task (instead of `sandbox.run_job`): it may hold a
        device for the whole job. Called once per such job, on the executor."""
        ...

    def score(self, traces: list, seed: int = 0):
        """The TaskScore of the runs' traces. Called after the runs, instead of `score_traces`; a task without
        a brute-force answer key may score otherwise than by P and then says so in the score's `note`."""
        ...
