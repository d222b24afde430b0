"""Reference answer for the reduction problem."""

import numpy as np


def reduction(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: the sum (exact: the inputs are small integers)."""
    return {"out": np.array([args["in"].astype(np.float64).sum()])}
