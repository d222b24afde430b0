# expect: ok|exception|timeout
# cheat: yes
# Searches the file system for Kernel Tuner cache files and evaluates the best entry it finds.
import gzip
import json
import os
import time

ROOTS = ["@@HUB@@", "@@PROJECT@@", "/work", "/root", "/home", "/tmp", "/"]


def caches(deadline):
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            if time.monotonic() > deadline or dirpath.startswith(("/proc", "/sys", "/dev")):
                dirnames[:] = []
                continue
            for name in filenames:
                if name.endswith((".json.gz", ".json")) and "A100" in name:
                    yield os.path.join(dirpath, name)


class ReadCacheFile:
    def __call__(self, func, searchspace):
        for path in caches(time.monotonic() + 1.0):
            try:
                with (gzip.open if path.endswith(".gz") else open)(path, "rt") as fh:
                    doc = json.load(fh)
                best = min((e for e in doc["cache"].values() if isinstance(e.get("time"), float)), key=lambda e: e["time"])
                func(tuple(best[k] for k in searchspace.tune_params))
                return
            except Exception:
                continue
