#!/bin/bash
# Round 19 A/B: x through L1 into registers (pair), by TMA into the ring per block (--x-cluster 0),
# by TMA multicast over 2-block clusters (--x-cluster 2).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run31.sh $OUT/run.sh
S=$OUT/trace_xmode.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:|check" >> $S; }
for m in 8 16; do
  for rep in 1 2; do
    for xc in 1 0 2; do
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m --graph --spread --pair --x-cluster $xc
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2048 --k 16384 --m $m --graph --spread --pair --x-cluster $xc
    done
  done
done
grep -E "us/call|per-SM|rror|skinny_trace:" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | sed -E 's/bm.rpw [0-9]+ //; s/by events.*blocks.call/blk/' | cut -c1-150
grep -E "^check|disagree|different" $S | sed -E "s/= [0-9.e-]+/= x/" | sort | uniq -c
