#!/bin/bash
# Round 18 question 1: does the activation traffic from L2 (x re-read by every 16-row block) cost the
# long-K rows? Same kernels, x aliased to one row (ldb = 0: ~1/8 of the x sectors from L2) vs real.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run25.sh $OUT/run.sh
S=$OUT/trace_x_alias.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|check" >> $S; }
for rep in 1 2; do
  for xa in "" "--x-alias"; do
    for m in 8 16; do
      run --kernel mmt --warps 8 --boxes 8 --stages 3 --spread --n 2304 --k 16384 --m $m --graph $xa
      run --kernel mmt --warps 8 --boxes 8 --stages 3 --spread --n 2048 --k 16384 --m $m --graph $xa
      run --kernel mmt --warps 8 --boxes 8 --stages 3 --spread --n 4096 --k 14336 --m $m --graph $xa
      run --kernel mmt --warps 4 --boxes 8 --stages 2 --spread --n 6144 --k 4096 --m $m --graph $xa
      run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m $m --graph $xa
    done
  done
done
grep -E "^##|us/call|per-SM" $S | sed -E 's/^(mma|mmap|gemv|mmt)[a-z]* bm.rpw [0-9]+ warps [0-9]+ +//' | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | grep -v "^##" | cut -c1-200
