#!/bin/bash
# Round 7 (fused): where a few-row fused add + RMSNorm spends its per-call time; cluster push vs barrier reductions.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work1; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run1.sh $OUT/run.sh
timeout 300 build/bench/tunable_norm_chain --csv $OUT/norm_chain.csv 2>&1 | tee $OUT/norm_chain.txt
