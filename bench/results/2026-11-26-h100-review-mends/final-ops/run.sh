#!/bin/bash
# The whole fused-op GPU suite on the final tree (commit after "a problem neither tuning nor Default
# can run returns Default's reason"), run inline through the device tool:
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work77; mkdir -p $W
OUT=$W bash tools/device_check.sh info >/dev/null; cp $W/device.txt $OUT2/
timeout 560 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $W/gpu_ops.log 2>&1
