"""flagship4's and flagship5's training and validation spaces (their test spaces stay blind for the components
benchmarked on these): bench_screened_restart, bench_switch_explore, bench_switch_pool and bench_repair run on them.
pnpoly on the RTX 3060 laptop GPU is the trap space among them."""

MORE = "../shared/data/more_spaces/cachefiles/"
SPACES = [
    "problem:gemm/H200",
    "problem:hotspot/H200",
    "problem:gemv/H100",
    "problem:transpose/H100",
    "problem:nbody/H100",
    "hub:convolution_milo/A100",
    "hub:dedispersion_milo/A100",
    MORE + "pnpoly/RTX_2080_Ti.json.gz",
    MORE + "pnpoly/RTX_3060_laptop.json.gz",
    "problem:conv2d/H200",
    "problem:stencil3d/H100",
    MORE + "pnpoly/RTX_Titan.json.gz",
    MORE + "gemm/RTX_2080_Ti.json.gz",
]
