#!/bin/bash
# Round 7 (fused): the norm chain with warp / block reductions in the no-reduce kernel; block and warp DSMEM push.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work3; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run3.sh $OUT/run.sh
timeout 300 build/bench/tunable_norm_chain --csv $OUT/norm_chain.csv 2>&1 | tee $OUT/norm_chain.txt; echo "exit ${PIPESTATUS[0]}"
