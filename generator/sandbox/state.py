"""What the evaluating side of a sandbox host (`sandbox.host.Host`) knows about the job it serves and the
run in progress: one object each, made fresh for every job and every run, so nothing of an earlier job
or run can leak into the next one on a pooled host.
"""

from __future__ import annotations

import selectors
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from generator.sandbox.jobs import Job, RunOutcome, SandboxConfig
from generator.sandbox.streams import OutputTail
from generator.scoring.fitness import CandidateError
from generator.scoring.oracle import Oracle

if TYPE_CHECKING:
    from generator.tasks.space import SearchSpace


@dataclass
class RunState:
    """One run, from its `RunEvent.START` to its end (Host._finish_run). Before the start every field
    is at its default: a request then is out of turn."""

    started: bool = False  # the run's optimizer call has begun (RunEvent.START)
    t: float = 0.0  # time.monotonic() at the start: the run's wall-clock time counts from here
    protections: dict = field(default_factory=dict)  # the walls the run got, as it reported them
    answered: int = 0  # configurations the oracle evaluated for it
    stopped: bool = False  # the oracle said stop (budget spent): the run has STOP_GRACE_S to return
    done: bool = False  # the run said it finished (Request.DONE)
    error: CandidateError | None = None  # the candidate raised (RunEvent.ERROR)
    ended: bool = False  # ended by us at its deadline, budget spent or cut: scored on its trace, not killed
    cut: bool = False  # ended by cut_slow_runs before its budget was spent


@dataclass
class JobState:
    """One job on a host, from `Host.serve` to its `JobOutcome`."""

    job: Job
    cfg: SandboxConfig
    spaces: list[SearchSpace]  # one per task of the job
    output: OutputTail  # the host's captured stdout and stderr
    t0: float  # time.monotonic() when the job was sent
    deadline: float  # the current limit: the host's start-up, then each run's wall-clock limit
    sel: selectors.BaseSelector | None = None  # what the serving loop waits on (the run's pipe joins it)
    runs: list[RunOutcome] = field(default_factory=list)  # the runs that have ended, in order
    k: int = 0  # the run in progress (an index into job.runs)
    run: RunState = field(default_factory=RunState)
    oracle: Oracle | None = None  # the run in progress's evaluator: its trace is all the score comes from
    n_rows: int = 0  # the size of the run's search space (valid rows)
    ready: bool = False  # the host has loaded the job (HostEvent.READY)
    running: bool = False  # a run was started and has not ended
    idle: bool = False  # the host has finished every run (HostEvent.IDLE)
    host_gone: bool = False  # the host's control pipe closed: it died
