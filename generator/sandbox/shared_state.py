"""Kernel state that every run shares, and the system calls the filter refuses because of it (issue 39).

Namespaces give a run its own mounts, IPC, network and PIDs, but some kernel state belongs to a
file's inode, which every run reaches through its read-only view of the Python installation and the
shared libraries: the page cache of those files, and the locks, leases, notifications and futexes
keyed by them. A run that can change that state and a later (or a concurrent) run that can read it
back share a memory: a candidate stored the best row it found in which pages of the base Python's
static library were cached (`posix_fadvise(DONTNEED)` clears a page, `preadv2(RWF_NOWAIT)` tests it
without loading it) and read it back in the next repeat and the next command; concurrent runs
published rows as `flock` locks on standard-library files.

Each rule below names a call, the arguments that make it dangerous (all of them when none are
given) and why. Everything else stays allowed; why what remains is safe:

- reading a file (read, pread, mmap and page faults, sendfile, `madvise(WILLNEED)`) can only make
  pages resident, never evict them: what remains is a bit a run can set but not clear, readable by
  timing a read (which sets it) or through fault-around (a fault maps the resident neighbours of the
  page it loads, and /proc/self/pagemap or the resident-set size shows them). The security-model
  page says what that residue can carry and what closing it would cost;
- writing, syncing and punching holes (`fsync`, `sync_file_range`, `fallocate`) act on files the run
  can write: its own tmpfs, private to it;
- `madvise(DONTNEED/FREE)` drop the run's own page-table entries or anonymous memory (glibc's
  malloc needs them), not the page cache;
- shared futex waits stay allowed (`pthread_join` waits for the kernel's own shared wake at the
  thread id); a wait on a key in a shared file could only be woken by a shared wake from user
  space, which is refused, so nothing of another run reaches it;
- locks on the run's own files would be harmless, but a filter cannot tell a tmpfs file from the
  shared installation, so every lock call is refused (an in-memory SQLite database still works;
  one in a file says "database is locked").
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

RWF_NOWAIT = 0x8
FUTEX_PRIVATE_FLAG, FUTEX_CMD_MASK = 128, 0x7F
FUTEX_WAIT, FUTEX_WAIT_BITSET = 0, 9
F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
F_SETLEASE, F_GETLEASE, F_NOTIFY = 1024, 1025, 1026
F_GET_RW_HINT, F_SET_RW_HINT = 1035, 1036  # the write-life hint is the inode's (its owner may set it)
MADV_COLD, MADV_PAGEOUT, MADV_COLLAPSE = 20, 21, 25


@dataclass(frozen=True)
class Rule:
    """Refuse `call` with `errno`: always (no `arg`), or when argument `arg` is one of `values`
    (`bits`: when it has any of these bits set; `futex`: a futex operation that is neither private
    nor a wait)."""

    call: str
    why: str
    errno: int = errno.EPERM
    arg: int | None = None
    values: tuple[int, ...] = ()
    bits: int = 0
    futex: bool = False


RULES = (
    # the page cache: observe residency without loading a page, or evict pages
    Rule("mincore", "tells which pages of a mapped file are resident without loading them"),
    Rule("cachestat", "tells how many pages of a file are resident", errno.ENOSYS),
    Rule("preadv2", "RWF_NOWAIT reads only resident pages: a test of residency", arg=5, bits=RWF_NOWAIT),
    Rule("pwritev2", "RWF_NOWAIT, as for preadv2", arg=5, bits=RWF_NOWAIT),
    Rule("fadvise64", "DONTNEED evicts a file's clean pages for everyone (the other advice is only a hint)"),
    Rule("readahead", "loads pages without reading them (only a hint)"),
    Rule(
        "madvise",
        "COLD and PAGEOUT push a mapped file's pages out, COLLAPSE rebuilds them",
        arg=2,
        values=(MADV_COLD, MADV_PAGEOUT, MADV_COLLAPSE),
    ),
    Rule("process_madvise", "madvise on a list of ranges, the same advice"),
    Rule("io_uring_setup", "its operations (NOWAIT reads, fadvise, locks) bypass this filter", errno.ENOSYS),
    Rule("io_setup", "Linux AIO takes RWF_NOWAIT in each request, out of the filter's sight", errno.ENOSYS),
    # locks, leases and notifications keyed by a file's inode, across mount namespaces
    Rule("flock", "a lock on a shared read-only file is seen by every concurrent run", errno.ENOLCK),
    Rule(
        "fcntl",
        "POSIX and open-file-description locks, leases, directory notifications and write-life hints "
        "on shared files (as a normal user a run owns its venv's files and may set an inode's hint)",
        errno.ENOLCK,
        arg=1,
        values=(
            F_GETLK,
            F_SETLK,
            F_SETLKW,
            F_OFD_GETLK,
            F_OFD_SETLK,
            F_OFD_SETLKW,
            F_SETLEASE,
            F_GETLEASE,
            F_NOTIFY,
            F_GET_RW_HINT,
            F_SET_RW_HINT,
        ),
    ),
    Rule("inotify_init", "IN_ACCESS/IN_OPEN on a shared file report other runs' reads"),
    Rule("inotify_init1", "as inotify_init"),
    Rule("inotify_add_watch", "as inotify_init"),
    Rule("fanotify_init", "as inotify, for a whole mount"),
    Rule("fanotify_mark", "as fanotify_init"),
    Rule(
        "futex",
        "a shared wake on a key in a shared file mapping wakes, and counts, another run's waiters",
        arg=1,
        futex=True,
    ),
    Rule("futex_waitv", "futex2: its private flag lies in memory, out of the filter's sight", errno.ENOSYS),
    Rule("futex_wake", "futex2, as futex_waitv", errno.ENOSYS),
    Rule("futex_wait", "futex2, as futex_waitv", errno.ENOSYS),
    Rule("futex_requeue", "futex2, as futex_waitv", errno.ENOSYS),
    # hardware counters see caches the runs share (and perf events can watch other processes)
    Rule("perf_event_open", "hardware counters observe caches every run shares"),
)

# system call numbers (x86_64, aarch64) of the calls above
NUMBERS = {
    "x86_64": {
        "mincore": 27,
        "madvise": 28,
        "fcntl": 72,
        "flock": 73,
        "readahead": 187,
        "futex": 202,
        "io_setup": 206,
        "fadvise64": 221,
        "inotify_init": 253,
        "inotify_add_watch": 254,
        "inotify_init1": 294,
        "perf_event_open": 298,
        "fanotify_init": 300,
        "fanotify_mark": 301,
        "preadv2": 327,
        "pwritev2": 328,
        "io_uring_setup": 425,
        "process_madvise": 440,
        "futex_waitv": 449,
        "cachestat": 451,
        "futex_wake": 454,
        "futex_wait": 455,
        "futex_requeue": 456,
    },
    "aarch64": {
        "io_setup": 0,
        "fcntl": 25,
        "inotify_init1": 26,
        "inotify_add_watch": 27,
        "flock": 32,
        "futex": 98,
        "readahead": 213,
        "fadvise64": 223,
        "mincore": 232,
        "madvise": 233,
        "perf_event_open": 241,
        "fanotify_init": 262,
        "fanotify_mark": 263,
        "preadv2": 286,
        "pwritev2": 287,
        "io_uring_setup": 425,
        "process_madvise": 440,
        "futex_waitv": 449,
        "cachestat": 451,
        "futex_wake": 454,
        "futex_wait": 455,
        "futex_requeue": 456,
    },
}


def shared_state_refusals(machine: str) -> list[tuple[int, Rule]]:
    """(system call number, rule) for each rule with a number on `machine` (aarch64 has no inotify_init)."""
    numbers = NUMBERS[machine]
    return [(numbers[r.call], r) for r in RULES if r.call in numbers]
