"""The sandbox's side of the wall: a host process that forks one fresh, isolated process per run.

Process tree of one sandbox job (started by `generator.sandbox.run_job`):

    evaluating process (holds the answer key, the Oracle, the scorer)
      └─ host   (this module's `main`; imports numpy once, receives only public SpaceSpecs)
           └─ guard  (per run: new namespaces; reports the run's exit status to the host)
                └─ run (PID 1 of its namespace: enters its allowlist root, limits, drops privileges,
                        joins a fresh keyring, loads the system-call filter, then executes the
                        candidate; every func(cfg) is a round trip to the evaluator)

A fresh process per run (fork of a clean host, a few ms) means that nothing a candidate keeps in
memory, in class attributes or in files carries over from one repeat to the next.

The run itself (the candidate's side: `func`, its names, its errors) is `candidate_run.py`; the
wire format between the processes is `streams.py`.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys

from generator.sandbox.candidate_run import run_candidate
from generator.sandbox.root_fs import enter_allowlist_root
from generator.sandbox.streams import read_exact, send_json
from generator.sandbox.syscall_filter import cap_ipc, install_filter, join_fresh_keyring
from generator.sandbox.wire import Command, HostEvent, RunEvent

_VIEW = "refused: not a host"  # how the host's view of the installation was made (view.enter_view)


def _run_process(job: dict, k: int, space, fds: dict, uid: int, nproc_base: int, prot) -> None:
    """PID 1 of the run's namespaces: put up the walls, then hand over to the candidate."""
    from generator.sandbox import isolation as iso

    iso.die_with_parent()
    workdir = os.path.join(job["workdir"], f"run{k}")
    keep, hidden = job.pop("keep"), job.pop("hidden")  # the candidate needs neither list
    if prot.held.get("namespaces") and iso.mount_private_root(prot):
        workdir = (
            enter_allowlist_root(keep, hidden, job["scratch_mb"], prot)
            or _cover_paths(keep, hidden, job["scratch_mb"], prot)
            or workdir
        )
        prot.mark("mount_namespace", True)
    if prot.held.get("ipc_namespace"):
        cap_ipc(job["scratch_mb"], prot)
    os.makedirs(workdir, exist_ok=True)
    if uid is not None:
        os.chown(workdir, uid, iso.NOGROUP)
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    iso.set_rlimits(job["limits"], prot, nproc_base, _mapped_bytes())
    iso.drop_privileges(uid, prot)
    iso.die_with_parent()  # changing credentials cleared it
    join_fresh_keyring(prot)
    _close_fds_except({0, 1, 2, fds["req"], fds["resp"]})
    install_filter(prot)  # last: the set-up above needs some of the calls it refuses
    send_json(fds["req"], {"t": RunEvent.START, "k": k, "protections": prot.to_dict()})
    run_candidate(job, k, space, fds["req"], fds["resp"])


def _cover_paths(keep, hidden, scratch_mb: int, prot) -> str | None:
    """Where the kernel refuses the allowlist root: cover the known places of answers instead."""
    from generator.sandbox import isolation as iso

    n = iso.hide_paths(hidden, keep, prot)
    prot.mark("hidden_paths", n > 0, f"{n} paths covered")
    workdir = iso.private_scratch(prot, scratch_mb, keep)
    iso.mount_proc(prot)
    return workdir


def _mapped_bytes() -> int:
    """Address space the interpreter maps already (the candidate's allowance comes on top)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _close_fds_except(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def setup_failed(req_fd: int, exc: BaseException) -> None:
    """Trusted set-up code failed before the candidate ran: tell the evaluator (not the candidate's fault)."""
    try:
        send_json(req_fd, {"t": RunEvent.SETUP_ERROR, "message": f"{type(exc).__name__}: {exc}"[:600]})
    finally:
        os._exit(70)


def _count_user_tasks(uid: int) -> int:
    """Threads the user already runs (RLIMIT_NPROC counts them all) when we cannot change uid."""
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/status") as fh:
                    st = dict(line.split(":", 1) for line in fh if ":" in line)
                if int(st["Uid"].split()[0]) == uid:
                    n += int(st["Threads"])
            except (OSError, KeyError, ValueError):
                continue
    return n


def _guard(job: dict, k: int, space, fds: dict, report_fd: int) -> None:
    """Per-run parent of the run process: namespaces, then relays the run's exit status."""
    from generator.sandbox import isolation as iso

    os.setpgid(0, 0)
    iso.die_with_parent()
    prot = iso.Protections()
    prot.mark("shared_files_in_ram", _VIEW.startswith("held"), _VIEW)
    root = os.geteuid() == 0
    uid = iso.fresh_uid() if root else None  # None: cannot change user
    nproc_base = 0 if root else _count_user_tasks(os.getuid())
    if job["isolate"]:
        iso.set_dumpable(True)  # the host is not; a process may only write its own uid_map if it is
        iso.unshare_namespaces(prot)
    else:
        prot.mark("namespaces", False, "isolation switched off")
    pid = os.fork()
    if pid == 0:
        os.close(report_fd)
        try:
            _run_process(job, k, space, fds, uid, nproc_base, prot)
        except BaseException as exc:  # a wall failed to go up in trusted code: report, never run
            setup_failed(fds["req"], exc)
    for fd in (fds["req"], fds["resp"]):
        os.close(fd)
    os.write(report_fd, struct.pack("<i", pid))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = -1
            break
        except InterruptedError:
            continue
    os.write(report_fd, struct.pack("<i", status))
    os._exit(0)


def main() -> None:
    """Entry point of the host process: take jobs one after another, fork one guarded run at a time.

    Between jobs and during runs the host watches its command pipe: end of file means the
    evaluating process is gone, and the host kills the run in progress and exits.
    """
    global _VIEW
    from generator.sandbox.view import enter_view

    _VIEW = enter_view()  # first: everything loaded from here on is what the runs inherit
    ctl_in, ctl_out = (int(a) for a in sys.argv[1:3])
    from generator.sandbox import isolation as iso

    iso.set_dumpable(False)
    import numpy  # noqa: F401 - paid once per host instead of once per run

    spaces: dict = {}  # spec key -> (SearchSpace, config -> row), kept across jobs
    while True:
        header = _read_or_exit(ctl_in, 4)
        job = pickle.loads(read_exact(ctl_in, struct.unpack("<i", header)[0]))  # trusted: from the evaluator
        if job.get("preimport_kernel_tuner"):
            try:
                import kernel_tuner.strategies.wrapper
                import kernel_tuner.util  # noqa: F401 - warm-up: loaded before the walls go up
            except Exception:
                pass
        for name in job.get("preimport", ()):  # heavy libraries the source imports: once per host, not per run
            try:
                __import__(name)
            except Exception:
                pass
        if job.get("seeded"):
            import generator.scoring.seeding  # noqa: F401 - before the walls: runs cannot import the project
        mine = {i: _prepared(spaces, key, spec) for i, (key, spec) in job["specs"].items()}
        job["rows"] = {i: rows for i, (_, rows) in mine.items()}
        send_json(ctl_out, {"t": HostEvent.READY})
        for k, (ti, _repeat, _seed) in enumerate(job["runs"]):
            command, channel = _read_command(ctl_in)
            if command != Command.RUN or len(channel) != 2:
                break  # "A": the candidate failed, skip its other runs
            status, guard = _run_guarded(job, k, mine[ti][0], {"req": channel[0], "resp": channel[1]}, ctl_in, ctl_out)
            send_json(ctl_out, {"t": HostEvent.EXITED, "k": k, "status": status})
        send_json(ctl_out, {"t": HostEvent.IDLE})


def _read_command(fd: int) -> tuple[bytes, list[int]]:
    """The evaluator's next command and, with "R", the run's own request and response pipe ends."""
    import socket

    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            data, fds, _, _ = socket.recv_fds(sock, 1, 2)
    except OSError:
        os._exit(0)
    if not data:
        os._exit(0)  # the evaluating process is gone
    return data, fds


def _read_or_exit(fd: int, n: int) -> bytes:
    try:
        return read_exact(fd, n)
    except (EOFError, OSError):
        os._exit(0)  # the evaluating process is gone


def _prepared(spaces: dict, key: str, spec):
    """The search space of a spec, built once per host: rows lookup and neighbour indexes included."""
    from generator.tasks.space import SearchSpace

    if key not in spaces:
        if len(spaces) >= 16:
            spaces.pop(next(iter(spaces)))
        sp = SearchSpace(spec)
        rows = {cfg: row for row, cfg in enumerate(sp.configs)}
        for method in ("Hamming", "adjacent", "strictly-adjacent"):  # every forked run inherits them
            try:
                sp.get_neighbors(sp.config_of(0), neighbor_method=method)
            except Exception:
                pass
        spaces[key] = (sp, rows)
    return spaces[key]


def _run_guarded(job: dict, k: int, space, fds: dict, ctl_in: int, ctl_out: int) -> tuple[int | None, int]:
    """Fork the guard of run k, report its pids, wait for the run's exit status, clean up."""
    import select

    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            for fd in (ctl_in, ctl_out):
                os.close(fd)
            _guard(job, k, space, fds, wr)
        except BaseException as exc:
            setup_failed(fds["req"], exc)
        finally:
            os._exit(70)  # a forked guard never returns into the host's loop
    os.close(wr)
    for fd in (fds["req"], fds["resp"]):  # the run's channel is the guard's and the run's alone now
        os.close(fd)
    status = None
    try:
        (run_pid,) = struct.unpack("<i", read_exact(rd, 4))
        send_json(ctl_out, {"t": HostEvent.BEGAN, "k": k, "guard": pid, "run": run_pid})
        while True:
            ready, _, _ = select.select([rd, ctl_in], [], [])
            if ctl_in in ready:  # nothing is sent during a run: this is end of file
                for kill, target in ((os.kill, run_pid), (os.killpg, pid)):  # the run may have left the group
                    try:
                        kill(target, signal.SIGKILL)
                    except OSError:
                        pass
                os._exit(0)
            if rd in ready:
                (status,) = struct.unpack("<i", read_exact(rd, 4))
                break
    except EOFError:
        pass
    os.close(rd)
    try:
        os.killpg(pid, signal.SIGKILL)  # whatever of the run is still around
    except OSError:
        pass
    os.waitpid(pid, 0)
    _remove_tree(os.path.join(job["workdir"], f"run{k}"))
    return status, pid


def _remove_tree(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
