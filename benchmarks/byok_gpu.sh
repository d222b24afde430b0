#!/usr/bin/env bash
# Bring your own kernel on the GPU machine: two naive CUDA kernels (benchmarks/byok/kernels/*_cuda) through
# the whole pipeline: template (hand-written replies, labelled as such, replayed through the LLM client),
# check in the sandbox's walls on the GPU, problem written, space measured in the walls, tuned with the best
# shipped optimizer, speed-up over the original and closeness to problems/gemm and problems/transpose.
# Usage (from the project root, .device carried, as for problems/build_caches.sh):
#     bash benchmarks/byok_gpu.sh [--kernel matmul_naive_cuda] [--rounds 7]    (arguments go to byok.py)
# Writes benchmarks/results/byok_gpu.json (and, with $OUT set, copies it and the log there). With --kernel, the
# other kernel's row of an existing byok_gpu.json is kept: a 10-minute call can run one kernel at a time.
set -uo pipefail
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
log=${OUT:-/tmp}/byok_gpu_$(date -u +%Y-%m-%dT%H%M%S).log  # one per call: two calls in one command keep both
{
  [ -f .device/install-kernel-tuner.sh ] && { bash .device/install-kernel-tuner.sh || exit 1; }
  # what the GPU image lacks of Tunesmith's own needs (pydantic and its few needs), as carried wheels: installed
  # into the system's site-packages, which the walls keep, not under /tmp, which they replace with a scratch
  compgen -G ".device/extra/*.whl" >/dev/null && { python3 -m pip install -q --no-index --no-deps .device/extra/*.whl || exit 1; }
  date -u
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  # the walls first, on their own: a kernel that cannot start inside them says why here
  python3 - <<'PY'
import numpy as np
from generator.kernels.walls import run_walled
src = 'extern "C" __global__ void one(float *x) { x[threadIdx.x] = 1.0f; }'
r = run_walled(src, "one", [32], [np.zeros(32, np.float32)], [0], {"block_size_x": [32]}, [(32,)], lang="cupy")
print("walls smoke:", r.device, "error:", r.error or r.compile_error, "walls held:",
      sorted(k for k, v in r.protections.get("held", {}).items() if v))
assert r.error is None and r.compile_error is None and float(r.outputs["32|0"].sum()) == 32.0, r.log[-3000:]
PY
  python3 -m benchmarks.byok --gpu --out benchmarks/results/byok_gpu.json "$@"
  date -u
} 2>&1 | tee "$log"
[ -n "${OUT:-}" ] && cp benchmarks/results/byok_gpu.json "$OUT/" 2>/dev/null
exit 0
