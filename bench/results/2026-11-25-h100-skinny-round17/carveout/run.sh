#!/bin/bash
# Round 17, L1 size: the register-fed MMA kernels at carve-out hints from the driver's choice down
# to the smallest shared memory that still holds their resident blocks.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run19.sh $OUT/run.sh
S=$OUT/trace_carveout.txt
run() { echo "## $*" >> $S; timeout 60 build/bench/tunable_skinny_trace "$@" 2>&1 | grep -E "us/call|per-SM|carve|rror|skinny_trace" >> $S; }
for co in -1 5 10 15 25 40; do
  for m in 8 16; do
    run --kernel mma --rows 16 --warps 8 --n 2304 --k 16384 --m $m --graph --carveout $co
    run --kernel mma --rows 16 --warps 8 --n 2048 --k 16384 --m $m --graph --carveout $co
    run --kernel mmawc --rows 16 --warps 8 --n 4096 --k 4096 --m $m --graph --carveout $co
    run --kernel mmawc --rows 16 --warps 8 --n 6144 --k 4096 --m $m --graph --carveout $co
    run --kernel mmapwc --rows 16 --warps 8 --n 4096 --k 4096 --m $m --graph --carveout $co
    run --kernel mmapwc --rows 16 --warps 8 --n 2048 --k 16384 --m $m --graph --carveout $co
  done
done
awk '/^##/{h=$0; sub(/^## --kernel /,"",h)} /us\/call/{match($0,/(graph|stream): [0-9.]+/); t=substr($0,RSTART,RLENGTH)} /per-SM/{match($0,/SMs used [0-9]+/); print h " | " t " | " substr($0,RSTART,RLENGTH)}' $S
grep -i "rror\|skinny_trace:" $S | head
