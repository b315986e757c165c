#!/bin/bash
# Round 20 final: GPU suites after the run-time fallback in the tuning runtime and the balanced
# kernel's capture test (skinny + GEMM), memcheck on the capture test.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run32.sh $OUT/run.sh
W=/tmp/work32; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 260 bash tools/device_check.sh info tests
cat $W/tunable_gpu_skinny_tests.log $W/tunable_gpu_gemm_tests.log > $OUT/gpu_tests.log
grep -E "PASSED|FAILED|tests ran|SkinnyBal" $OUT/gpu_tests.log | head
OUT=$W SAN_TOOLS="memcheck racecheck" SAN_TARGETS=skinny SAN_FILTER_SKINNY='SkinnyBal.*' SAN_TIMEOUT=100 \
  timeout 220 bash tools/device_check.sh sanitize
cat $W/sanitize_skinny_*.log > $OUT/sanitize_skinny.log
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/sanitize_skinny.log | head
