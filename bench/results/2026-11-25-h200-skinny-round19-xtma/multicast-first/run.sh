#!/bin/bash
# Round 19: x multicast over 2-block clusters in the paired mmt kernel (--x-cluster 2) against the
# paired and unpaired kernels, timeline tool (its check against mmap on the same inputs included).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run30.sh $OUT/run.sh
S=$OUT/trace_xcluster.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror|skinny_trace:|check" >> $S; }
for g in "--graph" ""; do
  for m in 8 16; do
    for rep in 1 2; do
      run --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m $g --spread
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --spread --pair
      run --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2304 --k 16384 --m $m $g --spread --pair --x-cluster 2
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --spread --pair --x-cluster 2
    done
    run --kernel mmt --boxes 8 --stages 3 --warps 8 --n 2048 --k 16384 --m $m $g --spread
    run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2048 --k 16384 --m $m $g --spread --pair --x-cluster 2
    run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m $g --spread
    run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 4096 --k 4096 --m $m $g --spread --pair --x-cluster 2
    run --kernel mmt --boxes 8 --stages 3 --warps 8 --n 4096 --k 14336 --m $m $g --spread
    run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 4096 --k 14336 --m $m $g --spread --pair --x-cluster 2
  done
done
grep -E "us/call|per-SM|rror|skinny_trace:" $S | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://' | sed -E 's/bm.rpw [0-9]+ //; s/by events.*blocks.call/blk/' | cut -c1-150
grep -E "^check|disagree|different" $S | sed -E "s/= [0-9.e-]+/= x/" | sort | uniq -c
timeout 60 build/tests/tunable_gpu_skinny_tests --gtest_brief=1 2>&1 | tail -3
