#!/bin/bash
# After the shared TMA ring helpers (mmt and wgt): GPU suites, the three sanitizers on TMA cases,
# the timeline of mmt against round 17's, and the mended loads-only microbenchmark.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run21.sh $OUT/run.sh
mkdir -p $OUT/gpu-tests $OUT/dram-stream-rerun $OUT/trace
OUT=$OUT/gpu-tests TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
OUT=$OUT/gpu-tests SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N7_M9_K1032*:*fp8e4m3_bf16_N256_M8_K512:*bf16_bf16_N256_M33_K512' SAN_TIMEOUT=100 \
  timeout 320 bash tools/device_check.sh sanitize
timeout 120 build/bench/tunable_dram_stream > $OUT/dram-stream-rerun/dram_stream.txt 2>&1; echo "dram_stream rc $?"
S=$OUT/trace/trace_mmt.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|same bits|rror|skinny_trace:" >> $S; }
for g in "--graph" ""; do
  run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2304 --k 16384 --m 8 $g --spread
  run --kernel mmt --boxes 8 --stages 2 --warps 4 --n 6144 --k 4096 --m 8 $g --spread
  run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m 8 $g --spread
  run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m 16 $g --spread
done
grep -E "^##|us/call|same bits|rror|skinny_trace:" $S
awk '/rows x/{if(h)print h" best "best" "bl; h=$0; best=0} /ksplit/{v=$(NF-2); if(v>best){best=v; bl=$0}} END{print h" best "best" "bl}' $OUT/dram-stream-rerun/dram_stream.txt | sed 's/copies: //'
