#!/bin/bash
# Round 23, part 3: what the register-fed kernels' graph time is on fp8 405b qkv with their K splits (the split-K
# reduction kernel included in each call's time), against the balanced TMA grid; timeline tool (--splits), graphs.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work56; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run56.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call|medians over steady|per-SM finish" | sed -E 's/.*: ([0-9.]+) us\/call.*/\1/; s/.*release after predecessor ([0-9]+).*release->median exit ([0-9]+).*tail\) ([0-9]+).*block busy ([0-9]+).*resident before predecessor ended ([0-9]+).*floor at [0-9.]+ TB\/s ([0-9]+).*/rel \1 med \2 tail \3 busy \4 early \5 floor \6/; s/.*p10 ([0-9]+).*last ([0-9]+).*SMs used ([0-9]+).*/p10 \1 last \2 SMs \3/' | tr '\n' ' '); echo "$r | $*" >> $T; }
for pass in 1 2; do
  for m in 1 8 16; do
    F="--fp8 --n 2304 --k 16384 --m $m --graph"
    run $F --kernel mmt --boxes 8 --warps 8 --bal --stages 4
    for ks in 1 2 4 8; do
      run $F --kernel mma --rows 16 --warps 8 --splits $ks
      run $F --kernel mmawc --rows 16 --warps 8 --splits $ks
    done
    for ks in 1 2; do run $F --kernel mmapwc --rows 16 --warps 8 --splits $ks; done
    if [ $m -le 8 ]; then
      for r in 1 2; do for ks in 1 2 4 8; do run $F --kernel gemv --rows $r --warps 8 --splits $ks; done; done
    fi
  done
  # the same 37.7 MB in bf16 (K 8192): the GEMV and mma at one / eight tokens
  for m in 1 8; do
    for ks in 1 2 4 8; do run --n 2304 --k 8192 --m $m --graph --kernel gemv --rows 1 --warps 8 --splits $ks; done
    for ks in 1 2 4; do run --n 2304 --k 8192 --m $m --graph --kernel mmawc --rows 16 --warps 8 --splits $ks; done
  done
done
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
