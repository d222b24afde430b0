#!/usr/bin/env bash
# Brute-forces the problems' search spaces on the GPU machine within a time budget (resumable).
# Usage (from the project root, .device carried): bash problems/build_caches.sh SECONDS [--smoke] PROBLEM...
# Writes problems/caches/<problem>/<GPU>.json.gz when a space is complete, else a resumable <GPU>.json.
# --smoke measures 8 random configurations of each problem first and skips a problem where fewer than half of
# them compile, run and verify (a broken kernel then costs seconds, not the budget).
# With CUDA_VISIBLE_DEVICES set, the log is build_gpu<N>.log (build_on_gpus.sh runs one of these per GPU);
# with $OUT set, the log goes there, and, unless TUNESMITH_NO_PACK is set, problems/caches is packed into
# $OUT/caches.tgz.
set -uo pipefail
budget=$1; shift
smoke=0; if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
end=$((SECONDS + budget))
# Keeps a PYTHONPATH already set (packages the GPU image lacks, e.g. pydantic, installed from carried wheels).
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
log=${OUT:-/tmp}/build${CUDA_VISIBLE_DEVICES:+_gpu$CUDA_VISIBLE_DEVICES}.log
{
  python3 -c "import kernel_tuner" 2>/dev/null || bash .device/install-kernel-tuner.sh || exit 1
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  for p in "$@"; do
    left=$((end - SECONDS))
    [ $left -lt 40 ] && { echo "skipping $p: ${left}s left"; continue; }
    if [ $smoke = 1 ]; then
      rm -rf /tmp/smoke/$p
      python3 -m generator.cli cache build problems/$p/problem.toml --sample 8 --out /tmp/smoke/$p 2>&1 | grep -v "cfg/s\|s/cfg"
      if ! python3 problems/smoke_ok.py /tmp/smoke/$p; then echo "skipping $p: its smoke sample failed"; continue; fi
    fi
    left=$((end - SECONDS))
    python3 -m generator.cli cache build problems/$p/problem.toml --time-limit $left 2>&1 | tr '\r' '\n' | grep -v "it/s\|cfg/s\|s/cfg" ;
  done
  ls -la problems/caches/*
} 2>&1 | tee "$log"
[ -n "${OUT:-}" ] && [ -z "${TUNESMITH_NO_PACK:-}" ] && tar czf "$OUT/caches.tgz" problems/caches
exit 0
