"""Row pointers and reference answer for the spmv problem."""

import numpy as np

ROW_GROUP = 64  # every 64 consecutive rows hold 1..64 nonzeros in a random order


def row_pointers(args: dict, rng: np.random.Generator) -> dict:
    """The CSR row pointers: row lengths 1..64, shuffled within each group of 64 rows (nnz is fixed)."""
    rows = args["row_ptr"].shape[0] - 1
    lengths = rng.permuted(np.tile(np.arange(1, ROW_GROUP + 1), (rows // ROW_GROUP, 1)), axis=1).ravel()
    ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    if ptr[-1] != args["vals"].shape[0]:
        raise ValueError(f"spmv: {ptr[-1]} nonzeros, the spec's vals hold {args['vals'].shape[0]}")
    return {"row_ptr": ptr.astype(np.int32)}


def spmv(args: dict, params: dict) -> dict:
    """Expected outputs by argument name: A x (exact: small integers, at most 64 products per row)."""
    products = args["vals"].astype(np.float64) * args["x"].astype(np.float64)[args["col_idx"]]
    return {"y": np.add.reduceat(products, args["row_ptr"][:-1]).astype(np.float32)}
