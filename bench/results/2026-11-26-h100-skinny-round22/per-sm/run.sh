#!/bin/bash
# Round 22: one more block slot per SM than the grid needs (SkinnyLaunch::spread_cap, trace --per-sm), so the next
# call's blocks can become resident while this grid still runs; timeline tool, graphs and streams, two passes.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run2.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|resident before|SMs used" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*blocks resident before predecessor ended ([0-9]+).*/early \1/; s/.*SMs used ([0-9]+), with two or more blocks ([0-9]+).*/SMs \1 packed \2/' | tr '\n' ' '); echo "$r | $*" >> $T; }
F="--fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384"
for pass in 1 2; do
for g in "--graph" ""; do
  for pc in 0 2; do
    for m in 1 8; do run $F --stages 4 --m $m $g --bal --per-sm $pc; done
    for m in 1 8 16; do run $F --stages 3 --m $m $g --bal --per-sm $pc; done
    for m in 8 16; do run --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --stages 3 --m $m $g --bal --per-sm $pc; done
    for m in 8 16; do run --kernel mmt --boxes 8 --warps 8 --n 4096 --k 4096 --stages 3 --m $m $g --bal --per-sm $pc; done
    for m in 8 16; do run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m $m $g --spread --per-sm $pc; done
  done
  for pc in 0 3; do
    for m in 8 16; do run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m $g --spread --per-sm $pc; done
  done
  for pc in 0 4; do
    for m in 8 16; do run --kernel mmt --boxes 8 --stages 2 --warps 4 --n 6144 --k 4096 --m $m $g --spread --per-sm $pc; done
  done
done
done
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
