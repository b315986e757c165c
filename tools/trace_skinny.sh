#!/usr/bin/env bash
# Runs bench/skinny_trace.cu on the GPU machine for each case, stream launches and graph replay:
#   TRACE_CASES="kernel,rows,warps,n,k,m;..." tools/trace_skinny.sh   -> $OUT/trace.txt, $OUT/trace_*.json
set -uo pipefail
cd "$(dirname "$0")/.."
B="${DEV_BUILD:-build}"
OUT="${OUT:?set OUT}"
IFS=';' read -ra cases <<< "${TRACE_CASES:?set TRACE_CASES}"
for c in "${cases[@]}"; do
  IFS=',' read -r kern rows warps n k m <<< "$c"
  for mode in stream graph; do
    flag=(); [ "$mode" = graph ] && flag=(--graph)
    $B/bench/tunable_skinny_trace --kernel "$kern" --rows "$rows" --warps "$warps" --n "$n" --k "$k" --m "$m" \
      "${flag[@]}" --out "$OUT/trace_${kern}_${rows}_${warps}_${n}x${k}_m${m}_${mode}.json" 2>&1 | tee -a "$OUT/trace.txt"
  done
done
