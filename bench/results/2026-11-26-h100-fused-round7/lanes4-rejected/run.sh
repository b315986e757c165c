#!/bin/bash
# Round 7 (fused), follow-up: the cluster kernel pushing a quarter-warp's sum per lane (`_l4`, two shuffle levels
# fewer, the landed values summed as 16-byte groups) against one sum per warp; the cluster tests on this build.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work9; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run8.sh $OUT/run.sh
timeout 120 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='NormCluster.*' > $OUT/tests.log 2>&1; echo "tests exit $?"
grep -E "^\[  (PASSED|FAILED) |FAILED" $OUT/tests.log | head -4
timeout 100 build/bench/tunable_norm_chain --csv $OUT/norm_chain.csv > $OUT/norm_chain.txt 2>&1; echo "chain exit $?"
grep -E "rms_c" $OUT/norm_chain.txt
