"""Reference answer for the fwht problem."""

import numpy as np

N = 1024  # transform length, as in problem.toml's defines (LOGN = 10)


def fwht(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: the natural-order Walsh-Hadamard transform of every row (exact)."""
    # Single precision is exact here: every value on the way is an integer of magnitude at most 4096.
    x = args["in"].astype(np.float32).reshape(-1, N)
    y = np.empty_like(x)
    h = 1
    while h < N:
        pairs, into = x.reshape(-1, N // (2 * h), 2, h), y.reshape(-1, N // (2 * h), 2, h)
        np.add(pairs[:, :, 0], pairs[:, :, 1], out=into[:, :, 0])
        np.subtract(pairs[:, :, 0], pairs[:, :, 1], out=into[:, :, 1])
        x, y = y, x
        h *= 2
    return {"out": x.reshape(-1)}
