"""Reference answer for the histogram problem."""

import numpy as np


def histogram(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: how many input bytes fall in each of the 256 bins."""
    return {"hist": np.bincount(args["in"], minlength=256).astype(np.uint32)}
