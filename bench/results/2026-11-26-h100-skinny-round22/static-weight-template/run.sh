#!/bin/bash
# Round 22: the balanced kernel with the early weight path as a template flag (the waiting instantiation's code as
# before the static-weight work); default and static-weight launches, timeline tool, graphs and streams, two passes;
# repeat stress on the static-weight balanced launches.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run9.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|resident before|SMs used|rror|skinny_trace:" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*blocks resident before predecessor ended ([0-9]+).*/early \1/; s/.*SMs used ([0-9]+), with two or more blocks ([0-9]+).*/SMs \1 packed \2/' | tr '\n' ' '); echo "$r | $*" >> $T; }
F="--fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
B="--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
for pass in 1 2; do
  for g in "--graph" ""; do
    for st in "" "--static-weight"; do
      for m in 1 8; do run $F --stages 4 --m $m $g $st; done
      for m in 1 8 16; do run $F --stages 6 --m $m $g $st; done
      run $F --stages 3 --m 16 $g $st
      run $B --stages 4 --m 8 $g $st; run $B --stages 6 --m 8 $g $st; run $B --stages 3 --m 16 $g $st; run $B --stages 6 --m 16 $g $st
      run --kernel mmt --boxes 8 --warps 8 --n 4096 --k 4096 --stages 4 --m 16 --bal $g $st
    done
    run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m 16 --spread $g
    run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 4096 --k 4096 --m 8 --pair --spread $g
  done
done
cat $T
R=$OUT/repeat.txt
rs() { echo "## $*" >> $R; timeout 120 build/bench/tunable_skinny_trace --calls 4 --repeat-check 100 --static-weight "$@" 2>&1 | grep -E "repeat check|rror|check against" | tr '\n' ' ' >> $R; echo >> $R; }
for m in 1 8 16; do rs $F --stages 4 --m $m; rs $F --stages 3 --m $m; rs $F --stages 6 --m $m; rs $B --stages 4 --m $m; rs $B --stages 3 --m $m; done
cat $R
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
