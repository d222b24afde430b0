# expect: ok
# Tries to carry knowledge from one repeat to the next (class attribute, builtins, files) and
# raises if it ever finds it: every repeat must start from nothing.
import builtins
import os

PLACES = ["memo.txt", "/tmp/memo.txt", "/dev/shm/memo.txt", "/var/tmp/memo.txt", os.path.expanduser("~/memo.txt")]


class MemoAcrossRepeats:
    memo = []

    def __call__(self, func, searchspace):
        seen = [p for p in PLACES if os.path.exists(p)]
        if MemoAcrossRepeats.memo:
            seen.append("class attribute")
        if hasattr(builtins, "_tunesmith_memo"):
            seen.append("builtins")
        if seen:
            raise RuntimeError("MEMORY CARRIED OVER: " + ", ".join(seen))
        MemoAcrossRepeats.memo.append(1)
        builtins._tunesmith_memo = 1
        for p in PLACES:
            try:
                with open(p, "w") as fh:
                    fh.write("best config")
            except OSError:
                pass
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
