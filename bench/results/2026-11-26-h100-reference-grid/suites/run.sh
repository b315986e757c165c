#!/bin/bash
# Library mends on the H100: the fp64 GEMM reference walks column tiles and batches past the grid's 65535
# limit (kernels/reference/gemm_reference.cuh), device_properties keeps no failed read. GEMM, skinny and
# fused-op tuning/error GPU tests; then memcheck / racecheck on the reference's new test and a GEMM case.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work86; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run86.sh $OUT/run.sh
for t in gemm skinny; do
  s0=$(date +%s); timeout 300 build/tests/tunable_gpu_${t}_tests --gtest_brief=1 > $W/gpu_${t}.log 2>&1; echo "$t suite exit $? ($(( $(date +%s) - s0 )) s)"
  grep -E "^\[  (PASSED|FAILED) |FAILED|SKIPPED|tests from .* ran" $W/gpu_${t}.log | head -12
done 2>&1 | tee $OUT/tests_summary.txt
timeout 200 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='OpsTuning.*:OpsErrors.*' > $W/gpu_ops_tuning.log 2>&1
echo "ops tuning/error tests exit $?" | tee -a $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_tuning.log | head -8 | tee -a $OUT/tests_summary.txt
grep -E "ReferenceCheck|DeviceProperties" $W/gpu_gemm.log | head -4 | tee -a $OUT/tests_summary.txt
OUT=$W SAN_TOOLS="memcheck racecheck" SAN_TARGETS=gemm SAN_TIMEOUT=150 \
  SAN_FILTER='CudaUtil.*:GpuRuntime.ReferenceCheck*:Gpu/GpuGemm.*gemm_bf16_bf16_tn_67*' timeout 330 bash tools/device_check.sh sanitize 2>&1 | tee -a $OUT/tests_summary.txt
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) " $W/sanitize_*.log | tee -a $OUT/tests_summary.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
