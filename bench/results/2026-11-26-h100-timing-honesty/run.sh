#!/bin/bash
# Timing-honesty mends on the H100: the fused-op tuner rotates over 2x the L2 (up to 8192 copies),
# the graph tie-break replays up to 4096 copies, GEMM tuning rotates small problems over 8x the L2;
# GEMM and skinny suites, the fused-op tuning tests, and the fused-op benchmark (tuned, PyTorch
# eager and torch.compile in the same call; torch's back-to-back now timed like ours).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work75; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run75.sh $OUT/run.sh
for t in gemm skinny; do
  s0=$(date +%s); timeout 300 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $? ($(( $(date +%s) - s0 )) s)"
  grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_${t}.log | head -12
done 2>&1 | tee $OUT/tests_summary.txt
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='OpsTuning.*:OpsErrors.*' > $W/gpu_ops_tuning.log 2>&1
echo "ops tuning tests exit $?" | tee -a $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_tuning.log | head -12 | tee -a $OUT/tests_summary.txt
s0=$(date +%s); OUT=$W timeout 420 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/tests_summary.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
tar cJf $OUT/logs.tar.xz -C $W gpu_gemm.log gpu_skinny.log gpu_ops_tuning.log fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
cat $OUT/tests_summary.txt; grep -E 'empty kernel|^\| add_rmsnorm \| \[(1|16|64),|^\| silu_and_mul \| \[(1|16|64),' $OUT/fused_ops.md | head -24
