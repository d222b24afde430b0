"""Reference answer for the 3D stencil problem (double precision)."""

import numpy as np

C0, C1 = 0.4, 0.1  # the kernel's coefficients, C0 and C1 in problem.toml


def stencil3d(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: one step, a missing neighbour at the edge being the cell itself."""
    u = args["in"].astype(np.float64)
    e = np.pad(u, 1, mode="edge")
    sides = (
        e[:-2, 1:-1, 1:-1]
        + e[2:, 1:-1, 1:-1]
        + e[1:-1, :-2, 1:-1]
        + e[1:-1, 2:, 1:-1]
        + e[1:-1, 1:-1, :-2]
        + e[1:-1, 1:-1, 2:]
    )
    return {"out": (C0 * u + C1 * sides).astype(np.float32)}
