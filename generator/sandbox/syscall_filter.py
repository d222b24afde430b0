"""System calls a run may not make, its own keyring, and caps on its IPC namespace.

Namespaces and rlimits leave three holes that this module closes, in the run process, just
before the candidate's code is loaded (`no_new_privs` is already set, so no privilege is needed):

- memory outside the run's limit: a memfd or a new tmpfs in a nested namespace holds memory that
  RLIMIT_AS does not count (unmapped pages), so `memfd_create`, `memfd_secret`, `unshare`, `setns`
  and `clone` with namespace flags are refused (EPERM), and `clone3` looks absent (ENOSYS, glibc
  then falls back to `clone`, whose flags a filter can read);
- memory across runs: the kernel keyring outlives a process (a key added to the user's keyring stays
  on the host), so the run joins a fresh session keyring and `add_key`, `request_key` and `keyctl`
  are refused;
- the run's fresh IPC namespace gets small limits for SysV shared memory and message queues,
  which also live outside RLIMIT_AS;
- memory in kernel state that every run shares because it belongs to a file's inode, not to a
  mount or a namespace (issue 39): the page cache of the read-only files every run sees, and locks,
  leases, notifications and futexes keyed by those files. `shared_state_refusals()` lists each
  call that can observe or change that state other than by reading a file, and why; what stays
  allowed and why it is safe is said there and in docs/explanation/security.md.

A seccomp filter is a classic BPF program (struct sock_filter) handed to prctl; calls from another
ABI (i386 `int 0x80`, x32) are refused too, since their numbers differ. Linux x86_64 and aarch64.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

from generator.sandbox.isolation import Protections, libc
from generator.sandbox.shared_state import (
    FUTEX_CMD_MASK,
    FUTEX_PRIVATE_FLAG,
    FUTEX_WAIT,
    FUTEX_WAIT_BITSET,
    Rule,
    shared_state_refusals,
)

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD_ABS_W, JEQ, JGE, JSET, RET, AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
ARGS = 16  # offset of args[0] in struct seccomp_data (nr, arch, instruction pointer, args[6]); the low word
# of an argument is enough: the kernel truncates each argument checked here to 32 bits
X32_BIT = 0x40000000
KEYCTL_JOIN_SESSION_KEYRING = 1
CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080
# (audit arch, system call numbers) per machine
ABI = {
    "x86_64": (
        0xC000003E,
        {
            "memfd_create": 319,
            "memfd_secret": 447,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "unshare": 272,
            "setns": 308,
            "clone": 56,
            "clone3": 435,
            "shmget": 29,
            "msgget": 68,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "memfd_create": 279,
            "memfd_secret": 447,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "unshare": 97,
            "setns": 268,
            "clone": 220,
            "clone3": 435,
            "shmget": 194,
            "msgget": 186,
        },
    ),
}
REFUSED = ("memfd_create", "memfd_secret", "add_key", "request_key", "keyctl", "unshare", "setns")
SYSV = ("shmget", "msgget")  # refused too where the IPC namespace's limits could not be set (a user namespace)
# IPC limits of the run's own namespace: SysV shared memory in pages (shmall) and bytes (shmmax)
IPC_SYSCTLS = {"kernel/shmmni": "16", "kernel/msgmni": "16", "kernel/msgmnb": "65536", "fs/mqueue/queues_max": "16"}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def filter_program(machine: str, refuse_sysv: bool = False) -> bytes:
    """The BPF program: wrong ABI and refused calls get an errno, everything else is allowed."""
    arch, nr = ABI[machine]
    eperm = RET_ERRNO | errno.EPERM
    prog = [_insn(LD_ABS_W, 4), _insn(JEQ, arch, 1, 0), _insn(RET, eperm), _insn(LD_ABS_W, 0)]
    if machine == "x86_64":
        prog += [_insn(JGE, X32_BIT, 0, 1), _insn(RET, eperm)]
    for name in REFUSED + (SYSV if refuse_sysv else ()):
        prog += [_insn(JEQ, nr[name], 0, 1), _insn(RET, eperm)]
    for number, rule in shared_state_refusals(machine):
        block = _rule_block(rule)  # ends in a return: the accumulator need not hold the number again
        prog += [_insn(JEQ, number, 0, len(block))] + block
    prog += [_insn(JEQ, nr["clone3"], 0, 1), _insn(RET, RET_ERRNO | errno.ENOSYS)]
    prog += [
        _insn(JEQ, nr["clone"], 0, 3),
        _insn(LD_ABS_W, 16),
        _insn(JSET, CLONE_NS_FLAGS, 0, 1),
        _insn(RET, eperm),
        _insn(RET, RET_ALLOW),
    ]
    return b"".join(prog)


def _rule_block(rule: Rule) -> list[bytes]:
    """What runs once the call is known to be `rule.call`: refuse, or look at one argument first."""
    refuse, allow = _insn(RET, RET_ERRNO | rule.errno), _insn(RET, RET_ALLOW)
    if rule.arg is None:
        return [refuse]
    load = _insn(LD_ABS_W, ARGS + 8 * rule.arg)
    if rule.futex:  # private operations and waits pass; a shared wake, requeue or PI operation does not
        return [
            load,
            _insn(JSET, FUTEX_PRIVATE_FLAG, 3, 0),
            _insn(AND, FUTEX_CMD_MASK),
            _insn(JEQ, FUTEX_WAIT, 1, 0),
            _insn(JEQ, FUTEX_WAIT_BITSET, 0, 1),
            allow,
            refuse,
        ]
    if rule.bits:
        return [load, _insn(JSET, rule.bits, 0, 1), refuse, allow]
    checks = [_insn(JEQ, v, len(rule.values) - i, 0) for i, v in enumerate(rule.values)]
    return [load, *checks, allow, refuse]


def install_filter(prot: Protections) -> None:
    """Load the filter into this process (and every thread or child it makes later); recorded in `prot`.

    Where the IPC limits did not hold (`cap_ipc` in a user namespace), new SysV segments and queues are
    refused: the namespace's defaults would let them hold memory outside the run's limit."""
    machine = platform.machine()
    if machine not in ABI:
        prot.mark("syscall_filter", False, f"no system-call table for {machine}")
        return
    code = filter_program(machine, refuse_sysv=not prot.held.get("ipc_limits", False))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    prog = SockFprog(len(code) // 8, code)
    ok = libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
    prot.mark("syscall_filter", ok, "" if ok else os.strerror(ctypes.get_errno()))


def join_fresh_keyring(prot: Protections) -> None:
    """A new, empty session keyring: nothing of the host's or an earlier run's keyring is reachable."""
    machine = platform.machine()
    if machine not in ABI:
        prot.mark("own_keyring", False, f"no system-call table for {machine}")
        return
    serial = libc().syscall(ABI[machine][1]["keyctl"], KEYCTL_JOIN_SESSION_KEYRING, None)
    prot.mark("own_keyring", serial >= 0, "" if serial >= 0 else os.strerror(ctypes.get_errno()))


def cap_ipc(scratch_mb: int, prot: Protections) -> None:
    """Small SysV IPC limits in the run's own IPC namespace (its segments live outside RLIMIT_AS)."""
    page = os.sysconf("SC_PAGE_SIZE")
    wanted = dict(
        IPC_SYSCTLS, **{"kernel/shmmax": str(scratch_mb << 20), "kernel/shmall": str((scratch_mb << 20) // page)}
    )
    failed = []
    for key, value in wanted.items():
        try:
            with open(f"/proc/sys/{key}", "w") as fh:
                fh.write(value)
        except OSError:
            failed.append(key)
    prot.mark("ipc_limits", not failed, f"could not set {', '.join(failed)}" if failed else "")
