#!/bin/bash
# Round 20 follow-up: where fp8 llama3_405b_tp8 qkv (2304 x 16384 e4m3, 37.7 MB) spends its time,
# balanced grid against the paired and unpaired ones (timeline, graphs and streams).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run33.sh $OUT/run.sh
S=$OUT/trace_fp8.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:|check" >> $S; }
for g in "--graph" ""; do
  for m in 1 8 16; do
    run --fp8 --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m $g --spread
    run --fp8 --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --spread --pair
    run --fp8 --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m $g --bal
    run --fp8 --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --bal
  done
done
grep -E "us/call|per-SM" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | sed -E 's/bm.rpw [0-9]+ //' | cut -c1-400
grep -iE "rror|skinny_trace:" $S | head -5
