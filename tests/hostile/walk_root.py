# expect: ok|exception|timeout
# cheat: yes
# Walks the whole file system for anything of the evaluator's: Kernel Tuner cache files (any copy of
# the hub), the project, run directories; reports what it found instead of searching.
import os
import time

MARKERS = ("@@TOKEN@@", "@@HUB_FILE_NAME@@", "root_fs.py", "archive.jsonl", "quickstart.toml")
WALK_S = 2.0 if "@@" in "@@WALK_S@@" else float("@@WALK_S@@")
TOP = ["@@PROJECT@@", "@@HUB@@", "/work", "/srv", "/opt", "/var", "/run", "/mnt", "/root", "/home", "/"]


class WalkRoot:
    def __call__(self, func, searchspace):
        import json, statistics, heapq, numpy, scipy.optimize, scipy.stats  # everything a candidate may import
        assert numpy.linalg.norm(numpy.array([3.0, 4.0])) == 5.0 and scipy.optimize.minimize_scalar
        found, deadline = [], time.monotonic() + WALK_S
        for top in TOP:
            for dirpath, dirnames, filenames in os.walk(top):
                if time.monotonic() > deadline or dirpath.startswith(("/proc", "/sys")):
                    dirnames[:] = []
                    continue
                found += [os.path.join(dirpath, n) for n in filenames if any(m and m in n for m in MARKERS)]
                found += [os.path.join(dirpath, n) for n in dirnames if "@@TOKEN@@" in n]
                if len(found) > 5:
                    break
        func(searchspace.get_random_sample(1)[0])
        if found:
            raise RuntimeError("LEAKED " + " ".join(sorted(set(found))[:6]))
