#!/bin/bash
# Per-SM finish times: llama3_405b_tp8 qkv (the outlier, 2304 x 16384) against gemma_2b down (2048 x 16384),
# llama3_8b o (4096 x 4096) and llama3_405b_tp8 down (16384 x 6656), bf16, graphs and streams
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
S=$OUT/trace_per_sm.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|period|per-SM|rror" >> $S; }
for g in "" "--graph"; do
  for m in 1 8 16; do
    run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2304 --k 16384 --m $m $g
    run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2048 --k 16384 --m $m $g
    run --kernel mmt --boxes 8 --stages 3 --warps 4 --n 2432 --k 16384 --m $m $g
    run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 4096 --k 4096 --m $m $g
    run --kernel mmt --boxes 8 --stages 2 --warps 8 --n 16384 --k 6656 --m $m $g
  done
  run --kernel gemv --rows 1 --warps 8 --n 2304 --k 16384 --m 1 $g
  run --kernel gemv --rows 1 --warps 8 --n 2048 --k 16384 --m 1 $g
done
grep -E "^##|us/call|per-SM" $S | sed -E 's/^mmt bm.rpw [0-9]+ warps [0-9]+ +//'
bash tools/device_check.sh pack
