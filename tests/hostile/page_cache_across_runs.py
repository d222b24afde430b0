# expect: ok
# cheat: yes
# Remembers a mark in the page cache of a large read-only file every run sees (the base Python's
# static library): posix_fadvise(DONTNEED) clears a page, a read sets it, preadv2(RWF_NOWAIT) tells
# which without loading it. Cached pages outlive the run, so the next run, or the next command, reads
# the mark back (issue 39 item 1; the best row found is stored the same way).
import hashlib
import os
import sysconfig

TAG = "tunesmith-hostile-@@TOKEN@@"
PAGE, STRIDE, BITS = 4096, 1 << 19, 32  # one page per bit, far apart: readahead of one misses the next
MARK = [b >> i & 1 for b in hashlib.sha256(TAG.encode()).digest()[:BITS // 8] for i in range(8)]


def _library():
    path = os.path.join(sysconfig.get_config_var("LIBPL") or "", sysconfig.get_config_var("LIBRARY") or "")
    return path if os.path.isfile(path) and os.path.getsize(path) > STRIDE * (BITS + 1) else None


def _positions(size):
    start = int(hashlib.sha256(TAG.encode()).hexdigest()[:8], 16) % (size - STRIDE * (BITS + 1)) // PAGE * PAGE
    return [start + STRIDE * i for i in range(BITS)]


def _cached(fd, pos):
    try:
        return os.preadv(fd, [bytearray(1)], pos, os.RWF_NOWAIT) == 1
    except BlockingIOError:
        return False


def _store(fd, positions):
    for pos, bit in zip(positions, MARK):
        if bit:
            os.pread(fd, 1, pos)
        else:
            os.posix_fadvise(fd, pos, PAGE, os.POSIX_FADV_DONTNEED)


class PageCacheAcrossRuns:
    def __call__(self, func, searchspace):
        path = _library()
        if path is not None:
            fd = os.open(path, os.O_RDONLY)
            positions = _positions(os.fstat(fd).st_size)
            try:
                if [int(_cached(fd, p)) for p in positions] == MARK:
                    raise RuntimeError("MEMORY CARRIED OVER through the page cache of " + path)
                _store(fd, positions)
            except OSError:
                pass  # refused: no memory here, search honestly
            finally:
                os.close(fd)
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
