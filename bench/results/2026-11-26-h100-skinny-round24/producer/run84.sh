#!/bin/bash
# 1. Round 24 diagnostic, second part: _v8 (the balanced kernel loading each stage's weight and tokens by one
#    3-D TMA box each instead of 8 + 8 two-D boxes) and _v9 (the producer asleep ~200 ns after each stage's
#    issue) against tunable_skinny_trace (final tree); _v8's repeat check against the reference.
# 2. The GEMM verify with the graph timing paired and order-alternated (bench/gemm_bench.cpp), on the results
#    files tuned in the calls before (gemm-table/: M in {1, 8, 16}; m32-64/: M in {32, 64}), copied in unchanged.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work84; rm -rf $W; mkdir -p $W/r16 $W/r64
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/device.txt
cp .devcarry/run84.sh $OUT/run.sh
S=$OUT/trace_producer2.txt
run() { b=$1; shift; echo "## $b $*" >> $S; timeout 60 build/bench/$b "$@" 2>&1 | grep -E "us/call|rror|fail|repeat" >> $S; echo "exit ${PIPESTATUS[0]}" >> $S; }
for rep in 1 2; do
  for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 4 --m 16" "--stages 6 --m 8"; do
    for b in tunable_skinny_trace tunable_skinny_trace_v8 tunable_skinny_trace_v9; do
      run $b --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal $a
    done
  done
done
for a in "--fp8 --stages 4 --m 16" "--stages 6 --m 8" "--fp8 --stages 3 --m 9 --n 2300 --k 8192"; do
  run tunable_skinny_trace_v8 --kernel mmt --boxes 8 --warps 8 --graph --bal --n 2304 --k 16384 $a --repeat-check 20
done
grep -E "^##|us/call|repeat|rror|fail" $S | sed -E 's/--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --graph --bal//; s/mmt (bal|pair)?.*graph:/:/' | cut -c1-180
cp .devcarry/res16/bench_results0.csv $W/r16/; cp .devcarry/res64/bench_results0.csv $W/r64/
BENCH_RESULTS=$W/r16/bench_results.csv BENCH_ARGS="--ms 1,8,16" OUT=$W/r16 timeout 260 bash tools/device_check.sh bench-verify | tail -3
BENCH_RESULTS=$W/r64/bench_results.csv BENCH_ARGS="--ms 32,64" OUT=$W/r64 timeout 150 bash tools/device_check.sh bench-verify | tail -3
for r in r16 r64; do cp $W/$r/gemm_verify.csv $OUT/gemm_verify_$r.csv; cp $W/$r/gemm_verify.md $OUT/gemm_verify_$r.md; done
python3 bench/floor_count.py $OUT/gemm_verify_r16.csv bench/results/2026-11-26-h100-gemm-table/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -3 $OUT/floor_count.txt
cmp -s .devcarry/res16/bench_results0.csv $W/r16/bench_results0.csv && echo "r16 results file unchanged" || echo "r16 results file CHANGED"
cmp -s .devcarry/res64/bench_results0.csv $W/r64/bench_results0.csv && echo "r64 results file unchanged" || echo "r64 results file CHANGED"
tar cJf $OUT/extras.tar.xz -C $W .
