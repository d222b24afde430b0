"""Reference answer for the layernorm problem."""

import numpy as np

EPS = 1e-5  # as in layernorm.cu


def layernorm(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: every row of `in` normalised, scaled by gamma, shifted by beta."""
    x = args["in"].astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + EPS) * args["gamma"].astype(np.float64) + args["beta"].astype(np.float64)
    return {"out": y.astype(np.float32)}
