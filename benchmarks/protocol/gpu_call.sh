#!/usr/bin/env bash
# One call on a GPU machine of the device tool: brute-force problems on every GPU while the CPUs bench strategies.
# Usage (project root; carry .device (Kernel Tuner wheels, and Tunesmith's few extra needs in .device/extra) and
# .hub (a copy of ../shared/data's benchmark_hub and more_spaces, which do not travel)):
#   BUILD_SECONDS=480 BENCH_SECONDS=540 bash benchmarks/protocol/gpu_call.sh "gpu0 problems" "gpu1 problems" \
#       -- NAME "bench arguments" [NAME "bench arguments" ...]
# Each NAME runs `tunesmith bench <arguments> --json $OUT/NAME.json` (one after another, at low priority, on all
# but 4 cores), with TUNESMITH_BENCHMARK_HUB pointing at the carried hub; bench output goes to $OUT/bench.log.
# What a bench has not finished by BENCH_SECONDS is cut off (its JSON keeps the strategies it finished).
# BENCH_WORKERS sets the bench's workers instead (fewer leave the builds' compilers more of the CPUs).
set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TUNESMITH_BENCHMARK_HUB=$PWD/.hub/benchmark_hub
out=${OUT:-/tmp/out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps .device/extra/*.whl || exit 1
bash .device/install-kernel-tuner.sh || exit 1
lists=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do lists+=("$1"); shift; done; shift
workers=${BENCH_WORKERS:-$(( $(nproc) - 4 ))}
( [ ${#lists[@]} -gt 0 ] && bash problems/build_on_gpus.sh "${BUILD_SECONDS:-480}" "${lists[@]}" ) &
builder=$!
(
  while [ $# -gt 1 ]; do
    name=$1; args=$2; shift 2
    echo "== $name: tunesmith bench $args (workers $workers) $(date -u +%T)"
    # shellcheck disable=SC2086
    timeout $(( ${BENCH_SECONDS:-540} - SECONDS )) nice -n 15 python3 -m generator.cli bench $args \
        --workers $workers --no-progress --json "$out/$name.json" 2>&1 | tail -40
  done
) > "$out/bench.log" 2>&1 &
wait $builder
wait
echo "done $(date -u +%T)"; ls -la "$out"
