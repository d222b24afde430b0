# expect: ok|killed
# Issue 23 item 6: leaves three bytes of a request in the evaluator's buffer, then returns.
import os


class HalfRequest:
    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(3):
            func(cfg)
        os.write(func._req, b"E\x00\x00")
