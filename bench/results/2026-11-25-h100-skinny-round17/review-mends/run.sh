#!/bin/bash
# After the review mends (one macro for the 12 wgmma wrappers, one TMA launch helper for mmt and
# wgt, dram_stream's fold helper): GPU suites, the three sanitizers, mmt timeline with the --spread
# bit check, and dram_stream. Few files: the call returns at most 8.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run24.sh $OUT/run.sh
W=/tmp/work24; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cat $W/tunable_gpu_skinny_tests.log $W/tunable_gpu_gemm_tests.log > $OUT/gpu_tests.log
OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N7_M9_K1032*:*fp8e4m3_bf16_N256_M8_K512:*bf16_bf16_N256_M33_K512' SAN_TIMEOUT=100 \
  timeout 320 bash tools/device_check.sh sanitize
cat $W/sanitize_skinny_*.log > $OUT/sanitize_skinny.log
S=$OUT/trace_mmt.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|same bits|rror|skinny_trace:" >> $S; }
for g in "--graph" ""; do
  run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2304 --k 16384 --m 8 $g --spread
  run --kernel mmt --boxes 8 --stages 2 --warps 4 --n 6144 --k 4096 --m 8 $g --spread
done
cat $S
timeout 120 build/bench/tunable_dram_stream > $OUT/dram_stream.txt 2>&1; echo "dram_stream rc $?"
