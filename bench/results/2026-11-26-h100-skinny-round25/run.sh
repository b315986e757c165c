#!/bin/bash
# Loads-only ceiling of the skinny partitions (tunable_dram_stream), plain launches and PDL-chained launches (each
# kernel triggering the next at its start and waiting for the previous grid before its first load, as the GEMM
# kernels do), graphs of 24 launches over copies rotated through > 300 MB: fp8 llama3_405b_tp8 qkv (2304 x 16 KB),
# llama3_8b o (4096 x 8 KB), bf16 405b qkv (2304 x 32 KB).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work107; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run107.sh $OUT/run.sh
s0=$(date +%s)
timeout 400 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192,2304x32768 --reps 15 --pdl > $OUT/dram_stream.txt 2>&1
echo "dram_stream exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
grep -E 'copy bandwidth|flat read' $OUT/dram_stream.txt
