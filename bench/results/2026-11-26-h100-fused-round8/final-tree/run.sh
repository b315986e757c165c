#!/bin/bash
# Final tree of the session (review mends: Default's device-aware config one helper for the library and the bench;
# the chain tool's mode table): GPU suites (gemm, skinny, ops), the timeline tool's --splits (and its refusal
# with --bal), the chain tool, and the fused-op benchmark (--quick, tuned).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work61; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run61.sh $OUT/run.sh
for t in gemm skinny ops; do
  timeout 420 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_${t}.log | head -8
done 2>&1 | tee $OUT/tests_summary.txt
{
  build/bench/tunable_skinny_trace --fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --stages 4 --m 1 --graph --splits 2; echo "exit $? (expected 2: refused)"
  for a in "--bal --kernel mmt --boxes 8 --warps 8 --stages 4" "--kernel mmawc --rows 16 --warps 8 --splits 4" "--kernel mma --rows 16 --warps 8 --splits 8"; do
    echo "## $a"; build/bench/tunable_skinny_trace --fp8 --n 2304 --k 16384 --m 8 --graph $a --repeat-check 20 2>&1 | grep -E 'us/call|repeat check|rror'
  done
} > $OUT/trace.txt 2>&1
build/bench/tunable_norm_chain --rows 1,16 --hidden 4096 --csv $W/norm_chain.csv > $OUT/norm_chain.txt 2>&1; echo "chain exit $?" >> $OUT/norm_chain.txt
timeout 150 build/bench/tunable_fused_bench --out $W/quick --quick --ops add_rmsnorm,silu_and_mul > $W/quick.log 2>&1; echo "quick bench exit $?" >> $OUT/tests_summary.txt
cp $W/quick/fused_ops.md $OUT/quick_fused_ops.md 2>/dev/null
tar cJf $OUT/logs.tar.xz -C $W gpu_gemm.log gpu_skinny.log gpu_ops.log norm_chain.csv quick.log
cat $OUT/tests_summary.txt $OUT/trace.txt
