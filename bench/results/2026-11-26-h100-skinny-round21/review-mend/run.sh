#!/bin/bash
# Round 21 final tree (after the review mend: the tuner's finalist helper): skinny and GEMM GPU suites.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work53; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cp $W/device.txt $OUT/device.txt; cp .devcarry/run53.sh $OUT/run.sh
cat $W/tunable_gpu_*tests.log > $OUT/gpu_tests.log; xz -9 $OUT/gpu_tests.log
