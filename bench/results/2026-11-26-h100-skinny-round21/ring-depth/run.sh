#!/bin/bash
# Round 21 question: does a deeper ring (8 x 6: 96 KB of each block's weight in flight instead of 64 KB)
# speed up the one-block-per-SM grids (bal, pair)? Timeline tool, graphs and streams.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run40.sh $OUT/run.sh
S=$OUT/trace_ring.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:|check" >> $S; }
for g in "--graph" ""; do
  for m in 1 8 16; do
    for st in 4 6; do
      run --fp8 --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m $g --bal
    done
  done
  for m in 8 16; do
    for st in 4 6; do
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m $g --bal
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n 2304 --k 16384 --m $m $g --spread --pair
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n 4096 --k 4096 --m $m $g --bal
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n 2048 --k 16384 --m $m $g --bal
    done
    run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m $g --spread
  done
done
grep -E "^## |us/call|per-SM" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | sed -E 's/bm.rpw [0-9]+ //' | cut -c1-300
grep -iE "rror|skinny_trace:" $S | head -5
