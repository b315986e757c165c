#!/bin/bash
# After the review mend (DeviceGuard::use at the GEMM and fused-op entry points): GEMM, skinny and
# fused-op tuning/error GPU tests.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work91; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run91.sh $OUT/run.sh
for t in gemm skinny; do
  s0=$(date +%s); timeout 300 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $? ($(( $(date +%s) - s0 )) s)"
  grep -E "^\[  (PASSED|FAILED) |FAILED|SKIPPED|tests from .* ran" $W/gpu_${t}.log | head -12
done 2>&1 | tee $OUT/tests_summary.txt
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='OpsTuning.*:OpsErrors.*' > $W/gpu_ops_tuning.log 2>&1
echo "ops tuning/error tests exit $?" | tee -a $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_tuning.log | head -8 | tee -a $OUT/tests_summary.txt
build/tests/tunable_gpu_gemm_tests --gtest_filter='CudaUtil.*:GpuRuntime.ReferenceCheck*' 2>&1 | grep -E "^\[ +(OK|FAILED|PASSED) " | tee -a $OUT/tests_summary.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
