#!/usr/bin/env bash
# Brute-forces several problems on every GPU of the machine at once: one build_caches.sh per GPU, each with
# its own list, all within SECONDS; then packs problems/caches into $OUT/caches.tgz.
# Usage (project root, .device carried): bash problems/build_on_gpus.sh SECONDS "p1 p2" "p3 p4" ...
# (the first list on GPU 0, the second on GPU 1, ...). Logs: $OUT/build_gpu<N>.log.
set -uo pipefail
budget=$1; shift
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
bash .device/install-kernel-tuner.sh || exit 1
gpu=0
for list in "$@"; do
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$gpu TUNESMITH_NO_PACK=1 bash problems/build_caches.sh "$budget" --smoke $list > /dev/null 2>&1 &
  gpu=$((gpu + 1))
done
wait
[ -n "${OUT:-}" ] && tar czf "$OUT/caches.tgz" problems/caches
exit 0
