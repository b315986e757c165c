#!/bin/bash
# tunable_norm_chain after its variant list was rewritten through one helper (names and launch shapes as before):
# every variant at [64, 8192] and [1024, 8192] (register, staged, streaming, cluster; the noreduce family), graphs.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work110; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run110.sh $OUT/run.sh
s0=$(date +%s)
timeout 200 build/bench/tunable_norm_chain --rows 64,1024 --hidden 8192 --csv $OUT/norm_chain.csv > $OUT/norm_chain.txt 2>&1
echo "norm_chain exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
tail -5 $OUT/norm_chain.txt
