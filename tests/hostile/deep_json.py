# expect: killed
# Issue 23 item 7: one protocol frame of JSON nested 100,000 deep.
import os
import struct


class DeepJson:
    def __call__(self, func, searchspace):
        data = b"[" * 100000 + b"]" * 100000
        os.write(func._req, struct.pack("<ci", b"J", len(data)) + data)
        for cfg in searchspace.get_random_sample(3):
            func(cfg)
