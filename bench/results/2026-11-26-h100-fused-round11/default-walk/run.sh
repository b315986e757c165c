#!/bin/bash
# Default for 513-1024 rows of 1024-2048 vectors: blocks walking two rows (rms_vec16_w2_*). Default through the public
# API at the changed shapes; the chain tool A/B of the old Default's kernels (t256_i4 at 8192, t512_i4 at 16384) and
# the new one at 1024 rows; the untuned fused bench (Default) with PyTorch in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work102; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run102.sh $OUT/run.sh
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*NormApiTest*r1000_h8192*:*NormApiTest*r1024_h4096*' > $W/gpu_api.log 2>&1
echo "API tests exit $?" | tee $OUT/step.txt; grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_api.log | head -6 | tee -a $OUT/step.txt
timeout 150 build/bench/tunable_norm_chain --rows 1024 --hidden 8192,16384 --only rms_w2,rms_t256_i4,rms_t512_i4 --csv $OUT/chain.csv > $W/chain.txt 2>&1
echo "chain exit $?" | tee -a $OUT/step.txt; cat $W/chain.txt | tee -a $OUT/step.txt
timeout 120 python3 bench/fused_ops_torch.py $W/fused_torch.json --ops add_rmsnorm --rows 1024,2048 --hidden 8192,16384 > $W/fused_torch.log 2>&1
timeout 150 build/bench/tunable_fused_bench --out $W --untuned --anchors bench/baselines/h100-torch-fused-ops.txt --torch $W/fused_torch.json \
  --ops add_rmsnorm --rows 1024,2048 --hidden 8192,16384 > $W/fused_bench.log 2>&1
echo "untuned bench exit $?" | tee -a $OUT/step.txt
cp $W/fused_ops.md $OUT/untuned_fused_ops.md 2>/dev/null
grep -E "^\| add_rmsnorm" $OUT/untuned_fused_ops.md
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log fused_torch.json fused_ops.csv 2>/dev/null)
