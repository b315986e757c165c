#!/bin/bash
# After the shared cap helper (round 17): GPU skinny and GEMM suites, the timeline's --spread bit
# check on each launcher, and the L1 question (packed mma with the smallest L1 carve-out).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run18.sh $OUT/run.sh
mkdir -p $OUT/gpu-tests $OUT/l1
OUT=$OUT/gpu-tests TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 330 bash tools/device_check.sh info tests
OUT=$OUT/gpu-tests SAN_TOOLS="memcheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N7_M9_K1032*:*fp8e4m3_bf16_N256_M8_K512:*bf16_bf16_N256_M33_K512' SAN_TIMEOUT=120 \
  timeout 150 bash tools/device_check.sh sanitize
S=$OUT/l1/trace_l1.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|check|carve|rror|skinny_trace" >> $S; }
for g in "--graph" ""; do
  run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m 8 $g
  run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m 8 $g --carveout 100
  run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m 8 $g --spread
  run --kernel mma --rows 16 --warps 8 --n 2048 --k 16384 --m 8 $g
  run --kernel mma --rows 16 --warps 8 --n 2048 --k 16384 --m 8 $g --carveout 100
  run --kernel mmawc --rows 16 --warps 8 --n 4096 --k 4096 --m 8 $g --spread
  run --kernel mmapwc --rows 16 --warps 8 --n 4096 --k 4096 --m 8 $g --spread
  run --kernel gemv --rows 1 --warps 8 --n 2304 --k 16384 --m 1 $g --spread
  run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2304 --k 16384 --m 8 $g --spread
done
grep -E "^##|us/call|SMs used|same bits|rror|skinny_trace" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://'
