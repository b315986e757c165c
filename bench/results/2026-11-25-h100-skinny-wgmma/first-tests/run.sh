#!/bin/bash
# Round 16 (wgmma kernel, skinny_wgt_*): GPU skinny suite, sanitizers on cases the wgmma variants run
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 240 bash tools/device_check.sh info tests
grep -E "FAILED|Failure|error|out of tolerance|refused" $OUT/tunable_gpu_skinny_tests.log | head -30
SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N7_M9_K1032*:*fp8e4m3_bf16_N256_M8_K512:*bf16_bf16_N256_M33_K512:*fp16_fp16_N300_M64_K1000*' SAN_TIMEOUT=150 \
  timeout 480 bash tools/device_check.sh sanitize
bash tools/device_check.sh pack
