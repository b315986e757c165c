#!/bin/bash
# Final tree of the session on the H100: GEMM and skinny suites, the fused-op tuning and error tests,
# memcheck on the runtime tests, the CLI demo (calls now switch to the context's device).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work76; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run76.sh $OUT/run.sh
for t in gemm skinny; do
  timeout 300 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $?"
  grep -E "^\[  (PASSED|FAILED) |FAILED|SKIPPED|tests from .* ran" $W/gpu_${t}.log | head -12
done 2>&1 | tee $OUT/tests_summary.txt
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='OpsTuning.*:OpsErrors.*' > $W/gpu_ops_tuning.log 2>&1
echo "ops tuning tests exit $?" | tee -a $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_tuning.log | head -12 | tee -a $OUT/tests_summary.txt
OUT=$W SAN_TOOLS=memcheck SAN_TARGETS="gemm ops" SAN_TIMEOUT=240 SAN_FILTER='GpuRuntime.*' \
  SAN_FILTER_OPS='OpsTuning.*:OpsErrors.*' bash tools/device_check.sh sanitize 2>&1 | grep -E 'exit|ERROR SUMMARY|PASSED|FAILED' | tee -a $OUT/tests_summary.txt
(cd $W && timeout 120 $OLDPWD/build/tools/tunable tune --device cuda --seconds 0.5 --verbose 0 --file $W/demo.csv > demo.txt 2>&1; echo "demo exit $?" >> demo.txt)
cp $W/demo.txt $OUT/demo.txt
tar cJf $OUT/logs.tar.xz -C $W gpu_gemm.log gpu_skinny.log gpu_ops_tuning.log $(cd $W && ls sanitize_* 2>/dev/null)
cat $OUT/tests_summary.txt $OUT/demo.txt
