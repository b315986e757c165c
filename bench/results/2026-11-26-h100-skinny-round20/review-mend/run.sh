#!/bin/bash
# Round 20 review mend (the balanced launcher through skinny_tma_launch): GPU suites, sanitizers on the
# balanced variants and the capture test, and the 405b qkv timeline against the paired grid.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run35.sh $OUT/run.sh
S=$OUT/trace_bal.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:" >> $S; }
for m in 8 16; do
  run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --spread --pair
  run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --bal
  run --fp8 --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --bal
done
grep -E "us/call|per-SM" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | cut -c1-150
grep -iE "rror|skinny_trace:" $S | head -5
W=/tmp/work35; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 260 bash tools/device_check.sh info tests
cat $W/tunable_gpu_skinny_tests.log $W/tunable_gpu_gemm_tests.log > $OUT/gpu_tests.log
grep -E "PASSED|FAILED|tests ran" $OUT/gpu_tests.log | head
TUNABLE_SKINNY_ONLY=_bal OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N2300_M16_K1024*:*N4580_M8_K512*:*N2300_M9_K8192*:*N4580_M16_K8192*:SkinnyBal.*' SAN_TIMEOUT=100 \
  timeout 220 bash tools/device_check.sh sanitize
cat $W/sanitize_skinny_*.log > $OUT/sanitize_skinny.log
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/sanitize_skinny.log | head
