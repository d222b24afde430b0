"""Reference answer for the GEMM problem: C = A @ B in double precision."""

import numpy as np


def gemm(args: dict, params: dict) -> dict:
    """Expected outputs by argument name."""
    return {"C": (args["A"].astype(np.float64) @ args["B"].astype(np.float64)).astype(np.float32)}
