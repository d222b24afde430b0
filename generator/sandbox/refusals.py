"""What a sandboxed candidate may not do, refused with errors that a fix prompt can act on.

The walls of the sandbox (`generator.sandbox.isolation`) already contain a candidate that starts
processes, opens sockets or reads files: the network namespace has no route, covered paths look
empty, and every process dies with the run. But the errors a candidate sees then ("Network is
unreachable", "No such file or directory", or a subprocess that seems to work) do not tell an LLM
what to change. So, after the walls are up and just before the candidate's code runs, an audit
hook (PEP 578) refuses process creation and network access at the Python level with one clear
PermissionError, and `hint_for` adds a sentence to the errors of refused or unknown things.

The hook is for the messages, not for security: ctypes can get around it, and the walls hold then.
"""

from __future__ import annotations

import sys

SANDBOX_RULES = (
    "candidates run without network, subprocesses or files outside their own working "
    "directory; compute everything in memory from func and searchspace"
)

# audit event -> what it is, in the message
REFUSED_EVENTS = {
    "subprocess.Popen": "starting a subprocess",
    "os.system": "starting a subprocess",
    "os.exec": "starting a program",
    "os.posix_spawn": "starting a program",
    "os.spawn": "starting a program",
    "os.fork": "forking a process (multiprocessing included)",
    "os.forkpty": "forking a process",
    "socket.connect": "network access",
    "socket.getaddrinfo": "network access",
    "socket.gethostbyname": "network access",
    "socket.gethostbyaddr": "network access",
    "socket.sendto": "network access",
    "socket.sendmsg": "network access",
    "socket.bind": "network access",
}

# errno values of refused operations: EPERM, ENOENT, EAGAIN (process limit), EACCES, EROFS, ENOLCK (file
# locks, `shared_state.py`), EADDRNOTAVAIL, ENETUNREACH, ECONNREFUSED, EHOSTUNREACH
_REFUSED_ERRNOS = {1, 2, 11, 13, 30, 37, 99, 101, 111, 113}
# Tunesmith's own top-level packages (as generator.sandbox.jobs.PROJECT_PACKAGES): a candidate imports neither
PROJECT_PACKAGES = ("generator", "generated_algorithms")


class SandboxRefusal(PermissionError):
    """An operation the sandbox does not allow (process creation, network access)."""


def _hook(event: str, args) -> None:
    what = REFUSED_EVENTS.get(event)
    if what is not None:
        raise SandboxRefusal(f"{what} ({event}) is refused in the sandbox: {SANDBOX_RULES}")


def refuse_processes_and_network() -> None:
    """Install the audit hook in the run process (it cannot be removed; the process ends with the run)."""
    sys.addaudithook(_hook)


def hint_for(exc: BaseException) -> str:
    """A sentence that tells the fix operator what to change for a refused or unknown thing, or ''."""
    name = getattr(exc, "name", None)
    if isinstance(exc, SandboxRefusal) or SANDBOX_RULES in str(exc):
        return ""  # says it already
    if isinstance(exc, NameError) and name in ("MyOptimizer", "Optimizer", "BaseOptimizer"):
        return (
            f"{name} is only the prompt's example and does not exist at run time; define your own "
            "class (it may subclass OptAlg, which is predefined, or nothing)"
        )
    if isinstance(exc, NameError) and name:
        return f"define or import {name} before using it; only OptAlg and StopCriterionReached are predefined"
    if isinstance(exc, ModuleNotFoundError) and (name or "").split(".")[0] in PROJECT_PACKAGES:
        return (
            "Tunesmith's own packages (generator, and the exported winners in generated_algorithms) cannot "
            "be imported: a candidate is scored for its own search; write it with the standard library, numpy "
            "or scipy"
        )
    if isinstance(exc, ModuleNotFoundError):
        return (
            "that module is not installed here; use the standard library, numpy or scipy "
            "(OptAlg and StopCriterionReached need no import)"
        )
    if isinstance(exc, AttributeError) and name == "budget_spent_fraction":
        return "budget_spent_fraction is an attribute of func (func.budget_spent_fraction), not of the optimizer"
    if isinstance(exc, AttributeError) and type(getattr(exc, "obj", None)).__module__ == "candidate":
        return f"the class uses self.{name} but never defines it; define it (a method or attribute) or remove the use"
    if isinstance(exc, ValueError) and "must be 1-dimensional" in str(exc):
        return (
            "np.random.choice cannot pick from a list of configurations (tuples); use random.choice(the_list) "
            "or pick an index with np.random.randint(len(the_list))"
        )
    if isinstance(exc, AttributeError) and type(getattr(exc, "obj", None)).__name__ in ("SearchSpace", "SeededSpace"):
        return (
            "searchspace offers tune_params, get_random_sample, get_neighbors and is_param_config_valid; the "
            "prompt's statistics are for reading, not attributes; write other helpers yourself"
        )
    if isinstance(exc, OSError) and (
        isinstance(exc, (FileNotFoundError, PermissionError, ConnectionError))
        or exc.errno in _REFUSED_ERRNOS
        or "urlopen" in str(exc)
    ):
        return f"this is refused in the sandbox: {SANDBOX_RULES}"
    return ""
