"""The sandbox's isolation walls against hostile candidates (issue 22 item 4, issue 23 items 1, 2, 4, 9, 10, 13).

Each hostile candidate lives in tests/hostile/ (so `test_hostile.py` runs it too, with one
repeat); here each runs the way its attack needs: two repeats for memory across runs, a host
listener for unix sockets, planted copies of the answers for the file-system walk. And after
every run nothing may be left on the host: no SysV IPC object, message queue, key, process or file.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import threading
import uuid
import zlib
from pathlib import Path

import pytest
from support.paths import HOSTILE_DIR

from generator.evaluation.evaluate import evaluate_source
from generator.sandbox.jobs import PROJECT_ROOT, SandboxConfig

TOKEN = uuid.uuid4().hex[:10]
CONFIG = SandboxConfig(timeout_s=20.0, memory_mb=256, startup_s=120)
ALARMS = ("LEAKED", "REACHED", "ESCAPED", "MEMORY CARRIED OVER")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the host-side checks (ipcs, /proc/keys) need root")


def _source(name: str, **extra) -> str:
    text = (HOSTILE_DIR / f"{name}.py").read_text()
    for key, value in {"TOKEN": TOKEN, "PROJECT": str(PROJECT_ROOT), **extra}.items():
        text = text.replace(f"@@{key}@@", value)
    return text


def _evaluate(name: str, task, repeats: int = 1, **extra):
    fit = evaluate_source(_source(name, **extra), [task], repeats=repeats, seed=0, config=CONFIG)
    message = fit.error.message if fit.error else ""
    return fit, message


def _host_traces() -> dict:
    """What a run could leave on the host, narrowed to this test's token."""
    key = f"{zlib.crc32(f'tunesmith-hostile-{TOKEN}'.encode()) & 0x7FFFFFFF:>10}"
    out = {}
    for kind in ("shm", "msg", "sem"):
        rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        out[kind] = [r for r in rows if r.split()[0] == key.strip()]
        for row in out[kind]:  # a failing run must not litter the host either
            getattr(ctypes.CDLL(None), kind + "ctl")(int(row.split()[1]), 0, 0)  # IPC_RMID
    out["keys"] = [ln for ln in Path("/proc/keys").read_text().splitlines() if TOKEN in ln]
    libc = ctypes.CDLL(None, use_errno=True)
    for line in out["keys"]:
        libc.syscall(250, 21, int(line.split()[0], 16))  # keyctl(KEYCTL_INVALIDATE), x86_64
    q = libc.mq_open(f"/tunesmith-hostile-{TOKEN}".encode(), os.O_RDONLY)
    out["mqueue"] = [q] if q >= 0 else []
    if q >= 0:
        libc.mq_close(q)
        libc.mq_unlink(f"/tunesmith-hostile-{TOKEN}".encode())
    places = [Path(p) for p in ("/tmp", "/var/tmp", "/dev/shm")]
    out["files"] = [str(p) for d in places if d.is_dir() for p in d.glob(f"*{TOKEN}*")]
    out["processes"] = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_has(pid, TOKEN)]
    for pid in out["processes"]:
        os.kill(int(pid), 9)
    for path in out["files"]:
        os.unlink(path)
    return out


def _cmdline_has(pid: str, text: str) -> bool:
    try:
        return text in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _nothing_left() -> None:
    left = {k: v for k, v in _host_traces().items() if v}
    assert not left, f"left on the host after the run: {left}"


@pytest.mark.parametrize("name", ["sysv_shm_across_runs", "mqueue_across_runs", "keyring_across_runs"])
def test_nothing_of_one_run_reaches_the_next(name, conv_task):
    """23.1, 23.2, 23.4: SysV shm, the keyring, POSIX queues: fresh per run, gone after it."""
    fit, message = _evaluate(name, conv_task, repeats=2)
    assert not any(a in message for a in ALARMS), message
    _nothing_left()
    fit2, message2 = _evaluate(name, conv_task, repeats=1)  # a second, separate evaluation
    assert not any(a in message2 for a in ALARMS), message2
    _nothing_left()


def test_fresh_ipc_namespace_and_keyring_are_recorded(conv_task):
    fit, _ = _evaluate("sysv_shm_across_runs", conv_task)
    held = fit.metadata["protections"]["held"]
    assert held["ipc_namespace"] and held["own_keyring"] and held["syscall_filter"], held


class _UnixListener:
    """A filesystem and an abstract unix socket on the host, counting who connects."""

    def __init__(self, directory: Path):
        self.path = str(directory / f"tunesmith-hostile-{TOKEN}.sock")
        self.abstract = f"tunesmith-hostile-{TOKEN}"
        self.socks = []
        for addr in (self.path, "\0" + self.abstract):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(addr)
            if not addr.startswith("\0"):
                os.chmod(addr, 0o777)  # any uid may connect: only the walls stand in the way
            s.listen(4)
            s.settimeout(0.2)
            self.socks.append(s)
        self.hits, self.stop = [], False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            for s in self.socks:
                try:
                    conn, _ = s.accept()
                    self.hits.append(conn.recv(64))
                    conn.close()
                except OSError:
                    continue

    def close(self):
        self.stop = True
        self.thread.join(2)
        for s in self.socks:
            s.close()
        os.unlink(self.path)


def test_unix_sockets_on_the_host_are_out_of_reach(conv_task, tmp_path):
    """23.9: a filesystem socket outside the covered places (/run) and an abstract one."""
    where = Path("/run") if os.access("/run", os.W_OK) else Path("/var/lib")
    listener = _UnixListener(where)
    try:
        fit, message = _evaluate("unix_sockets", conv_task, UNIX_PATH=listener.path, UNIX_ABSTRACT=listener.abstract)
    finally:
        listener.close()
    assert listener.hits == [] and "REACHED" not in message, (listener.hits, message)
    assert fit.error is None, fit.error
    assert fit.metadata["protections"]["held"]["network_namespace"]


@pytest.fixture
def planted(conv_task):
    """Copies of the answers where users keep them: a second hub under /srv, a run directory under /opt."""
    hub_file = Path(conv_task.source)
    srv = Path("/srv") / f"tunesmith-hostile-{TOKEN}-hub"
    run_dir = Path("/opt") / f"tunesmith-hostile-{TOKEN}-results" / "run1"
    (srv / "cachefiles").mkdir(parents=True)
    shutil.copy(hub_file, srv / "cachefiles" / f"{TOKEN}-{hub_file.name}")
    run_dir.mkdir(parents=True)
    (run_dir / "archive.jsonl").write_text('{"id": "c0001"}\n')
    yield hub_file
    shutil.rmtree(srv)
    shutil.rmtree(run_dir.parent)


def test_a_walk_of_the_root_finds_nothing_of_the_evaluator(conv_task, planted):
    """22.4 and 23.10: no cache file (no copy of the hub), no file of the project, no run directory;
    numpy, scipy and the standard library still import."""
    fit, message = _evaluate(
        "walk_root", conv_task, HUB=str(planted.parents[2]), HUB_FILE_NAME=planted.name, WALK_S="10"
    )
    assert fit.error is None, fit.error
    held = fit.metadata["protections"]["held"]
    assert held["allowlist_root"] and held["hidden_paths"], fit.metadata["protections"]


def test_memory_outside_the_limit_is_refused(conv_task):
    """23.13: memfds, SysV segments, /dev/shm, /tmp and a nested tmpfs all count or are refused."""
    fit, message = _evaluate("memory_outside_limit", conv_task)
    assert "ESCAPED" not in message, message
    assert fit.error is None, fit.error
    _nothing_left()


def test_nothing_is_left_on_the_host_after_a_run(conv_task):
    """ipcs, /proc/keys, message queues, processes and files: a run that litters leaves nothing."""
    fit, message = _evaluate("litter", conv_task)
    assert fit.error is None, fit.error
    _nothing_left()


def _in_own_mount_namespace(body) -> dict:
    """Run body() in a forked child with its own mount namespace; returns the dict it reports."""
    import json

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        try:
            os.close(r)
            assert ctypes.CDLL(None, use_errno=True).unshare(0x00020000) == 0  # CLONE_NEWNS
            os.write(w, json.dumps(body()).encode())
        except BaseException as exc:
            os.write(w, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        report = json.loads(fh.read() or '{"error": "no report"}')
    os.waitpid(pid, 0)
    return report


def test_a_refused_allowlist_root_falls_back_to_covering_paths(tmp_path):
    """Where the kernel refuses pivot_root, the stage is undone and the known places are covered."""
    from generator.sandbox import child, isolation, root_fs
    from generator.sandbox.jobs import interpreter_paths

    on_tmp = tmp_path / "still-here.txt"
    on_tmp.write_text("x")
    secret_dir = Path("/srv") / f"tunesmith-hostile-{TOKEN}-fallback"
    secret_dir.mkdir()
    (secret_dir / "A100.json").write_text("{}")

    def body():
        prot = isolation.Protections()
        assert isolation.mount_private_root(prot)
        root_fs.SYS_PIVOT_ROOT = 1 << 20  # no such system call: ENOSYS, as a kernel that refuses it
        entered = root_fs.enter_allowlist_root(interpreter_paths(), [str(secret_dir)], 8, prot)
        host_view = on_tmp.exists()
        workdir = child._cover_paths(interpreter_paths(), [str(secret_dir)], 8, prot)
        return {
            "entered": entered,
            "host_view": host_view,
            "workdir": workdir,
            "held": prot.held,
            "secret": os.listdir(secret_dir),
            "numpy": os.path.exists(os.path.dirname(os.__file__)),
        }

    try:
        report = _in_own_mount_namespace(body)
    finally:
        shutil.rmtree(secret_dir)
    assert "error" not in report, report
    assert report["entered"] is None and report["held"]["allowlist_root"] is False
    assert report["host_view"], "the failed stage still shadowed /tmp"
    assert report["workdir"] == "/tmp/work" and report["held"]["hidden_paths"] and report["secret"] == []
    assert report["numpy"], "the standard library must stay readable after the fallback"


def _after_filter(ipc_limits_held: bool) -> dict:
    """In a forked child: load the filter, then try what it refuses and what it must allow."""
    import json
    import threading

    from generator.sandbox import isolation, syscall_filter

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as the run has it
            prot = isolation.Protections()
            prot.mark("ipc_limits", ipc_limits_held)
            syscall_filter.install_filter(prot)
            out = {"held": prot.held["syscall_filter"]}
            try:
                os.memfd_create("x")
                out["memfd"] = "ok"
            except OSError as exc:
                out["memfd"] = exc.errno
            out["unshare"] = "ok" if libc.unshare(0x10000000) == 0 else ctypes.get_errno()  # CLONE_NEWUSER
            shmid = libc.shmget(0, 4096, 0o1000 | 0o600)
            out["shmget"] = "ok" if shmid >= 0 else ctypes.get_errno()
            if shmid >= 0:
                libc.shmctl(shmid, 0, None)
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
            out["thread"] = True
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        report = json.loads(fh.read() or "{}")
    os.waitpid(pid, 0)
    return report


def test_the_filter_refuses_memfds_namespaces_and_sysv_ipc_without_limits():
    """23.13 in a user namespace: where the IPC limits cannot be set, new SysV segments are refused."""
    capped = _after_filter(ipc_limits_held=True)
    uncapped = _after_filter(ipc_limits_held=False)
    for report in (capped, uncapped):
        assert report["held"] and report["thread"], report
        assert report["memfd"] == 1 and report["unshare"] == 1, report  # errno 1: EPERM
    assert capped["shmget"] == "ok" and uncapped["shmget"] == 1, (capped, uncapped)
