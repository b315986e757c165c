#!/bin/bash
# Round 21 final build (proxy fence before every generic-read ring slot release; bal 8 x 6): GPU suites,
# sanitizers on the balanced and paired variants, a repeat stress of every shipped ring shape, and the
# 405b qkv timeline of the balanced 8 x 4 / 8 x 6 rings.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run45.sh $OUT/run.sh
S=$OUT/repeat_stress.txt
rs() { echo "## $*" >> $S; timeout 120 build/bench/tunable_skinny_trace --calls 4 --repeat-check 200 "$@" 2>&1 | grep -E "repeat check|rror|check against" | tr '\n' ' ' >> $S; echo >> $S; }
for m in 16 8; do
  for f in "" "--fp8"; do
    for st in 3 4; do rs $f --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m --spread --pair; done
    for st in 3 4 6; do rs $f --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m --bal; done
    rs $f --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m --spread
    rs $f --kernel mmt --boxes 16 --stages 2 --warps 4 --n 2304 --k 16384 --m $m --spread
  done
done
sed -E 's/check against mmap bm16 wk8: worst \|diff\| \/ \(\|y\| \+ 1\)/worst/; s/launches each, //' $S | cut -c1-250
T=$OUT/trace_bal6.txt
run() { echo "## $*" >> $T; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:" >> $T; }
for g in --graph ""; do
  for m in 1 8 16; do
    for st in 4 6; do
      run --fp8 --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m $g --bal
      [ $m -gt 1 ] && run --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m $g --bal
    done
  done
done
grep -E "us/call" $T | cut -c1-120
W=/tmp/work45; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 300 bash tools/device_check.sh info tests
cat $W/tunable_gpu_skinny_tests.log $W/tunable_gpu_gemm_tests.log > $OUT/gpu_tests.log
grep -E "PASSED|FAILED|tests ran|SameBits" $OUT/gpu_tests.log | head
for only in _bal _pair; do
  TUNABLE_SKINNY_ONLY=$only OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=skinny \
    SAN_FILTER_SKINNY='*N2300_M16_K1024*:*N4580_M8_K512*:*N2300_M9_K8192*:*N4580_M16_K8192*:SkinnyBal.*' SAN_TIMEOUT=100 \
    timeout 200 bash tools/device_check.sh sanitize
  cat $W/sanitize_skinny_*.log > $OUT/sanitize_skinny$only.log; rm -f $W/sanitize_skinny_*.log
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/sanitize_skinny$only.log | head
done
