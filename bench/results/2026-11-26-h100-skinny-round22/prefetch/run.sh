#!/bin/bash
# Round 22: the pre-wait L2 hint (SkinnyParams::prefetch, --prefetch-kb) on the one-block-per-SM TMA grids:
# fp8 and bf16 llama3_405b_tp8 qkv, llama3_8b o, gemma_2b down; timeline tool, graphs and streams.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run1.sh $OUT/run.sh
S=$OUT/trace.txt; T=$OUT/table.txt
run() { echo "## $*" >> $S; r=$(timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | tee -a $S | grep -E "us/call" | sed -E 's/.*(graph|stream)[^:]*: ([0-9.]+) us\/call.*/\2/'); echo "$r | $*" >> $T; }
for g in "--graph" ""; do
  for m in 1 8 16; do
    for pf in 16 32 64 128 256; do
      run --fp8 --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --bal --prefetch-kb $pf
      run --fp8 --kernel mmt --boxes 8 --stages 6 --warps 8 --n 2304 --k 16384 --m $m $g --bal --prefetch-kb $pf
      run --fp8 --kernel mmt --boxes 8 --stages 4 --warps 8 --n 2304 --k 16384 --m $m $g --pair --spread --prefetch-kb $pf
    done
  done
done
for g in "--graph" ""; do
  for pf in 16 64 128; do
    for m in 8 16; do
      run --kernel mmt --boxes 8 --stages 6 --warps 8 --n 2304 --k 16384 --m $m $g --bal --prefetch-kb $pf
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 4096 --k 4096 --m $m $g --bal --prefetch-kb $pf
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 4096 --k 4096 --m $m $g --pair --spread --prefetch-kb $pf
      run --kernel mmt --boxes 16 --stages 2 --warps 8 --n 2048 --k 16384 --m $m $g --spread --prefetch-kb $pf
      run --kernel mmt --boxes 8 --stages 4 --warps 8 --n 6144 --k 4096 --m $m $g --bal --prefetch-kb $pf
    done
  done
done
cat $T
grep -iE "rror|skinny_trace:" $S | head -5
xz -9 $S
