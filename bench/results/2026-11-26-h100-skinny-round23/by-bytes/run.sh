#!/bin/bash
# Round 23, part 2: is the balanced grid's per-block streaming rate set by the bytes per call, the row length or
# the fp8 path? Timeline tool at HEAD, graphs: same bytes in bf16 and fp8 (16 KB rows: fp8 K 16384 / bf16 K 8192;
# 32 KB rows: fp8 K 32768 / bf16 K 16384), the balanced 8 x 4 and 8 x 6 rings, 1 and 8 tokens.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work55; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run55.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|medians over steady|per-SM finish" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*release after predecessor ([0-9]+).*release->median exit ([0-9]+).*tail\) ([0-9]+).*block busy ([0-9]+).*floor at [0-9.]+ TB\/s ([0-9]+).*/rel \1 med \2 tail \3 busy \4 floor \5/; s/.*p10 ([0-9]+).*last ([0-9]+).*SMs used ([0-9]+).*/p10 \1 last \2 SMs \3/' | tr '\n' ' '); echo "$r | $*" >> $T; }
for pass in 1 2; do
  for st in 4 6; do
    for m in 1 8; do
      run --fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --stages $st --m $m --graph
      run       --kernel mmt --boxes 8 --warps 8 --n 2304 --k 8192  --bal --stages $st --m $m --graph
      run --fp8 --kernel mmt --boxes 8 --warps 8 --n 2304 --k 32768 --bal --stages $st --m $m --graph
      run       --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --stages $st --m $m --graph
      run --fp8 --kernel mmt --boxes 8 --warps 8 --n 4608 --k 8192  --bal --stages $st --m $m --graph
    done
  done
done
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
