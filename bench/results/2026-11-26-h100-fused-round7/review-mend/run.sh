#!/bin/bash
# Review mends (4a049a6: one PDL protocol helper, the push sender count in one place, kernel PTX identical; the
# benches' graph timer on EventTimer::time_graph): the cluster tests, the decomposition and the quick fused bench.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work10; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run9.sh $OUT/run.sh
timeout 120 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='NormCluster.*:Ops/NormApiTest.*r1_h4096*:Ops/NormApiTest.*r37_h16384*' > $W/tests.log 2>&1; echo "tests exit $?"
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/tests.log | head -8; cp $W/tests.log $OUT/
timeout 60 build/bench/tunable_norm_chain --rows 1,16 --hidden 4096,16384 --csv $OUT/norm_chain.csv > $OUT/norm_chain.txt 2>&1; echo "chain exit $?"
grep -E "empty|rms_c(4_t128|8_t256)_i1 " $OUT/norm_chain.txt
timeout 120 build/bench/tunable_fused_bench --out $W/q --quick --ops add_rmsnorm,silu_and_mul > $W/q.log 2>&1; echo "fused exit $?"
cp $W/q/fused_ops.md $OUT/quick_fused_ops.md; grep -E "\| \[(1|64), " $OUT/quick_fused_ops.md | cut -d'|' -f2-5,9,10,13
