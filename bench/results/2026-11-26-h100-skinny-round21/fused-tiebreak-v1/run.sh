#!/bin/bash
# Round 21, second half: the skinny GPU suite (its tests refactored) and the fused-op benchmark (tuned with the graph tie-break on) with PyTorch eager /
# torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work48; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
build/tests/tunable_gpu_skinny_tests --gtest_brief=1 > $OUT/tunable_gpu_skinny_tests.log 2>&1; echo "skinny exit $?"
grep -E "^\[  (PASSED|FAILED) |tests from .* ran" $OUT/tunable_gpu_skinny_tests.log | head
OUT=$W FUSED_ARGS="--verbose 2" timeout 420 bash tools/device_check.sh fused | tail -60
cp $W/fused_ops.* $W/fused_torch.json $OUT/ 2>/dev/null; xz -9c $W/fused_bench.log > $OUT/fused_bench.log.xz
cp .devcarry/run48.sh $OUT/run.sh
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(tunable_gpu_skinny_tests.log|device.txt|run.sh|extras.tar.xz|fused_ops.md|fused_ops.csv|fused_ops.json|fused_torch.json|fused_bench.log.xz)$') && ls
