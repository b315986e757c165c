#!/bin/bash
# After the duplicates mend in rms_norm.cuh (the register, cluster and streaming kernels load a row through one helper,
# load_row_vectors / load_weight_vectors; ptxas register counts moved on 46 of 120 instantiations): norm / tuning / error
# GPU tests, then memcheck / racecheck on the 1024-row streaming and 37-row cases.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work114; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run114.sh $OUT/run.sh
s0=$(date +%s); timeout 400 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*Norm*:OpsTuning.*:OpsErrors.*' > $W/gpu_ops_norm.log 2>&1
echo "norm/tuning/error tests exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_norm.log | head -12 | tee -a $OUT/tests_summary.txt
xz -c $W/gpu_ops_norm.log > $OUT/gpu_ops_norm.log.xz
s0=$(date +%s)
OUT=$W SAN_TARGETS=ops SAN_TIMEOUT=110 SAN_FILTER_OPS='*NormCandidatesTest*bf16_addnorm_llama_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r37_h4096' \
  bash tools/device_check.sh sanitize > $OUT/sanitize.txt 2>&1
echo "sanitizers ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/sanitize.txt
grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $OUT/sanitize.txt
