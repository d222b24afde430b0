# expect: timeout
# Blocks in a sleep: no CPU used, so only the wall-clock limit can end it.
import time


class Sleeps:
    def __call__(self, func, searchspace):
        time.sleep(3600)
