#!/bin/bash
# Round 15 (stream-K clusters, kss8): GPU skinny suite, sanitizers on small cases, 405b qkv timelines
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 200 bash tools/device_check.sh info tests
SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny SAN_FILTER_SKINNY='*N7_M9_K1032*:*bf16_bf16_N40_M8_K24*' SAN_TIMEOUT=110 \
  timeout 240 bash tools/device_check.sh sanitize
S=$OUT/trace_405b_qkv_kss.txt
for m in 8 16; do
  for g in "" "--graph"; do
    for spec in "--boxes 8 --stages 3 --warps 4" "--boxes 8 --stages 3 --warps 4 --stream-cluster 8" \
                "--boxes 8 --stages 3 --warps 8 --stream-cluster 8" "--boxes 16 --stages 2 --warps 8 --stream-cluster 8"; do
      for rep in 1 2; do
        echo "## m=$m ${g:-stream} $spec rep$rep" >> $S
        timeout 60 build/bench/tunable_skinny_trace --kernel mmt $spec --n 2304 --k 16384 --m $m $g 2>&1 | grep -E "us/call|period|stream|rror" >> $S
      done
    done
  done
done
tail -40 $S
bash tools/device_check.sh pack
