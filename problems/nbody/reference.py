"""Reference answer for the n-body problem (double precision, in blocks of bodies)."""

import numpy as np

EPS2 = 0.01  # the kernel's softening, EPS2 in problem.toml


def nbody(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: every body's acceleration (x, y, z), G = 1 / N as in the kernel."""
    pos = args["pos"].astype(np.float64)
    p, m = pos[:, :3], pos[:, 3]
    sq = (p * p).sum(axis=1)
    acc = np.empty_like(p)
    for i0 in range(0, len(p), 1024):  # sum_j w_ij (p_j - p_i) = w @ p - p_i * sum_j w_ij, as matrix products
        block = p[i0 : i0 + 1024]
        r2 = np.maximum(sq[i0 : i0 + 1024, None] + sq[None, :] - 2 * block @ p.T, 0.0) + EPS2
        w = m[None, :] / (r2 * np.sqrt(r2))
        acc[i0 : i0 + 1024] = w @ p - block * w.sum(axis=1)[:, None]
    return {"acc": (acc / len(p)).astype(np.float32).ravel()}
