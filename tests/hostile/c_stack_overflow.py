# expect: killed|memory|exception|timeout
# Lifts the recursion limit: the C stack overflows (a native crash) or memory or time runs out.
import sys


class CStackOverflow:
    def __call__(self, func, searchspace):
        sys.setrecursionlimit(10**8)

        def down(n):
            return down(n + 1) + 1
        down(0)
