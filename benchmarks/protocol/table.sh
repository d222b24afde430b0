#!/usr/bin/env bash
# The generalisation protocol's table (issue 38) in one command: every bench behind it, then `tunesmith crossval`.
# Usage (repository root): bash benchmarks/protocol/table.sh [WORKERS]
# Each bench writes benchmarks/results/protocol/<name>.json and is skipped when that file exists, so the table
# can be made in parts on several machines (2026-11-27: the 100-repeat rows and Kernel Tuner's generated
# strategies on the device machine's CPUs, the new H100 spaces and the rest on a 2-core machine; see
# docs/results/protocol.md). Sealed families (benchmarks/protocol/families.toml) are never run.
set -euo pipefail
workers=${1:-$(nproc)}
hub=${TUNESMITH_BENCHMARK_HUB:-../shared/data/benchmark_hub}
more=$(dirname "$hub")/more_spaces
out=benchmarks/results/protocol
protocol=benchmarks/protocol/families.toml
spaces=(--tasks "$hub" --tasks "$more" --tasks problems --protocol "$protocol" --seed 0 --workers "$workers")
# the spaces measured after the first benches ran: the five unsealed new families on the H100
new=(--tasks problems --task softmax/H100 --task attention/H100 --task batched_gemm/H100 --task bitonic_sort/H100
     --task scan/H100 --protocol "$protocol" --seed 0 --workers "$workers")
# the older problems' H200 spaces, measured on 2026-11-27 (session 11), in two batches
old1=(--tasks problems --task nbody/H200 --task gemv/H200 --task histogram/H200 --protocol "$protocol" --seed 0
      --workers "$workers")
old2=(--tasks problems --task transpose/H200 --task reduction/H200 --task stencil3d/H200 --protocol "$protocol"
      --seed 0 --workers "$workers")
archive=$(ls generated_algorithms/archive/*.py | grep -v '__init__\|flagship7_' | paste -sd, -)
flagship7=generated_algorithms/archive/flagship7_c0008.py  # the winner of benchmarks/campaigns/flagship7.toml, exported
variants=$(python3 -m benchmarks.protocol.variants 8 | tr ',' '\n' | grep ':' | paste -sd, -)
head=generated_algorithms/recommended.py,dual_annealing,diff_evo,genetic_algorithm,random_sample,pso

tunesmith=${TUNESMITH:-tunesmith}  # on the GPU machine: TUNESMITH="python3 -m generator.cli" (nothing installed)
bench() {  # NAME ARGS...: one bench, unless its JSON is there
  local name=$1; shift
  [ -f "$out/$name.json" ] && { echo "have $out/$name.json"; return; }
  echo "== $name $(date -u +%T)"
  $tunesmith bench "$@" --no-progress --json "$out/$name.json"
}
bench protocol100 "${spaces[@]}" --strategies "$head" --repeats 100
bench shipped20 "${spaces[@]}" --strategies "$archive" --repeats 20
bench variants20 "${spaces[@]}" --strategies "$variants" --repeats 20
bench ktgen20 "${spaces[@]}" --strategies adaptive_tabu_greywolf --repeats 20
bench hybrid5 "${spaces[@]}" --strategies hybrid_vndx --repeats 5
bench flagship7_20 "${spaces[@]}" --strategies "$flagship7" --repeats 20
bench h100new100 "${new[@]}" --strategies "$head" --repeats 100
bench h100new_gen20 "${new[@]}" --strategies "$archive,$variants" --repeats 20
bench h100new_ktgen20 "${new[@]}" --strategies adaptive_tabu_greywolf --repeats 20
bench h100new_hybrid5 "${new[@]}" --strategies hybrid_vndx --repeats 5
bench h100new_flagship7_20 "${new[@]}" --strategies "$flagship7" --repeats 20
for batch in 1 2; do
  set -- ; [ $batch = 1 ] && set -- "${old1[@]}"; [ $batch = 2 ] && set -- "${old2[@]}"
  bench h200old${batch}_100 "$@" --strategies "$head" --repeats 100
  bench h200old${batch}_gen20 "$@" --strategies "$archive,$variants,$flagship7" --repeats 20
  bench h200old${batch}_kt20 "$@" --strategies adaptive_tabu_greywolf,hybrid_vndx --repeats 20
done
[ -n "${BENCH_ONLY:-}" ] && exit 0  # the GPU machine runs the benches; crossval runs where the hub is
# recommended.py is this variant (benchmarks/protocol/ship_recommended.py wrote it): its 100-repeat row replaces the
# variant's 20-repeat row, which was the luckiest of 49 when it was picked
same=generated_algorithms/archive/lcb_annealing_ils.py:init_size=4:pool_size=16:knn_k=5:explore_weight=0.3047
same=$same:start_temperature=0.02653:jump_rate=0.07876:patience=59:kick_size=3:mutation_rate=0.1098:max_step=3
tunesmith crossval "$out"/{shipped20,variants20,protocol100,ktgen20,hybrid5,flagship7_20}.json \
    "$out"/h100new{100,_gen20,_ktgen20,_hybrid5,_flagship7_20}.json "$out"/h200old{1,2}_{100,gen20,kt20}.json \
    --protocol "$protocol" --tasks "$hub" --tasks "$more" --tasks problems \
    --members "$archive,$flagship7" --drop "$same" --json "$out/crossval.json" --md "$out/crossval.md"
