#!/bin/bash
# Review mends on the H100: the fused-op benchmark with four alternating rounds for the <= 64-row empty-kernel
# comparison (PyTorch eager / torch.compile in the same call), and the device-properties test's new check.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work89; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run89.sh $OUT/run.sh
build/tests/tunable_gpu_gemm_tests --gtest_filter='CudaUtil.*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) " | tee $OUT/step.txt
s0=$(date +%s); OUT=$W timeout 500 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
grep -E 'empty kernel' $OUT/fused_ops.md | cut -c1-200
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
