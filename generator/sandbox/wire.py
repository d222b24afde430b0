"""The sandbox's message types: every byte and JSON kind that passes between the evaluating process,
a sandbox host and its runs, named once (the layout of the frames is in `sandbox.streams`).

Three byte channels, each with its own frames, and two JSON channels:

- run -> evaluator, on the run's request pipe: `Request` frames (type byte + int32);
- evaluator -> run, on the run's response pipe: `Answer` frames (type byte + two float64);
- evaluator -> host, on the control socket: `Command` bytes, after the pickled job;
- `RunEvent`: the JSON kinds a run (or the host, setting up the run) sends in a `Request.JSON` frame;
- `HostEvent`: the JSON kinds the host sends on its control pipe (JSON frames only).

The values are the bytes and strings on the wire: a running host of the same version, and every
recorded protocol, reads them unchanged. The members are `bytes`/`str` themselves, so they pack with
`struct` and compare equal to what a channel reads.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class Request(bytes, Enum):
    """What a run asks of (or tells) the evaluator."""

    EVALUATE = b"E"  # evaluate the valid configuration at this row (the int); the answer is an `Answer`
    LOCAL = b"L"  # a call answered in the run (a revisit, or outside the space): counted, never answered
    JSON = b"J"  # the int is the length of the JSON message (a `RunEvent`) that follows
    DONE = b"D"  # the run has finished; its int is ignored (figures come from the evaluator's own counts)


class Answer(bytes, Enum):
    """The evaluator's answer to `Request.EVALUATE`."""

    VALUE = b"V"  # the configuration's value, and the budget spent so far
    STOP = b"S"  # the budget is spent: the run must stop (StopCriterionReached)


class Command(bytes, Enum):
    """What the evaluator tells a sandbox host between runs."""

    RUN = b"R"  # start the next run; its two pipe ends ride along as SCM_RIGHTS
    ABORT = b"A"  # skip the remaining runs: the candidate has failed


class RunEvent(StrEnum):
    """JSON messages on a run's request pipe (key "t")."""

    START = "start"  # the run's optimizer call begins (with the protections it got)
    ERROR = "error"  # the candidate raised (described by candidate_run.describe_error)
    SETUP_ERROR = "setup-error"  # the host could not set the run up (sent before START only)


class HostEvent(StrEnum):
    """JSON messages on the host's control pipe (key "t")."""

    READY = "ready"  # the job is loaded: the first run may start
    BEGAN = "began"  # run k started, with the pids of its guard and its process
    EXITED = "exited"  # run k's process ended, with its wait status
    IDLE = "idle"  # every run is done (or skipped): the host waits for the next job
