#!/bin/bash
# Round 22, last commit (one PDL prologue helper; sm_90a PTX identical but for debug-info labels): skinny and GEMM
# GPU suites, and the balanced grid's timeline on fp8 / bf16 405b qkv as a check against final-suites/.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work11; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cp $W/device.txt $OUT/device.txt
grep -hE "^\[  (PASSED|FAILED) |FAILED " $W/tunable_gpu_*tests.log | head -12
cat $W/tunable_gpu_*tests.log > $OUT/gpu_tests.log; xz -9 $OUT/gpu_tests.log
for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 6 --m 8" "--stages 6 --m 8"; do
  timeout 60 build/bench/tunable_skinny_trace --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --graph $a 2>&1 | grep "us/call"
done | tee $OUT/trace_bal.txt
cp .devcarry/run11.sh $OUT/run.sh
