#!/bin/bash
# The fused-op benchmark's rows <= 64 again (tuned; no PyTorch: its rows were in run104's call), the same-bytes
# reference now checked once (its output poisoned, then compared with the host XOR of its inputs) before it is timed:
# a second sample of the ratios next to run104's.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work106; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run106.sh $OUT/run.sh
s0=$(date +%s)
timeout 300 build/bench/tunable_fused_bench --out $W --rows 1,16,64 --anchors bench/baselines/h100-torch-fused-ops.txt > $W/fused_bench.log 2>&1
echo "fused bench exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv; do cp $W/$f $OUT/ 2>/dev/null; done
grep -c 'MISS' $OUT/fused_ops.md | tee -a $OUT/step.txt
tail -3 $W/fused_bench.log | tee -a $OUT/step.txt
xz -c $W/fused_bench.log > $OUT/fused_bench.log.xz
