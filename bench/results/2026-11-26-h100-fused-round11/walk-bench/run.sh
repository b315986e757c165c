#!/bin/bash
# Round 11, final form: the fused-op benchmark with the streaming norm candidates by walk length (rms_*_w2 / _w4) (tuned; every candidate's
# tuning time in the log, verbose 2), PyTorch eager / torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work98; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run98.sh $OUT/run.sh
s0=$(date +%s); OUT=$W FUSED_ARGS="--verbose 2" timeout 500 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
grep -E "^\| add_rmsnorm \| \[(1024|2048|4096|8192)," $OUT/fused_ops.md
