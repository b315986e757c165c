#!/bin/bash
# Round 11 probe: the streaming norm kernel (rms_s*) against the library's register and staged kernels at
# 1024-4096 rows, graph-timed on rotated inputs in one tool (tunable_norm_chain).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work93; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run93.sh $OUT/run.sh
s0=$(date +%s); timeout 400 build/bench/tunable_norm_chain --rows 1024,2048,4096 --hidden 4096,8192,16384 \
  --only rms_s,rms_staged,rms_t --csv $OUT/chain.csv > $OUT/chain.txt 2>&1
echo "chain exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
cat $OUT/chain.txt
