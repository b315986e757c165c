#!/bin/bash
# Last code commit of the session on the H100: the fused-op tuning / error tests (the tuning stream's
# device check changed), and the two bench tools that include the session's changed kernel headers
# (device_utils.cuh, gemv/common.cuh): the skinny timeline tool and the norm chain tool, one pass each.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work78; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run78.sh $OUT/run.sh
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='OpsTuning.*:OpsErrors.*:NormCluster.*' > $W/ops.log 2>&1
echo "ops tuning/error/cluster tests exit $?" | tee $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/ops.log | head -8 | tee -a $OUT/tests_summary.txt
{
  for a in "--bal --kernel mmt --boxes 8 --warps 8 --stages 4" "--kernel mmawc --rows 16 --warps 8 --splits 4"; do
    echo "## fp8 2304 x 16384 m 8 $a"; build/bench/tunable_skinny_trace --fp8 --n 2304 --k 16384 --m 8 --graph $a --repeat-check 20 2>&1 | grep -E 'us/call|repeat check|rror'
  done
} > $OUT/trace.txt 2>&1
build/bench/tunable_norm_chain --rows 1,16 --hidden 4096 --csv $W/norm_chain.csv > $OUT/norm_chain.txt 2>&1; echo "chain exit $?" >> $OUT/norm_chain.txt
tar cJf $OUT/logs.tar.xz -C $W ops.log norm_chain.csv
cat $OUT/tests_summary.txt $OUT/trace.txt; tail -4 $OUT/norm_chain.txt
