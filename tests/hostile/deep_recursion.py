# expect: exception
# Unbounded recursion: Python's recursion limit stops it.
class DeepRecursion:
    def __call__(self, func, searchspace):
        def down(n):
            return down(n + 1) + 1
        down(0)
