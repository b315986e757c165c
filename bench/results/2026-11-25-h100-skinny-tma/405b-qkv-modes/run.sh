#!/bin/bash
# 405b qkv: mmt 8x3 vs the register-fed picks, stream and graph, with overlap counts
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
S=$OUT/trace_405b_qkv.txt
for m in 8 16; do
  for g in "" "--graph"; do
    for spec in "mmt --boxes 8 --stages 3 --warps 8" "mmt --boxes 8 --stages 2 --warps 8" "mmt --boxes 8 --stages 3 --warps 4" "mmawc --warps 8" "mma --warps 8" "mmapwc --warps 8"; do
      for rep in 1 2; do
        echo "## m=$m ${g:-stream} $spec rep$rep" >> $S
        build/bench/tunable_skinny_trace --kernel $spec --rows 16 --n 2304 --k 16384 --m $m $g 2>&1 | grep -E "us/call|period|rror" >> $S
      done
    done
  done
done
