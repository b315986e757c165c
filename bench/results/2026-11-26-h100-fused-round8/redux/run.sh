#!/bin/bash
# Fused round 8: the warp's sum by redux.sync on a fixed-point copy (warpredux) against the shuffles (warpreduce)
# and no cross-lane step (localreduce); tunable_norm_chain, graphs, two passes.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work60; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run60.sh $OUT/run.sh
for pass in 1 2; do
  build/bench/tunable_norm_chain --rows 1,16,64 --hidden 4096,8192,16384 --csv $OUT/norm_chain$pass.csv > $OUT/norm_chain$pass.txt 2>&1
  echo "pass $pass exit $?"
done
grep -E 'empty|reduce_b|redux_b|fastdiv_b|chain_b' $OUT/norm_chain1.txt | grep -E '\[   1,  4096\]|\[  16,  4096\]|\[   1, 16384\]|empty'
