#!/bin/bash
# After the Default change (513-1024 rows of 1024-2048 vectors walk two rows). Norm GPU tests (every candidate against the fp64
# reference, cluster same-bits, API, tuning and error tests), then memcheck / racecheck on two 1024-row cases
# whose streaming blocks walk 2 or 4 rows each (the Gemma case with the dynamic FP8 amax: two reductions per row).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work103; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run103.sh $OUT/run.sh
s0=$(date +%s); timeout 330 build/tests/tunable_gpu_ops_tests --gtest_brief=1 --gtest_filter='*Norm*:OpsTuning.*:OpsErrors.*' > $W/gpu_ops_norm.log 2>&1
echo "norm/tuning/error tests exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/tests_summary.txt
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/gpu_ops_norm.log | head -12 | tee -a $OUT/tests_summary.txt
s0=$(date +%s)
OUT=$W SAN_TARGETS=ops SAN_TIMEOUT=110 SAN_FILTER_OPS='*NormCandidatesTest*bf16_addnorm_llama_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r1024_h4096' \
  bash tools/device_check.sh sanitize 2>&1 | tee $OUT/sanitize.txt
echo "sanitizers ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/sanitize.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
