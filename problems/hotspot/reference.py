"""Reference answer for the hotspot problem: temporal_tiling_factor explicit steps in double precision."""

import numpy as np


def hotspot(args: dict, params: dict) -> dict:
    """Expected outputs by argument name, after params['temporal_tiling_factor'] steps."""
    t = args["temp"].astype(np.float64)
    p = args["power"].astype(np.float64)
    k, rx, ry, rz, amb = (float(args[n]) for n in ("step_div_cap", "rx_1", "ry_1", "rz_1", "amb_temp"))
    for _ in range(int(params.get("temporal_tiling_factor", 1))):
        e = np.pad(t, 1, mode="edge")  # a missing neighbour at the edge is the cell itself
        north, south, west, east = e[:-2, 1:-1], e[2:, 1:-1], e[1:-1, :-2], e[1:-1, 2:]
        t = t + k * (p + (south + north - 2 * t) * ry + (east + west - 2 * t) * rx + (amb - t) * rz)
    return {"out": t.astype(np.float32)}
