"""What went wrong in a sandbox run, as the `CandidateError` the candidate's record and the fix prompt
read: the candidate's own exception, a limit it ran into, or how its process ended."""

from __future__ import annotations

import os
import signal

from generator.sandbox.candidate_run import render_traceback
from generator.sandbox.jobs import Job, SandboxConfig
from generator.scoring.fitness import ERROR_KINDS, CandidateError


def run_error(job: Job, k: int, kind: str, message: str, **kw) -> CandidateError:
    """An error of run `k` of `job` (the last run when k is past the end), naming its task and repeat."""
    ti, repeat, _ = job.runs[min(k, len(job.runs) - 1)]
    return CandidateError(kind, message, task=job.tasks[ti].name, repeat=repeat, **kw)


def error_from_child(job: Job, k: int, msg: dict) -> CandidateError:
    """The candidate's exception, from the run's RunEvent.ERROR message (untrusted: every field is checked,
    and the traceback is rendered from our own copy of the source)."""
    kind = msg.get("kind") if msg.get("kind") in ERROR_KINDS else "exception"
    lineno = msg.get("lineno") if isinstance(msg.get("lineno"), int) else None
    line = msg.get("line") if isinstance(msg.get("line"), str) else None
    tb = render_traceback(msg.get("frames"), job.source, msg.get("last"))
    return run_error(job, k, kind, str(msg.get("message", ""))[:600], traceback=tb, line=line, lineno=lineno)


def timeout_message(cfg: SandboxConfig, answered: int) -> str:
    """Why a run that overstayed its wall-clock limit failed, and what the candidate should do instead."""
    if not answered:
        return (
            f"the run did not evaluate anything within {cfg.timeout_s:g} s of "
            "wall-clock time; call func early, and keep the work per evaluation small"
        )
    return (
        f"the run did not finish within {cfg.timeout_s:g} s of wall-clock time; "
        "stop when func raises StopCriterionReached or budget_spent_fraction reaches 1, "
        "and keep the work per evaluation small"
    )


def status_error(status, cfg: SandboxConfig) -> tuple[str, str]:
    """(kind, message) for a run whose process ended without finishing: `status` is its wait status,
    None or negative when the host could not say (it died, or the run was killed with it)."""
    if status is None or status < 0:
        return "killed", "the candidate's process tree was killed before the run ended"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig == signal.SIGXCPU:
            return "timeout", f"the run used more than its CPU-time limit ({int(cfg.timeout_s) + 5} s)"
        if sig == signal.SIGXFSZ:
            return "killed", f"the run wrote a file larger than {cfg.file_mb} MiB"
        if sig == signal.SIGKILL:
            return "killed", "the run was killed by SIGKILL (the kernel's out-of-memory killer, or a kill signal)"
        return "killed", f"the run crashed with {name} (a native crash, e.g. through ctypes or a C extension)"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return "killed", (
        f"the candidate's process exited (status {code}) before its __call__ returned "
        "(os._exit, or sys.exit in a thread); return from __call__ instead"
    )
