# expect: ok
# Issue 23 item 3/5: leaves unread answers in its response pipe; a later run that finds them has a memory.
import os
import select
import struct


class StaleAnswers:
    def __call__(self, func, searchspace):
        if select.select([func._resp], [], [], 0)[0]:
            raise RuntimeError("MEMORY CARRIED OVER: stale answers wait in the response pipe")
        for cfg in searchspace.get_random_sample(3):
            func(cfg)
        for row in range(400):  # requests whose answers are never read
            os.write(func._req, struct.pack("<ci", b"E", row))
