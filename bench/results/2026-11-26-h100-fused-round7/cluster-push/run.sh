#!/bin/bash
# Round 7 (fused): the cluster norm with the DSMEM push reduction. Its GPU tests (every norm candidate against
# the fp64 reference, same bits over 24 launches), the chain decomposition, and the fused-op benchmark with
# PyTorch eager / torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work4; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run4.sh $OUT/run.sh
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='NormCluster.*:Ops/NormCandidatesTest.*' \
  > $OUT/ops_norm_candidates_tests.log 2>&1; echo "tests exit $?"
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $OUT/ops_norm_candidates_tests.log | head -12
timeout 100 build/bench/tunable_norm_chain --csv $OUT/norm_chain.csv > $OUT/norm_chain.txt 2>&1; echo "chain exit $?"
OUT=$W FUSED_ARGS="--verbose 2" timeout 300 bash tools/device_check.sh fused | tail -48
cp $W/fused_ops.* $W/fused_torch.json $OUT/ 2>/dev/null; xz -9c $W/fused_bench.log > $OUT/fused_bench.log.xz
