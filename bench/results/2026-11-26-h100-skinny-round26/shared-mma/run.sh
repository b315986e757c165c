#!/bin/bash
# tunable_dram_stream --mma-tokens after its probe takes the skinny kernels' own fp8 MMA wrapper
# (E4M3Traits::mma_frag, kernels/gemv/common.cuh) instead of a copy of it: same checks (y exact on row-, token- and
# K-varying data), timings to compare with round 26's after-review-mma.txt.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work112; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run112.sh $OUT/run.sh
s0=$(date +%s)
timeout 120 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192 --reps 15 --mma-tokens 1,8,16 > $OUT/mma.txt 2>&1
echo "mma exit $? ($(( $(date +%s) - s0 )) s), y ok $(grep -c 'y ok' $OUT/mma.txt), y WRONG $(grep -c WRONG $OUT/mma.txt)" | tee $OUT/step.txt
