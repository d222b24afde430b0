# expect: ok
# Prints about 20 MB to stdout and stderr, then searches honestly for a few evaluations.
import sys


class HugeOutput:
    def __call__(self, func, searchspace):
        line = "x" * 999
        for i in range(10000):
            print(line)
            print(line, file=sys.stderr)
        for cfg in searchspace.get_random_sample(20):
            func(cfg)
