#!/bin/bash
# Round 21: the fused-op GPU suite with the graph tie-break with the launch-bound rule (its tuning tests tune through it).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run49.sh $OUT/run.sh
timeout 570 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $OUT/tunable_gpu_ops_tests.log 2>&1; echo "exit $?"
grep -E "^\[  (PASSED|FAILED) |tests from .* ran" $OUT/tunable_gpu_ops_tests.log | head -20
xz -9 $OUT/tunable_gpu_ops_tests.log
