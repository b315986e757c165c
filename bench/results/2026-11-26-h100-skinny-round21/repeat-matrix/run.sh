#!/bin/bash
# Round 21: localise the paired 8 x 6 fault (bf16, 16 tokens): one-tile blocks only (n 2048), mixed
# (2304), two-tile only (4224 = 264 tiles); K 8192 / 16384 / 32768 (16 / 32 / 64 stages a tile); and the
# shipped 8 x 3 / 8 x 4 pair and bal at the longest K.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run43.sh $OUT/run.sh
S=$OUT/repeat_matrix.txt
run() { echo "## $*" >> $S; timeout 120 build/bench/tunable_skinny_trace --calls 4 --repeat-check 100 "$@" 2>&1 | grep -E "repeat check|rror|check against" | tr '\n' ' ' >> $S; echo >> $S; }
for n in 2048 2304 4224; do
  for k in 8192 16384 32768; do
    run --kernel mmt --boxes 8 --stages 6 --warps 8 --n $n --k $k --m 16 --spread --pair
  done
done
for m in 9 12 16; do run --kernel mmt --boxes 8 --stages 6 --warps 8 --n 2304 --k 16384 --m $m --spread --pair; done
for st in 3 4; do
  for k in 32768 65536; do
    for n in 2304 4224; do
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n $n --k $k --m 16 --spread --pair
      run --kernel mmt --boxes 8 --stages $st --warps 8 --n $n --k $k --m 16 --bal
      run --fp8 --kernel mmt --boxes 8 --stages $st --warps 8 --n $n --k $k --m 16 --spread --pair
    done
  done
done
cat $S | sed -E 's/check against mmap bm16 wk8: worst \|diff\| \/ \(\|y\| \+ 1\)/worst/; s/launches each, //'
