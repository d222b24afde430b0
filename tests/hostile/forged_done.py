# expect: killed
# Forges the "run finished" frame and then keeps evaluating.
import os


class ForgedDone:
    def __call__(self, func, searchspace):
        os.write(func._req, b"D\x00\x00\x00\x00")
        for cfg in searchspace.get_random_sample(5):
            func(cfg)
