"""Reference answer for the softmax problem."""

import numpy as np


def softmax(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: the softmax of every row of `in` (computed in double precision)."""
    x = args["in"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}
