"""Reference answer for the fwht problem."""

import numpy as np

N = 1024  # transform length, as in problem.toml's defines (LOGN = 10)


def fwht(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: the natural-order Walsh-Hadamard transform of every row (exact)."""
    x = args["in"].astype(np.int64).reshape(-1, N)
    h = 1
    while h < N:
        pairs = x.reshape(x.shape[0], N // (2 * h), 2, h)
        x = np.concatenate([pairs[:, :, 0] + pairs[:, :, 1], pairs[:, :, 0] - pairs[:, :, 1]], axis=2)
        x = x.reshape(-1, N)
        h *= 2
    return {"out": x.reshape(-1).astype(np.float32)}
