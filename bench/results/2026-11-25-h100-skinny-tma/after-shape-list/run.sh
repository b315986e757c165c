#!/bin/bash
# After the ring-shape list refactor: GPU skinny suite, sanitizers on the small cases, a timeline spot check
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 150 bash tools/device_check.sh info tests
SAN_TOOLS="memcheck racecheck" SAN_TARGETS=skinny SAN_FILTER_SKINNY='*N7_M9_K1032*:*bf16_bf16_N40_M8_K24*' SAN_TIMEOUT=110 \
  timeout 240 bash tools/device_check.sh sanitize
for bs in "8 2" "8 3" "16 2"; do set -- $bs
  build/bench/tunable_skinny_trace --kernel mmt --boxes $1 --stages $2 --warps 4 --n 6144 --k 4096 --m 16 2>&1 | grep -E "stream|period|rror" >> $OUT/trace_spot.txt
done
build/bench/tunable_skinny_trace --kernel mmt --boxes 16 --stages 3 --warps 4 --n 6144 --k 4096 --m 16 >> $OUT/trace_spot.txt 2>&1; echo "unbuilt shape exit $?" >> $OUT/trace_spot.txt
tail -4 $OUT/trace_spot.txt
