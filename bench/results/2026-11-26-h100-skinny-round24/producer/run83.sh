#!/bin/bash
# 1. Round 24 diagnostic: is the balanced kernel's producer lane on the critical path? _v6: no token boxes
#    (half the TMA issues per stage; wrong numerics, timing only); _v7: the producer held ~400 cycles after
#    each stage's issue. Against tunable_skinny_trace (the final tree), interleaved, two passes.
# 2. Issue 4's table at M in {32, 64} on the final tree (tune, verify).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work83; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run83.sh $OUT/run.sh
S=$OUT/trace_producer.txt
run() { b=$1; shift; echo "## $b $*" >> $S; timeout 60 build/bench/$b "$@" 2>&1 | grep -E "us/call|rror" >> $S; }
for rep in 1 2; do
  for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 4 --m 16" "--stages 6 --m 8"; do
    for b in tunable_skinny_trace tunable_skinny_trace_v6 tunable_skinny_trace_v7; do
      run $b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal $a
    done
  done
done
grep -E "^##|us/call" $S | paste - - | sed -E 's/--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal//; s/mmt (bal|pair)?.*graph:/:/' | cut -c1-160
T0=$(date +%s)
BENCH_RESULTS=$W/bench_results.csv BENCH_ARGS="--ms 32,64" OUT=$W timeout 200 bash tools/device_check.sh bench-tune | tail -2
BENCH_RESULTS=$W/bench_results.csv BENCH_ARGS="--ms 32,64" OUT=$W timeout 250 bash tools/device_check.sh bench-verify | tail -8
echo "tune + verify $(( $(date +%s) - T0 )) s" >> $OUT/trace_producer.txt
cp $W/gemm_verify.csv $OUT/gemm_verify_m32_64.csv; cp $W/gemm_verify.md $OUT/gemm_verify_m32_64.md
tar cJf $OUT/extras_m32_64.tar.xz -C $W --exclude gemm_verify.csv --exclude gemm_verify.md .
ls $OUT
