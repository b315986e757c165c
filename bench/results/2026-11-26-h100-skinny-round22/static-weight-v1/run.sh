#!/bin/bash
# Round 22: the weight's first ring stages loaded before the PDL wait (SkinnyParams::weight_static, trace
# --static-weight), with and without a spare block slot per SM (--per-sm 2); timeline tool, graphs and streams,
# two passes; then the repeat stress on the static-weight launches.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run4.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|resident before|SMs used|rror|skinny_trace:" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*blocks resident before predecessor ended ([0-9]+).*/early \1/; s/.*SMs used ([0-9]+), with two or more blocks ([0-9]+).*/SMs \1 packed \2/' | tr '\n' ' '); echo "$r | $*" >> $T; }
F="--fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384"
B="--kernel mmt --warps 8"
for pass in 1 2; do
for g in "--graph" ""; do
  for st in "" "--static-weight"; do
    for m in 1 8; do run $F --stages 4 --m $m $g --bal $st; run $F --stages 4 --m $m $g --bal --per-sm 2 $st; done
    for m in 1 8 16; do run $F --stages 6 --m $m $g --bal $st; done
    run $F --stages 3 --m 16 $g --bal $st; run $F --stages 3 --m 16 $g --bal --per-sm 2 $st
    for m in 8 16; do
      run $B --boxes 8 --stages 6 --n 2304 --k 16384 --m $m $g --bal $st
      run $B --boxes 8 --stages 2 --n 4096 --k 4096 --m $m $g --spread $st
      run $B --boxes 8 --stages 4 --n 4096 --k 4096 --m $m $g --pair --spread $st
      run --kernel mmt --warps 4 --boxes 8 --stages 2 --n 6144 --k 4096 --m $m $g --spread $st
      run $B --boxes 16 --stages 2 --n 2048 --k 16384 --m $m $g --spread $st
    done
  done
done
done
cat $T
R=$OUT/repeat.txt
rs() { echo "## $*" >> $R; timeout 120 build/bench/tunable_skinny_trace --calls 4 --repeat-check 100 --static-weight "$@" 2>&1 | grep -E "repeat check|rror|check against" | tr '\n' ' ' >> $R; echo >> $R; }
for m in 1 8 16; do
  rs $F --stages 4 --m $m --bal; rs $F --stages 6 --m $m --bal; rs $F --stages 4 --m $m --pair --spread
  rs $B --boxes 8 --stages 2 --n 4096 --k 4096 --m $m --spread; rs $B --boxes 8 --stages 6 --n 2304 --k 16384 --m $m --bal
  rs $B --boxes 8 --stages 4 --n 2300 --k 1024 --m $m --pair --spread
done
cat $R
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
