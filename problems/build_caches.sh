#!/usr/bin/env bash
# Brute-forces the problems' search spaces on the GPU machine within a time budget (resumable).
# Usage (from the project root, .device carried): bash problems/build_caches.sh SECONDS [--smoke] PROBLEM...
# Writes problems/caches/<problem>/<GPU>.json.gz when a space is complete, else a resumable <GPU>.json;
# with $OUT set, packs problems/caches into $OUT/caches.tgz and the log into $OUT/build.log.
set -uo pipefail
budget=$1; shift
smoke=0; if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
end=$((SECONDS + budget))
# Keeps a PYTHONPATH already set (packages the GPU image lacks, e.g. pydantic, installed from carried wheels).
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
log=${OUT:-/tmp}/build.log
{
  bash .device/install-kernel-tuner.sh || exit 1
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  if [ $smoke = 1 ]; then
    for p in "$@"; do python3 -m generator.cli cache build problems/$p/problem.toml --sample 12 --out /tmp/smoke/$p 2>&1 | grep -v "cfg/s\|s/cfg"; done
  fi
  for p in "$@"; do
    left=$((end - SECONDS))
    [ $left -lt 40 ] && { echo "skipping $p: ${left}s left"; continue; }
    python3 -m generator.cli cache build problems/$p/problem.toml --time-limit $left 2>&1 | tr '\r' '\n' | grep -v "it/s\|cfg/s\|s/cfg" ; 
  done
  ls -la problems/caches/*
} 2>&1 | tee "$log"
[ -n "${OUT:-}" ] && tar czf "$OUT/caches.tgz" problems/caches
exit 0
