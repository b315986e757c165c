#!/bin/bash
# The whole fused-op GPU suite on the final tree, as run inline through the device tool (after
# unpacking .devcarry/pack.tar.xz into build/ and .devlibs/):
OUT2=$OUT; W=/tmp/work77; mkdir -p $W
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
OUT=$W bash tools/device_check.sh info >/dev/null; cp $W/device.txt $OUT2/
timeout 560 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $W/gpu_ops.log 2>&1; echo "ops suite exit $?" | tee $OUT2/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops.log | head -20 | tee -a $OUT2/tests_summary.txt
tar cJf $OUT2/logs.tar.xz -C $W gpu_ops.log
