# expect: killed
# Dereferences a null pointer through ctypes.
import ctypes


class Segfault:
    def __call__(self, func, searchspace):
        ctypes.string_at(0)
