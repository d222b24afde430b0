"""One writer per run directory: a POSIX (fcntl) lock on RUN_DIR/.lock.

`tunesmith run` and `resume` hold it exclusively for the whole campaign. `tunesmith hpo` holds it
shared: several HPO processes may work on one run together (they share the Optuna study), but not
while a campaign appends to the run, and a campaign does not start while HPO reads its candidates.
A process that cannot have the lock is refused at once, with the holder's PID; it never waits.

Why fcntl record locks: the kernel drops them when the holder dies, even by kill -9, so there is
never a stale lock to delete by hand, and they are not inherited by forked children (a sandbox
process left behind holds nothing). Why the F_GETLK query: the kernel names the holder, which a PID
written into a file cannot do reliably once the holder is gone. The holder's command line is also
written into the file, for systems where the query gives no PID (some network file systems).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
import sys
from contextlib import contextmanager
from pathlib import Path

from generator.errors import TunesmithError

LOCK_FILE = ".lock"

# run directory (resolved) -> [fd, shared, depth] of the locks this process holds. POSIX locks belong
# to the process: a second lock of the same file here would silently change the first one's mode
# (and closing its descriptor would drop both), so nested holders share one entry.
_HELD: dict[str, list] = {}
_OWNER = os.getpid()


class RunLocked(TunesmithError):
    """Another process works on this run directory."""


def _not_usable(run_dir: Path, exc: OSError, command: str = "run") -> TunesmithError:
    """One line for a run directory that cannot be created or written."""
    from generator.archive import ArchiveError

    parent = next((p for p in [run_dir, *run_dir.parents] if p.exists()), None)
    if parent is not None and not parent.is_dir():
        why = f"{parent} is a file, not a folder"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        why = f"{parent or run_dir} is not writable ({exc.strerror})"
    else:
        why = exc.strerror or str(exc)
    if command == "run":
        fix = "choose another output.run_dir (or --run-dir) where you may write"
    else:  # resume and hpo take the run directory itself and have no --run-dir
        fix = (
            f"copy the run directory where you may write (cp -r {run_dir} NEW_DIR) and give `tunesmith {command}` that"
        )
    return ArchiveError(f"{run_dir}: cannot write the run directory: {why}; {fix}")


def _holder_pid(fd: int, shared: bool) -> int | None:
    """The PID of a process whose lock blocks ours, as the kernel reports it (Linux layout)."""
    if not sys.platform.startswith("linux"):
        return None
    kind = fcntl.F_RDLCK if shared else fcntl.F_WRLCK
    fmt = "hhxxxxqqixxxx"  # struct flock: l_type, l_whence, l_start, l_len, l_pid
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, kind, os.SEEK_SET, 0, 0, 0))
        l_type, _, _, _, pid = struct.unpack(fmt, answer)
    except (OSError, struct.error):
        return None
    return pid if l_type != fcntl.F_UNLCK and pid > 0 else None


def _command_of(pid: int) -> str:
    """'tunesmith run c.toml' for a Tunesmith process, from /proc (empty when unknown)."""
    try:
        args = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return ""
    for i, arg in enumerate(args):
        if arg == "generator.cli" or Path(arg).name == "tunesmith":
            return " ".join(["tunesmith", *args[i + 1 :]])
    return ""


def _describe(path: Path, pid: int | None) -> str:
    """'tunesmith run c.toml (pid 123)': the holder's command from /proc, else as it noted itself."""
    try:
        noted_pid, host, noted = path.read_text().rstrip("\n").split("\t", 2)
        noted_pid = int(noted_pid)
    except (OSError, ValueError):
        noted_pid, host, noted = None, "", ""
    if pid is None and noted_pid is not None:  # no PID from the kernel (e.g. NFS): trust the note
        where = "" if host == socket.gethostname() else f" on {host}"
        return f"{noted} (pid {noted_pid}{where})"
    if pid is None:
        return "another Tunesmith process"
    command = _command_of(pid) or (noted if noted_pid == pid else "")
    return f"{command or 'another Tunesmith process'} (pid {pid})"


def holder(run_dir) -> str | None:
    """'tunesmith run c.toml (pid 123)' when a process holds the run's lock now, else None.

    Asks the kernel (F_GETLK) without taking the lock, so a campaign starting at this instant is not
    refused; a process killed by -9 holds nothing, whatever status.json still says.
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # no lock file: no process ever held this run (or it is not ours to read)
    try:
        pid = _holder_pid(fd, shared=False)  # a write lock's view: any holder, exclusive or shared
    finally:
        os.close(fd)
    if pid is None and _HELD.get(str(Path(run_dir).resolve())) and _OWNER == os.getpid():
        pid = os.getpid()  # the kernel never reports our own lock
    return None if pid is None else _describe(path, pid)


@contextmanager
def run_lock(run_dir, command: str, shared: bool = False):
    """Hold the run directory's lock (created with the directory if needed) for the `with` block.

    `command` names this process in the refusal another one gets ("run", "resume", "hpo").
    """
    global _OWNER
    run_dir = Path(run_dir)
    if _OWNER != os.getpid():  # a forked child inherits the table, not the locks
        _HELD.clear()
        _OWNER = os.getpid()
    key = str(run_dir.resolve())
    held = _HELD.get(key)
    if held is not None:  # nested (the campaign's own HPO stage): the outer lock covers it
        held[2] += 1
        try:
            yield
        finally:
            held[2] -= 1
        return
    path = run_dir / LOCK_FILE
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _not_usable(run_dir, exc, command) from None
    try:
        fcntl.lockf(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _describe(path, _holder_pid(fd, shared)) if exc.errno in (errno.EAGAIN, errno.EACCES) else ""
        os.close(fd)
        if not holder:
            raise _not_usable(run_dir, exc, command) from None
        raise RunLocked(
            f"{run_dir}: in use by {holder}; wait until it ends or stop it, then try again "
            "(one campaign writes a run directory at a time; `hpo` processes may share one)"
        ) from None
    # note who holds it: the refusal names the command, and the PID where the lock query gives none
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\t{socket.gethostname()}\ttunesmith {command}\n".encode(), 0)
    _HELD[key] = [fd, shared, 1]
    try:
        yield
    except BaseException:
        if created:  # failed before writing anything: leave no run directory that holds only the lock
            _remove_if_only_lock(run_dir)
        raise
    finally:
        del _HELD[key]
        os.close(fd)  # closing the descriptor releases the lock


def _remove_if_only_lock(run_dir: Path) -> None:
    """Remove a run directory this process made whose only file is the lock (still held, so no one else uses it)."""
    try:
        if [p.name for p in run_dir.iterdir()] == [LOCK_FILE]:
            (run_dir / LOCK_FILE).unlink()
            run_dir.rmdir()
    except OSError:
        pass  # best effort: a directory that cannot be cleaned is left as it was
