#!/bin/bash
# After the shared tensor-map helper (mmt and wgt): GPU skinny suite and memcheck on TMA cases
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 300 bash tools/device_check.sh info tests
SAN_TOOLS="memcheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N7_M9_K1032*:*fp8e4m3_bf16_N256_M8_K512:*bf16_bf16_N256_M33_K512' SAN_TIMEOUT=150 \
  timeout 200 bash tools/device_check.sh sanitize
bash tools/device_check.sh pack
