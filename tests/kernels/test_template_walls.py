"""Untrusted kernels stay untrusted: a hostile template, compiled and run in the walls, is contained."""

import os
import socket
import textwrap
import time

import numpy as np
import pytest
from support.paths import ROOT

from generator.kernels.walls import KernelLimits, run_walled

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/g++"), reason="needs g++")


def _run(body: str, timeout_s: float = 60.0, includes: str = ""):
    source = textwrap.dedent(f"""\
        #include <stdio.h>
        #include <unistd.h>
        {includes}
        extern "C" float hostile(float *C) {{
        {body}
            return 1.0f;
        }}
        """)
    limits = KernelLimits(timeout_s=timeout_s, cpu_s=int(timeout_s))
    return run_walled(
        source, "hostile", [8], [np.zeros(8, np.float32)], [0], {"v": [0]}, [(0,)], {}, ["-O1"], 1, limits
    )


def _out(result) -> np.ndarray:
    assert result.error is None and result.compile_error is None, result.error or result.compile_error
    return result.outputs["0|0"]


def test_every_wall_holds_for_a_kernel():
    held = _run("C[0] = 1;").protections["held"]
    for wall in ("network_namespace", "allowlist_root", "rlimit_nproc", "unprivileged_user", "syscall_filter"):
        assert held.get(wall), wall


def test_files_outside_scratch_are_neither_read_nor_written():
    marker = ROOT / "HACKED_BY_KERNEL"
    out = _out(
        _run(f"""
        C[0] = fopen("{ROOT / "pyproject.toml"}", "r") != NULL;
        C[1] = fopen("/etc/passwd", "r") != NULL;
        C[2] = fopen("{marker}", "w") != NULL;
        C[3] = fopen("scratch.txt", "w") != NULL;  /* its own scratch: allowed */
    """)
    )
    assert out[:3].tolist() == [0, 0, 0] and out[3] == 1
    assert not marker.exists()


def test_a_kernel_cannot_reach_the_network():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        out = _out(
            _run(
                f"""
            int s = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {{}};
            a.sin_family = AF_INET; a.sin_port = htons({port}); a.sin_addr.s_addr = htonl(0x7f000001);
            C[0] = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
        """,
                includes="#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>",
            )
        )
        assert out[0] == 0
        with pytest.raises(BlockingIOError):
            server.accept()


def test_an_endless_loop_is_killed_at_the_time_limit():
    t0 = time.monotonic()
    result = _run("volatile int x = 0; for (;;) x++;", timeout_s=8)
    assert "time limit" in result.error and time.monotonic() - t0 < 30


def _processes_of(wanted: int) -> list[int]:
    """Processes of this uid still alive on the host."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = int(next(ln for ln in open(f"/proc/{pid}/status") if ln.startswith("Uid:")).split()[1])
        except (OSError, StopIteration):
            continue
        if uid == wanted:
            found.append(int(pid))
    return found


def test_a_fork_bomb_is_capped_and_leaves_nothing_behind():
    result = _run(
        """
        int made = 0;
        for (int i = 0; i < 500; i++) { pid_t p = fork(); if (p == 0) { pause(); _exit(0); } if (p > 0) made++; }
        C[0] = made;
    """,
        timeout_s=30,
    )
    made = _out(result)[0]
    assert 0 < made < KernelLimits().nproc
    assert result.uid is not None and result.uid >= 2_000_000_000
    deadline = time.monotonic() + 5  # SIGKILL of the namespace is asynchronous
    while _processes_of(result.uid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_of(result.uid) == []
