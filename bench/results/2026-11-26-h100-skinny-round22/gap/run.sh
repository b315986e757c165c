#!/bin/bash
# Round 22: the weight before the PDL wait (--static-weight) with a spare slot per SM (--per-sm 2) on the balanced
# grid, back-to-back and with every call starting on an idle device (--gap-us 3: a one-block non-PDL kernel after
# each call), where the spare slot lets the block scheduler pack the grid. Timeline tool, graphs, two passes.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE > $OUT/clocks.txt 2>&1
cp .devcarry/run5.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|resident before|SMs used|rror|skinny_trace:" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*blocks resident before predecessor ended ([0-9]+).*/early \1/; s/.*SMs used ([0-9]+), with two or more blocks ([0-9]+).*/SMs \1 packed \2/' | tr '\n' ' '); echo "$r | $*" >> $T; }
F="--fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
B="--kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal"
for pass in 1 2; do
  for gap in 0 3; do
    for cfg in "--per-sm 0" "--per-sm 0 --static-weight" "--per-sm 2" "--per-sm 2 --static-weight"; do
      for m in 1 8; do run $F --stages 4 --m $m --graph --gap-us $gap $cfg; done
      run $F --stages 3 --m 16 --graph --gap-us $gap $cfg
      run $B --stages 4 --m 8 --graph --gap-us $gap $cfg
    done
    for m in 1 8 16; do run $F --stages 6 --m $m --graph --gap-us $gap; done
  done
done
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
grep -iE "Clocks Event Reasons|Active|Graphics|Memory  |Power Draw|GPU Current Temp" $OUT/clocks.txt | head -30
xz -9 $S
