#!/bin/bash
# Round 19: mmt with the tokens by TMA (`_xt`, unpaired and paired). Timeline against the x-through-L1
# kernels, GPU suites, the three sanitizers on the _xt variants (run33.sh: tune and verify).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run32.sh $OUT/run.sh
S=$OUT/trace_xt.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:|check" >> $S; }
for m in 8 16; do
  run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --spread --pair
  run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --spread --pair --x-tma
  run --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m --graph --spread --x-tma
  run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m $m --graph --spread
  run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m $m --graph --spread --x-tma
  run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m --graph --spread
  run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m --graph --spread --x-tma
  run --kernel mmt --boxes 8 --stages 2 --warps 4 --n 6144 --k 4096 --m $m --graph --spread
  run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 6144 --k 4096 --m $m --graph --spread --x-tma
done
grep -E "us/call|per-SM|rror|skinny_trace:" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | sed -E 's/bm.rpw [0-9]+ //; s/by events.*blocks.call/blk/' | cut -c1-150
grep -E "^check|disagree|different" $S | sed -E "s/= [0-9.e-]+/= x/" | sort | uniq -c
W=/tmp/work32; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 120 bash tools/device_check.sh info tests
cat $W/tunable_gpu_skinny_tests.log $W/tunable_gpu_gemm_tests.log > $W/gpu_tests.log
grep -E "PASSED|FAILED|tests ran" $W/gpu_tests.log | head
TUNABLE_SKINNY_ONLY=_xt OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
  SAN_FILTER_SKINNY='*N2300_M16_K1024*:*N4580_M8_K512*:*bf16_bf16_N256_M8_K512' SAN_TIMEOUT=60 \
  timeout 150 bash tools/device_check.sh sanitize
cat $W/sanitize_skinny_*.log > $W/sanitize_skinny.log
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $W/sanitize_skinny.log | head
(cd $W && tar cJf $OUT/tests.tar.xz gpu_tests.log sanitize_skinny.log)
