#!/bin/bash
# Norm GPU tests (every candidate against the fp64 reference incl. every streaming candidate, cluster same-bits, API,
# tuning and error tests) on the tree without the streaming kernel's L2-ahead-off instantiations.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work105; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run105.sh $OUT/run.sh
s0=$(date +%s); timeout 400 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*Norm*:OpsTuning.*:OpsErrors.*' > $W/gpu_ops_norm.log 2>&1
echo "norm/tuning/error tests exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_norm.log | head -12 | tee -a $OUT/tests_summary.txt
xz -c $W/gpu_ops_norm.log > $OUT/gpu_ops_norm.log.xz
