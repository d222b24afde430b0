"""Reference answer for the batched_gemm problem."""

import numpy as np


def batched_gemm(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: every A_m B_m (exact: the inputs are small integers)."""
    a = args["A"].astype(np.float64)
    return {"C": np.matmul(a, args["B"].astype(np.float64)).astype(np.float32)}
