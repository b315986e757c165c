#!/bin/bash
# The occupancy cap (SkinnyLaunch::spread) on the register-fed kernels and the GEMV: per-SM timeline
# with and without, on the rows that miss 0.88 and on controls.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run17.sh $OUT/run.sh
S=$OUT/trace_spread_all.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|rror" >> $S; }
for g in "--graph" ""; do
  for sp in "" "--spread"; do
    for m in 8 16; do
      run --kernel mmawc --rows 16 --warps 8 --n 6144 --k 4096 --m $m $g $sp
      run --kernel mmawc --rows 16 --warps 8 --n 4096 --k 4096 --m $m $g $sp
      run --kernel mmapwc --rows 16 --warps 8 --n 4096 --k 4096 --m $m $g $sp
      run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m $m $g $sp
      run --kernel mma --rows 16 --warps 8 --n 2048 --k 16384 --m $m $g $sp
      run --kernel mmap --rows 32 --warps 4 --n 2304 --k 16384 --m $m $g $sp
    done
    run --kernel gemv --rows 1 --warps 8 --n 2304 --k 16384 --m 1 $g $sp
    run --kernel gemv --rows 1 --warps 8 --n 6144 --k 4096 --m 1 $g $sp
    run --kernel gemv --rows 2 --warps 8 --n 4096 --k 4096 --m 1 $g $sp
    run --kernel gemv --rows 1 --warps 8 --n 2048 --k 16384 --m 1 $g $sp
  done
done
grep -E "^##|us/call|per-SM" $S | sed -E 's/^(mma|mmap|gemv|mmt)[a-z]* bm.rpw [0-9]+ warps [0-9]+ +//' | sed -E 's/per-SM finish after the first wait release \(ns, medians over steady calls\)://'
