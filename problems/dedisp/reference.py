"""Reference answer for the dedispersion problem (double precision sums)."""

import numpy as np


def dedisp(args: dict, params: dict) -> dict:
    """Expected outputs by argument name."""
    data, delay = args["in"], args["delay"]
    ndm, nsamp = args["out"].shape
    out = np.zeros((ndm, nsamp))
    # float32 product, as on the GPU (exact by construction of the delays)
    shifts = (np.arange(ndm, dtype=np.float32)[:, None] * delay[None, :]).astype(np.int64)
    for c in range(data.shape[0]):
        row = data[c].astype(np.float64)
        idx = shifts[:, c][:, None] + np.arange(nsamp)[None, :]
        out += row[idx]
    return {"out": out.astype(np.float32)}
