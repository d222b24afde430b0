"""Reference answer for the bitonic_sort problem."""

import numpy as np

SEGMENT = 2048


def bitonic_sort(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: every 2048 consecutive keys sorted ascending."""
    return {"out": np.sort(args["in"].reshape(-1, SEGMENT), axis=1).ravel()}
