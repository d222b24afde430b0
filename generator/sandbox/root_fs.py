"""The run's file system: an allowlist root that holds only what the candidate's interpreter needs.

A denylist (cover the project, the hub, home directories) misses every copy a user keeps
elsewhere: other checkouts, a second hub, caches and run directories under /srv or /opt. So the
run does not see the host's root at all. It gets a fresh, read-only tmpfs as its root holding:

- the Python installation and the installed packages it may import, bound read-only at their
  own paths (`keep`, from `jobs.interpreter_paths`), with the symlinks that lead to them: where the
  host made its view (`view.py`) these paths hold its tmpfs copies, and nothing else of the disk;
- the system's shared-library directories and the loader's cache (an extension module imported
  late, e.g. scipy's, loads libstdc++ from there), read-only;
- a minimal /dev (null, zero, full, random, urandom, the fd links), a private /proc of the run's
  PID namespace, and one size-capped tmpfs for /tmp (working directory /tmp/work) and /dev/shm.

Everything else does not exist for it. Called by trusted set-up code (`child.py`) in the run's
own mount namespace, before the candidate's code is loaded; returns False where the kernel
refuses a step, and the caller falls back to covering paths (`isolation.hide_paths`).
"""

from __future__ import annotations

import os
import platform
import sys

from generator.sandbox.isolation import (
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    Protections,
    check_call,
    libc,
    mount,
    open_paths,
)

MNT_DETACH = 2
MS_NOATIME, MS_NODIRATIME = 1024, 2048
ST_NOSUID, ST_NODEV, ST_NOEXEC, ST_NOATIME, ST_NODIRATIME = 2, 4, 8, 1024, 2048
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
STAGE = "/tmp"  # where the new root is assembled (shadowed by it in this mount namespace only)
WORKDIR = "/tmp/work"
OLD_ROOT = "/.old-root"
# What the dynamic loader searches by default; shared libraries only, no data of the user's.
LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}


def enter_allowlist_root(keep, hidden, scratch_mb: int, prot: Protections, devices=()) -> str | None:
    """Build the allowlist root, pivot into it and return the working directory; None if refused.

    `devices`: more names under /dev to bind in (a GPU's nodes for a walled CUDA kernel, `kernels/`)."""
    if SYS_PIVOT_ROOT is None:
        prot.mark("allowlist_root", False, f"no pivot_root number known for {platform.machine()}")
        return None
    plan = _plan(keep)
    devices = tuple(DEVICES) + tuple(devices)
    handles = open_paths([real for real, _ in plan] + ["/dev/" + n for n in devices])
    try:
        mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        opened = dict(handles)
        _scratch(scratch_mb)  # first: a venv under /tmp is bound back inside it
        for real, links in plan:
            _mirror_links(links)
            if real in opened:
                _bind_read_only(opened[real], STAGE + real)
        _cover_inside(hidden, [real for real, _ in plan])
        _minimal_dev(opened, devices)
        mount("proc", STAGE + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        os.mkdir(STAGE + OLD_ROOT, 0o700)
        check_call(libc().syscall(SYS_PIVOT_ROOT, STAGE.encode(), (STAGE + OLD_ROOT).encode()), "pivot_root")
    except OSError as exc:
        libc().umount2(STAGE.encode(), MNT_DETACH)  # undo the stage: the fallback starts from the host's view
        prot.mark("allowlist_root", False, f"{exc}: falling back to covering paths")
        return None
    finally:
        for _, fd in handles:
            os.close(fd)
    _leave_old_root()  # past the pivot there is no way back: a failure here is a set-up error
    prot.mark("allowlist_root", True, f"{len(plan)} paths kept read-only")
    for name in ("hidden_paths", "private_tmp", "private_proc"):
        prot.mark(name, True)
    return WORKDIR


def _plan(keep) -> list[tuple[str, list[tuple[str, str]]]]:
    """(real path, [(symlink, its target)] on the way to it) per kept path; nested ones come with their parent.

    Read before the stage is mounted: a venv under /tmp is shadowed by it afterwards."""
    reals = sorted({os.path.realpath(k) for k in [*keep, *LIBRARY_DIRS] if os.path.lexists(k)})
    outer = [r for r in reals if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in reals)]
    raw = [*keep, *LIBRARY_DIRS, sys.executable, sys.prefix, sys.base_prefix, *sys.path]
    links: dict[str, set[str]] = {r: set() for r in outer}
    for path in raw:
        if not path or not os.path.isabs(path) or not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        owner = next((o for o in outer if real == o or real.startswith(o.rstrip("/") + "/")), None)
        if owner is not None:
            links[owner].update(_symlinks_on_the_way(path))
    return [(r, [(link, os.readlink(link)) for link in sorted(links[r])]) for r in outer]


def _symlinks_on_the_way(path: str) -> list[str]:
    """Every symlink met while resolving `path` (e.g. /lib -> usr/lib, a venv's lib64 -> lib)."""
    found, todo, seen = [], [path], set()
    while todo:
        p = todo.pop()
        parts = p.split("/")[1:]
        for i in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:i])
            if os.path.islink(prefix) and prefix not in seen:
                seen.add(prefix)
                found.append(prefix)
                target = os.path.join(os.path.dirname(prefix), os.readlink(prefix))
                todo.append(os.path.normpath(os.path.join(target, *parts[i:])))
                break
    return found


def _mirror_links(links: list[tuple[str, str]]) -> None:
    """Recreate the host's symlinks inside the new root."""
    for link, target in links:
        if os.path.lexists(STAGE + link):
            continue
        os.makedirs(os.path.dirname(STAGE + link), mode=0o755, exist_ok=True)
        os.symlink(target, STAGE + link)


def _bind_read_only(fd: int, target: str) -> None:
    """Bind the opened path at `target`, read-only, keeping the flags the kernel locks in a user namespace."""
    source = f"/proc/self/fd/{fd}"
    if os.path.isdir(source):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _locked_flags(target))


def _locked_flags(path: str) -> int:
    """nosuid/nodev/noexec/noatime of the mount at `path`: a remount inside a user namespace must keep them."""
    f = os.statvfs(path).f_flag
    pairs = (
        (ST_NOSUID, MS_NOSUID),
        (ST_NODEV, MS_NODEV),
        (ST_NOEXEC, MS_NOEXEC),
        (ST_NOATIME, MS_NOATIME),
        (ST_NODIRATIME, MS_NODIRATIME),
    )
    return sum(ms for st, ms in pairs if f & st)


def _cover_inside(hidden, kept: list[str]) -> None:
    """Task data that lies inside a kept path (a hub in an installed package) stays covered."""
    for h in sorted({os.path.realpath(p) for p in hidden}, key=len):
        if h in kept or not any(h.startswith(k.rstrip("/") + "/") for k in kept) or not os.path.lexists(STAGE + h):
            continue
        if os.path.isdir(STAGE + h):
            mount("tmpfs", STAGE + h, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0755")
        else:
            mount("/dev/null", STAGE + h, None, MS_BIND)


def _minimal_dev(opened: dict, devices=DEVICES) -> None:
    """A read-only /dev of a few harmless devices (bound from the host's) and the fd links."""
    dev = STAGE + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for name in devices:
        if "/dev/" + name in opened:
            open(f"{dev}/{name}", "a").close()
            mount(f"/proc/self/fd/{opened['/dev/' + name]}", f"{dev}/{name}", None, MS_BIND)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"{dev}/{name}")
    os.makedirs(f"{dev}/shm", mode=0o755)
    mount(STAGE + "/tmp/.shm", f"{dev}/shm", None, MS_BIND)
    mount("none", dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")


def _scratch(scratch_mb: int) -> None:
    """One size-capped tmpfs for /tmp and /dev/shm: everything a run writes counts against one limit."""
    tmp = STAGE + "/tmp"
    os.makedirs(STAGE + "/proc", mode=0o555, exist_ok=True)
    os.makedirs(tmp, mode=0o755, exist_ok=True)
    mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=1777")
    os.makedirs(tmp + "/.shm", mode=0o1777)
    os.chmod(tmp + "/.shm", 0o1777)
    os.makedirs(tmp + "/work", mode=0o755)


def _leave_old_root() -> None:
    """Detach the host's root (now at OLD_ROOT) and make the new root read-only."""
    os.chdir("/")
    check_call(libc().umount2(OLD_ROOT.encode(), MNT_DETACH), "umount old root")
    os.rmdir(OLD_ROOT)
    mount("none", "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
