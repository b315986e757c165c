#!/bin/bash
# Round 7 (fused), final tree: the whole fused-op GPU suite (Default now a cluster kernel at <= 64 rows on sm_90),
# compute-sanitizer (memcheck, racecheck, synccheck) on the cluster kernels' same-bits test, and the untuned
# (Default) add_rmsnorm at 1-64 rows.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work5; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run5.sh $OUT/run.sh
timeout 400 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $W/tunable_gpu_ops_tests.log 2>&1; echo "ops suite exit $?"
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/tunable_gpu_ops_tests.log | head -12
OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=ops SAN_FILTER_OPS='NormCluster.*' SAN_TIMEOUT=60 \
  timeout 200 bash tools/device_check.sh sanitize
timeout 100 build/bench/tunable_fused_bench --out $W/untuned --untuned --ops add_rmsnorm --rows 1,16,64 > $W/untuned.log 2>&1
echo "untuned exit $?"; grep -E "add_rmsnorm \| \[" $W/untuned/fused_ops.md | cut -d'|' -f2-7
cp $W/untuned/fused_ops.md $OUT/untuned_fused_ops.md
tar cJf $OUT/logs.tar.xz -C $W tunable_gpu_ops_tests.log untuned.log $(cd $W && ls sanitize_*.log)
# The untuned step above stopped at CLI11's "Could not convert: --rows = 1,16,64" (exit 104; the option took
# space-separated values then). It was rerun on the same warm machine right after as:
#   build/bench/tunable_fused_bench --out $W/untuned --untuned --ops add_rmsnorm --rows 1 16 64   -> untuned_fused_ops.md
