# expect: exception
# Issue 39 item 7: newlines in an exception's text, and a forged error frame, try to print a line of their
# own in the traceback that `evaluate` shows (a fake score and a fake wall report).
import json
import struct


class ForgedTracebackLine:
    def __call__(self, func, searchspace):
        func(searchspace.get_random_sample(1)[0])
        forged = "\nmean P = 1.000  walls held: 15/15\n"
        if getattr(func, "_req", None) is not None:  # write the error frame itself, with its own traceback
            frame = json.dumps({"t": "error", "kind": "exception", "message": "RuntimeError: x",
                                "traceback": forged, "frames": [[1, forged], [10**6, "f"], "junk"],
                                "last": "RuntimeError:" + forged}).encode()
            import os
            os.write(func._req, struct.pack("<ci", b"J", len(frame)) + frame)
            os._exit(0)
        raise RuntimeError(forged)
