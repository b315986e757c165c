#!/bin/bash
# Experiment: the cluster norm candidates offered at every row count (configs.cpp `rows <= 256` dropped).
# The new candidates against the fp64 reference at 1024 rows, then add_rmsnorm tuned at 1024-8192 rows
# (verbose 2: every candidate's time in the same tuning pass), PyTorch eager / torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work92; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run92.sh $OUT/run.sh
s0=$(date +%s); timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*NormCandidatesTest*1024*:NormCluster.*' > $W/gpu_ops_cand.log 2>&1
echo "candidate tests exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_cand.log | head -12 | tee -a $OUT/step.txt
s0=$(date +%s); timeout 200 python3 bench/fused_ops_torch.py $W/fused_torch.json --ops add_rmsnorm --rows 1024,2048,4096,8192 > $W/fused_torch.log 2>&1
echo "torch exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
s0=$(date +%s); timeout 250 build/bench/tunable_fused_bench --out $W --anchors bench/baselines/h100-torch-fused-ops.txt \
  --torch $W/fused_torch.json --ops add_rmsnorm --rows 1024,2048,4096,8192 --hidden 4096,8192,16384 --verbose 2 > $W/fused_bench.log 2>&1
echo "bench exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log tunable_results*.csv 2>/dev/null)
grep -E "^add_rmsnorm|^device" $W/fused_bench.log | cut -c1-210
