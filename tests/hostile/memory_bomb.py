# expect: memory
# Allocates until the address-space limit stops it.
class MemoryBomb:
    def __call__(self, func, searchspace):
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))
