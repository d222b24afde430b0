# expect: ok|exception
# Tries to fill the disk: a huge file in its directory, and in /tmp and /dev/shm.
class DiskFill:
    def __call__(self, func, searchspace):
        chunk = b"\0" * (1 << 20)
        for path in ("big.bin", "/tmp/big.bin", "/dev/shm/big.bin"):
            try:
                with open(path, "wb") as fh:
                    for _ in range(2048):
                        fh.write(chunk)
            except OSError:
                pass
