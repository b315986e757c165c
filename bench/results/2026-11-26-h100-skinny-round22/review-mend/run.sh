#!/bin/bash
# Round 22 review mend (the spread cap as one SkinnyLaunch helper that every launcher's padding uses; host code):
# skinny and GEMM GPU suites, --spread against the uncapped launch for the register kernels, the balanced timeline.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work12; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cp $W/device.txt $OUT/device.txt
grep -hE "^\[  (PASSED|FAILED) |FAILED " $W/tunable_gpu_*tests.log | head -12
cat $W/tunable_gpu_*tests.log > $OUT/gpu_tests.log; xz -9 $OUT/gpu_tests.log
T=build/bench/tunable_skinny_trace
{
  for a in "--kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m 8" "--kernel mmawc --rows 16 --warps 8 --n 4096 --k 4096 --m 8" \
           "--kernel gemv --rows 1 --warps 8 --n 2304 --k 16384 --m 1" "--kernel mmt --boxes 8 --stages 2 --warps 8 --n 2048 --k 16384 --m 16"; do
    echo "## $a --spread --graph"; timeout 60 $T $a --spread --graph 2>&1 | grep -E "us/call|same bits|rror|skinny_trace:"
  done
  for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 6 --m 8" "--stages 6 --m 8"; do
    echo "## bal $a --graph"; timeout 60 $T --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --graph $a 2>&1 | grep -E "us/call|rror"
  done
} | tee $OUT/trace.txt
cp .devcarry/run12.sh $OUT/run.sh
