#!/bin/bash
# After the duplicates mend (one row body for the register and streaming norm kernels): compute-sanitizer memcheck and
# racecheck on the 1024-row candidate cases (every register, staged and streaming candidate; Llama, and Gemma with the
# dynamic FP8 amax) and a 37-row case (register and cluster candidates).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work101; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run101.sh $OUT/run.sh
s0=$(date +%s)
OUT=$W SAN_TARGETS=ops SAN_TIMEOUT=150 SAN_FILTER_OPS='*NormCandidatesTest*bf16_addnorm_llama_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r37_h4096' \
  bash tools/device_check.sh sanitize 2>&1 | tee $OUT/sanitize.txt
echo "sanitizers ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/sanitize.txt
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls *.log)
