#!/bin/bash
# Duplicates mend: the register and streaming norm kernels share one row body (rms_norm_row_in_registers). Norm GPU
# tests (every candidate against the fp64 reference, cluster same-bits, API, tuning, errors), then the fused-op
# benchmark tuned with PyTorch eager / torch.compile in the same call, to compare with round 11's walk-bench/.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work100; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run100.sh $OUT/run.sh
s0=$(date +%s); timeout 330 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*Norm*:OpsTuning.*:OpsErrors.*' > $W/gpu_ops_norm.log 2>&1
echo "norm/tuning/error tests exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_norm.log | head -12 | tee -a $OUT/step.txt
s0=$(date +%s); OUT=$W timeout 250 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt gpu_ops_norm.log $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
