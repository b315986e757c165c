#!/bin/bash
# Round 7 (fused), final tree: the fused-op benchmark (tuned, verbose 2) with PyTorch eager / torch.compile in
# the same call; the <= 64-row rows now report the empty-kernel ratio in both timings (graph and back-to-back).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work7; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run6.sh $OUT/run.sh
OUT=$W FUSED_ARGS="--verbose 2" timeout 360 bash tools/device_check.sh fused | tail -48
cp $W/fused_ops.* $W/fused_torch.json $OUT/ 2>/dev/null; xz -9c $W/fused_bench.log > $OUT/fused_bench.log.xz
