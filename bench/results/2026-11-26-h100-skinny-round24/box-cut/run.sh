#!/bin/bash
# Round 24: the balanced grid's left-over tiles cut by 128-byte boxes instead of whole stages.
# 1. skinny GPU suite, then memcheck / racecheck / synccheck on the balanced variants' cases.
# 2. Timeline A/B in graphs, interleaved, two passes: tunable_skinny_trace_old (HEAD 2edeb93's
#    skinny_trace.cu and kernel headers: stage-cut slices) against tunable_skinny_trace (box-cut).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work79; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 120 bash tools/device_check.sh info tests > /dev/null
cp $W/device.txt $OUT/device.txt; cp .devcarry/run79.sh $OUT/run.sh
grep -hE "^\[  (PASSED|FAILED) |tests? ran|FAILED " $W/tunable_gpu_skinny_tests.log | head -8 | tee $OUT/tests_summary.txt
TUNABLE_SKINNY_ONLY=_bal OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N2300_M16_K1024*:*N4580_M8_K512*:*N2300_M9_K8192*:*N4580_M16_K8192*:*bf16_bf16_N256_M8_K512' SAN_TIMEOUT=100 \
  timeout 240 bash tools/device_check.sh sanitize > /dev/null
grep -hE "ERROR SUMMARY|^\[  (PASSED|FAILED) " $W/sanitize_skinny_*.log | tee -a $OUT/tests_summary.txt
S=$OUT/trace_ab.txt
run() { b=$1; shift; echo "## $b $*" >> $S; timeout 60 build/bench/$b "$@" 2>&1 | grep -E "us/call|rror|differ|mismatch" >> $S; }
for rep in 1 2; do
  for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 4 --m 8" "--fp8 --stages 4 --m 16" "--fp8 --stages 6 --m 8" "--stages 6 --m 8"; do
    for b in tunable_skinny_trace_old tunable_skinny_trace; do
      run $b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --graph $a
    done
  done
done
run tunable_skinny_trace --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --graph --fp8 --stages 4 --m 16 --repeat-check 50
cat $W/tunable_gpu_skinny_tests.log $W/sanitize_skinny_*.log > $W/logs.txt; xz -9c $W/logs.txt > $OUT/logs.txt.xz
grep -E "^##|us/call|rror|differ" $S | sed -E 's/per-SM.*//' | cut -c1-200
