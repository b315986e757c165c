#!/bin/bash
# Fused round 8: which part of the norm's reduction costs the ~0.4 us between the memory chain alone and a warp
# reduction (tunable_norm_chain with localreduce / warpfastdiv / fmachain), graphs, two passes.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work57; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run57.sh $OUT/run.sh
for pass in 1 2; do
  build/bench/tunable_norm_chain --rows 1,16,64 --hidden 4096,8192,16384 --csv $OUT/norm_chain$pass.csv > $OUT/norm_chain$pass.txt 2>&1
  echo "pass $pass exit $?"
done
grep -E 'empty|_b4_|_b8_|_b16_|rms_c' $OUT/norm_chain1.txt | head -80
