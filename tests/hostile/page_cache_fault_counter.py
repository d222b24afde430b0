# expect: ok
# cheat: yes
# Keeps a bit in the page cache without any refused call: a read sets it (the page stays cached after
# the run), and the fault counters test it: touching a mapped page that is not cached is a major fault
# (getrusage's ru_majflt), touching a cached one is not. The file is one of the view every run reads (the
# standard library's pydoc topics, imported by no one). With REPORT set a run says what it saw as its
# error, so a test can compare two runs (tests/test_sandbox_view.py); else it searches honestly.
import mmap
import os
import resource

import pydoc_data

PAGE = 4096
REPORT = "@@REPORT@@" == "1"


def _was_cached(path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        with mmap.mmap(fd, PAGE, prot=mmap.PROT_READ) as m:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
            m[0]  # a major fault loads the page from the disk; a minor one finds it cached
            return resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before
    finally:
        os.close(fd)


def _set(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.pread(fd, PAGE, 0)  # cached now, and it stays cached after the run
    finally:
        os.close(fd)


class PageCacheFaultCounter:
    def __call__(self, func, searchspace):
        path = os.path.join(os.path.dirname(pydoc_data.__file__), "topics.py")
        seen = _was_cached(path)
        _set(path)
        if REPORT:
            raise RuntimeError(f"PAGE WAS {'CACHED' if seen else 'NOT CACHED'}")
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
