#!/bin/bash
# Review mends, second round, on the H100 (call 2 of 2): the whole fused-op GPU suite.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work74; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run74.sh $OUT/run.sh
timeout 560 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $W/gpu_ops.log 2>&1; echo "ops suite exit $?" | tee $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops.log | head -20 | tee -a $OUT/tests_summary.txt
tar cJf $OUT/logs.tar.xz -C $W gpu_ops.log
