"""What a run can read, copied once per host into RAM: a read can no longer change what the kernel caches.

Every run reads the same Python installation and shared libraries. Read from disk, their pages come
and go in the page cache, which belongs to the file, not to a run: a run that reads a page nobody
else reads leaves it cached, and a later run (of the same command or the next one) can tell it is
cached by timing a read or from fault-around (`/proc/self/pagemap`, `smaps`, the resident size).
That is memory across runs (issue 39 item 1). Filtering system calls closes the calls that clear
or test a page without reading it; it cannot close a read.

So the host, before it loads anything a run will inherit, copies a shrunken view of the
installation into a tmpfs in a mount namespace of its own, binds the copies over the originals
there and starts its interpreter again from them. Pages of a tmpfs are never evicted (there is no
swap on these machines), so every page a run can read or map is resident all the time, and
reading it changes nothing anyone can observe. The view holds only:

- the standard library (without its tests, IDLE, tkinter, the static library and build files);
- the interpreter and, from the site directories, the distributions in `CANDIDATE_DISTRIBUTIONS`
  (what a candidate may import) and Tunesmith's own (the host needs it; runs keep it covered);
- the shared libraries all of these load (the ELF `DT_NEEDED` closure), `/etc/ld.so.cache` and the
  C.UTF-8 locale.

The tmpfs lives in the host's own mount namespace (as a normal user, in a user namespace of its
own, the runs' namespaces nesting inside it): the kernel frees it when the host and its runs are
gone, however they end, and two campaigns at once each hold their own copies. Where the kernel
refuses a step, the host runs from the disk as before and `shared_files_in_ram` is recorded as not
held (the system-call filter still refuses every call that tests or clears a cached page).
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import time
from importlib import metadata

from generator.candidate.source import ALLOWED_IMPORTS
from generator.sandbox.isolation import (
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MS_BIND,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    _map_user_ns,
    check_call,
    libc,
    mount,
)

# What a candidate may import beside the standard library (ALLOWED_IMPORTS: numpy, scipy and Kernel Tuner, a
# strategy's `kernel_tuner.util` and `strategies.common`; their distributions have the same names), with the
# distributions Kernel Tuner imports when loaded. Kernel Tuner's optional requirements (pandas, scikit-learn,
# pymoo) are left out: 0.3 GB more per host.
CANDIDATE_DISTRIBUTIONS = (
    *sorted(ALLOWED_IMPORTS),
    "python-constraint2",
    "jsonschema",
    "jsonschema-specifications",
    "referencing",
    "rpds-py",
    "attrs",
    "xmltodict",
    "packaging",
    "typing_extensions",
)
PROJECT_DISTRIBUTION = "tunesmith"
STDLIB_LEFT_OUT = (
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
    "config-",
    "_tkinter",
)  # _tkinter's extension alone loads Tk and X11
SYSTEM_FILES = ("/etc/ld.so.cache", "/usr/lib/locale/C.utf8")
LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
READY = "TUNESMITH_VIEW"  # set in the environment of the restarted host: "held <MB> <s>" or "refused <why>"


def enter_view() -> str:
    """Build the view and restart the host from it (does not return then); else return why not."""
    if os.environ.get(READY):
        return os.environ.pop(READY)
    uid, gid, user_ns = os.getuid(), os.getgid(), os.geteuid() != 0
    # As a normal user a user namespace of its own (the caller's uid mapped to itself) lets the host
    # mount; the runs' own user namespaces nest inside it. A step refused after the unshare leaves the
    # host in its namespaces without the view: the runs still get theirs, as they would from outside.
    try:
        check_call(libc().unshare(CLONE_NEWNS | (CLONE_NEWUSER if user_ns else 0)), "unshare")
        if user_ns:
            _map_user_ns(uid, gid)
        mount("none", "/", None, MS_REC | MS_PRIVATE)
        started = time.monotonic()
        size = _build(os.path.join(os.getcwd(), ".view"))
    except OSError as exc:  # the host carries on from the disk; the run records the wall as not held
        return f"refused: {exc}"
    os.environ[READY] = f"held {size / 2**20:.0f} MB in {time.monotonic() - started:.2f} s"
    os.execv(sys.executable, sys.orig_argv)


def _build(stage: str) -> int:
    """Copy the view into a tmpfs at `stage`, bind it over the originals; the bytes it holds."""
    files, links = plan()
    size = sum(-(-os.path.getsize(f) // 4096) * 4096 for f in files)  # a tmpfs holds whole pages
    os.makedirs(stage, mode=0o700, exist_ok=True)
    mount("tmpfs", stage, "tmpfs", 0, f"size={size // 2**20 + 16}m,mode=0755,nr_inodes=0")
    for link, target in links.items():
        os.makedirs(os.path.dirname(stage + link), mode=0o755, exist_ok=True)
        os.symlink(target, stage + link)
    for path in files:
        os.makedirs(os.path.dirname(stage + path), mode=0o755, exist_ok=True)
        shutil.copy2(path, stage + path, follow_symlinks=True)
    roots = _outer_roots()
    for root in roots:  # a root with nothing of the view in it is bound empty: nothing of the disk shows through
        os.makedirs(stage + root, mode=0o755, exist_ok=True)
    mount("none", stage, None, MS_REMOUNT | MS_RDONLY)
    for root in roots:
        mount(stage + root, root, None, MS_BIND | MS_REC)
        mount("none", root, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    for path in SYSTEM_FILES:
        if path in files:
            mount(stage + path, path, None, MS_BIND)
    return size


def _outer_roots() -> list[str]:
    """The directories the copies are bound over: each kept root of `jobs.interpreter_paths` and library dir."""
    from generator.sandbox.jobs import interpreter_paths

    reals = sorted({os.path.realpath(p) for p in [*interpreter_paths(), *LIBRARY_DIRS] if os.path.isdir(p)})
    return [r for r in reals if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in reals)]


def plan() -> tuple[list[str], dict[str, str]]:
    """(real files to copy, {symlink: its target}) of the view."""
    view = _View()
    for name in ("stdlib", "platstdlib"):
        view.add_tree(sysconfig.get_paths()[name], leave_out=STDLIB_LEFT_OUT)
    view.add(sys.executable)
    cfg = os.path.join(sys.prefix, "pyvenv.cfg")
    if os.path.isfile(cfg):
        view.add(cfg)
    for entry in _package_entries():
        view.add_tree(entry) if os.path.isdir(entry) else view.add(entry)
    view.add_libraries()
    for path in SYSTEM_FILES:
        view.add_tree(path) if os.path.isdir(path) else view.add(path)
    return sorted(view.files), view.links


def _package_entries() -> set[str]:
    """The allowed distributions' top-level files and directories, in every site directory a run keeps.

    Looked up by name in each directory, not only where the metadata lies: a venv may shadow a package
    of its base installation with a copy of its own (tests/sandbox/test_sandbox_venv.py)."""
    from generator.sandbox.jobs import interpreter_paths

    names = set()
    for dist_name in (*CANDIDATE_DISTRIBUTIONS, PROJECT_DISTRIBUTION):
        try:
            files = metadata.distribution(dist_name).files or ()
        except metadata.PackageNotFoundError:
            continue
        names.update(f.parts[0] for f in files if f.parts and f.parts[0] != "..")
    return {os.path.join(d, n) for d in interpreter_paths() for n in names if os.path.lexists(os.path.join(d, n))}


class _View:
    def __init__(self):
        self.files: set[str] = set()
        self.links: dict[str, str] = {}

    def add(self, path: str) -> None:
        """A file by any name: the symlinks met on the way, and the file itself."""
        todo = [os.path.abspath(path)]
        while todo:
            p = todo.pop()
            parts = p.split("/")[1:]
            for i in range(1, len(parts) + 1):
                prefix = "/" + "/".join(parts[:i])
                if os.path.islink(prefix):
                    self.links[prefix] = os.readlink(prefix)
                    target = os.path.join(os.path.dirname(prefix), self.links[prefix])
                    todo.append(os.path.normpath(os.path.join(target, *parts[i:])))
                    break
            else:
                if os.path.isfile(p):
                    self.files.add(p)

    def add_tree(self, top: str, leave_out=()) -> None:
        """Every file under `top`; inside it only a file or directory that is itself a symlink needs resolving."""
        if os.path.islink(top):
            self.add(top)
        top = os.path.realpath(top)
        for dirpath, dirnames, filenames in os.walk(top):
            if dirpath == top:
                dirnames[:] = [d for d in dirnames if not d.startswith(leave_out)]
            for name in dirnames:
                if os.path.islink(os.path.join(dirpath, name)):  # os.walk does not enter it
                    self.add_tree(os.path.join(dirpath, name))
            for name in (n for n in filenames if not n.startswith(leave_out)):
                path = os.path.join(dirpath, name)
                self.add(path) if os.path.islink(path) else self.files.add(path)

    def add_libraries(self) -> None:
        """The shared libraries the copied executables and extension modules need, transitively."""
        cache = _loader_cache()
        exe = os.path.realpath(sys.executable)
        todo = [
            f for f in self.files if (f == exe or f.endswith(".so") or ".so." in os.path.basename(f)) and _is_elf(f)
        ]
        seen = set(todo)
        while todo:
            path = todo.pop()
            needed, search, interp = _dynamic(path)
            for lib in ([interp] if interp else []) + [_find(n, search, cache) for n in needed]:
                if lib and lib not in seen:
                    seen.add(lib)
                    self.add(lib)
                    todo.append(os.path.realpath(lib))


def _loader_cache() -> dict[str, str]:
    """soname -> path, from `ldconfig -p` (what the dynamic loader finds through /etc/ld.so.cache)."""
    tool = next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.isfile(p)), "ldconfig")
    try:  # the host's PATH has no sbin
        out = subprocess.run([tool, "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    cache = {}
    for line in out.splitlines()[1:]:
        name, _, path = line.strip().partition(" => ")
        if path and ("x86-64" in name or "AArch64" in name or "64" in name):
            cache.setdefault(name.split()[0], path)
    return cache


def _find(name: str, search: list[str], cache: dict[str, str]) -> str | None:
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""  # e.g. x86_64-linux-gnu (Debian's library dirs)
    for d in [*search, None, *(f"{lib}/{multiarch}" for lib in ("/lib", "/usr/lib") if multiarch), *LIBRARY_DIRS]:
        path = cache.get(name) if d is None else os.path.join(d, name)
        if path and os.path.isfile(path):
            return path
    return None


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _dynamic(path: str) -> tuple[list[str], list[str], str | None]:
    """(DT_NEEDED names, RUNPATH/RPATH directories with $ORIGIN resolved, PT_INTERP) of a 64-bit ELF file."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as data:
        return _parse_dynamic(data, path)


def _parse_dynamic(data, path: str) -> tuple[list[str], list[str], str | None]:
    if data[4] != 2 or data[5] != 1:  # 64-bit little-endian only (x86_64, aarch64)
        return [], [], None
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, dynamic, interp = [], None, None
    for i in range(phnum):
        ptype, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
        if ptype == 1:
            loads.append((vaddr, off, filesz))
        elif ptype == 2:
            dynamic = (off, filesz)
        elif ptype == 3:
            interp = bytes(data[off : off + filesz]).rstrip(b"\0").decode()
    if dynamic is None:
        return [], [], interp
    entries = [struct.unpack_from("<qQ", data, dynamic[0] + 16 * i) for i in range(dynamic[1] // 16)]
    strtab = next((v for t, v in entries if t == 5), None)
    base = next((o + strtab - va for va, o, sz in loads if strtab is not None and va <= strtab < va + sz), None)
    if base is None:
        return [], [], interp

    def string(at):
        return bytes(data[base + at : data.find(b"\0", base + at)]).decode()

    needed = [string(v) for t, v in entries if t == 1]
    origin = os.path.dirname(os.path.realpath(path))
    search = [
        d.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
        for t, v in entries
        if t in (15, 29)
        for d in string(v).split(":")
        if d
    ]
    return needed, search, interp
