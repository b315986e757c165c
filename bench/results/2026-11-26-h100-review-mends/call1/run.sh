#!/bin/bash
# Review mends on the H100, call 1 of 2: GEMM and skinny GPU suites (the new tests: broadcast
# batch strides, mixed fp8 in one context, the current-device rule), memcheck on the GEMM runtime
# tests, and the per-call host cost (dispatch_overhead; the dispatch now asks for the current device).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work71; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run71.sh $OUT/run.sh
for t in gemm skinny; do
  timeout 300 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_${t}.log | head -12
done 2>&1 | tee $OUT/tests_summary.txt
OUT=$W SAN_TOOLS=memcheck SAN_TARGETS=gemm SAN_TIMEOUT=200 \
  SAN_FILTER='GpuRuntime.*' bash tools/device_check.sh sanitize 2>&1 | tail -6 | tee -a $OUT/tests_summary.txt
OUT=$W timeout 150 bash tools/device_check.sh overhead > /dev/null 2>&1; cp $W/dispatch_overhead.txt $OUT/ 2>/dev/null
tar cJf $OUT/logs.tar.xz -C $W gpu_gemm.log gpu_skinny.log $(cd $W && ls sanitize_* 2>/dev/null)
cat $OUT/tests_summary.txt; tail -14 $OUT/dispatch_overhead.txt
