#!/bin/bash
# Round 26 probe: the fp8 GEMM's arithmetic on the loads-only tool's best partitions. tunable_dram_stream loads-only
# with PDL (2304 x 16 KB, as round 25), then --mma-tokens 1,8,16: 8-row e4m3 weight tiles on the N side of m16n8k32,
# tokens on its M side, K split 4 / 8 / 16 ways, tile- or split-major block order, partials only or reduced in the
# kernel (last block per tile, split order), each reduced point's y checked against the exact value of the fills.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work108; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run108.sh $OUT/run.sh
s0=$(date +%s)
timeout 120 build/bench/tunable_dram_stream --shapes 2304x16384 --reps 15 --pdl > $OUT/loads.txt 2>&1
echo "loads exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
s0=$(date +%s)
timeout 300 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192 --reps 15 --mma-tokens 1,8,16 > $OUT/mma.txt 2>&1
echo "mma exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
cat $OUT/mma.txt
