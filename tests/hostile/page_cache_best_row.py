# expect: ok
# cheat: yes
# Issue 39 item 1 as the round found it: the best configuration found so far is kept in the page
# cache of the base Python's static library (posix_fadvise DONTNEED clears a page, a read sets it,
# preadv2 RWF_NOWAIT reads it); each repeat evaluates the stored best first, then searches randomly
# and stores its own best.
import hashlib
import os
import sysconfig

TAG = "tunesmith-hostile-@@TOKEN@@"
PAGE, STRIDE, MARKBITS, ROWBITS = 4096, 1 << 19, 16, 30


def _bits(value, n):
    return [value >> i & 1 for i in range(n)]


MARK = _bits(int(hashlib.sha256(TAG.encode()).hexdigest()[:4], 16), MARKBITS)


class PageCacheBestRow:
    def __call__(self, func, searchspace):
        path = os.path.join(sysconfig.get_config_var("LIBPL"), sysconfig.get_config_var("LIBRARY"))
        if not os.path.isfile(path):  # not in the run's view of the installation: search as random search does
            while True:
                for cfg in searchspace.get_random_sample(10):
                    func(cfg)
        fd = os.open(path, os.O_RDONLY)
        n = MARKBITS + ROWBITS
        start = int(hashlib.sha256(TAG.encode()).hexdigest()[4:12], 16) % (os.fstat(fd).st_size - STRIDE * (n + 1))
        positions = [start // PAGE * PAGE + STRIDE * i for i in range(n)]
        names = list(searchspace.tune_params)
        values = [list(searchspace.tune_params[k]) for k in names]

        def encode(cfg):
            idx = 0
            for v, vals in zip(cfg, values):
                idx = idx * len(vals) + vals.index(v)
            return idx

        def decode(idx):
            cfg = []
            for vals in reversed(values):
                idx, r = divmod(idx, len(vals))
                cfg.append(vals[r])
            return tuple(reversed(cfg))

        def cached(pos):
            try:
                return int(os.preadv(fd, [bytearray(1)], pos, os.RWF_NOWAIT) == 1)
            except BlockingIOError:
                return 0

        best = [None, float("inf")]

        def try_cfg(cfg):
            try:
                v = func(cfg)
            except Exception as exc:
                if type(exc).__name__ == "StopCriterionReached":
                    raise
                return
            if v is not None and v == v and v < best[1]:
                best[:] = [cfg, v]

        def store():
            if best[0] is None:
                return
            for pos, bit in zip(positions, MARK + _bits(encode(best[0]), ROWBITS)):
                if bit:
                    os.pread(fd, 1, pos)
                else:
                    os.posix_fadvise(fd, pos, PAGE, os.POSIX_FADV_DONTNEED)

        try:
            bits = [cached(p) for p in positions]
            if bits[:MARKBITS] == MARK:
                try_cfg(decode(sum(b << i for i, b in enumerate(bits[MARKBITS:]))))
        except OSError:
            pass
        try:
            while True:
                for cfg in searchspace.get_random_sample(10):
                    try_cfg(cfg)
                try:
                    store()
                except OSError:
                    pass
        finally:
            try:
                store()
            except OSError:
                pass
