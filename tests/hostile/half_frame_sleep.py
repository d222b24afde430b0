# expect: ok
# Issue 23 item 16: half a frame and a sleep; the run is cut at its wall-clock limit. The next run's
# messages must not be read as the rest of this frame.
import os
import struct
import time


class HalfFrameSleep:
    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
        os.write(func._req, struct.pack("<ci", b"J", 4000) + b'{"t": "err')
        time.sleep(1000)
