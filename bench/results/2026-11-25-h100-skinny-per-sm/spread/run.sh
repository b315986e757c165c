#!/bin/bash
# Occupancy cap experiment (--spread): mmt one-wave grids with and without padding shared memory to
# ceil(blocks / SMs) blocks per SM; plus the GPU skinny suite (the launcher changed)
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
TEST_BINS="build/tests/tunable_gpu_skinny_tests" timeout 120 bash tools/device_check.sh info tests
S=$OUT/trace_spread.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror" >> $S; }
for g in "--graph" ""; do
  for sp in "" "--spread"; do
    for m in 1 8 16; do
      run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m $g $sp
      run --kernel mmt --boxes 8 --stages 2 --warps 4 --n 6144 --k 4096 --m $m $g $sp
      run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2304 --k 16384 --m $m $g $sp
      run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m $m $g $sp
    done
  done
done
grep -E "^##|us/call|per-SM" $S | sed -E 's/^mmt bm.rpw [0-9]+ warps [0-9]+ +//; s/ by events \(48 calls, 48 traced, / (/; s/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | paste - - - | sed -E 's/--kernel mmt --boxes ([0-9]+) --stages ([0-9]+) --warps ([0-9]+)/\1x\2 wk\3/'
bash tools/device_check.sh pack
