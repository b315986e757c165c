#!/bin/bash
# Round 21: the fused-op benchmark tuned with the graph tie-break's launch-bound rule, PyTorch eager /
# torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work51; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run51.sh $OUT/run.sh
OUT=$W FUSED_ARGS="--verbose 2" timeout 240 bash tools/device_check.sh fused | tail -50
cp $W/fused_ops.* $W/fused_torch.json $OUT/ 2>/dev/null; xz -9c $W/fused_bench.log > $OUT/fused_bench.log.xz
