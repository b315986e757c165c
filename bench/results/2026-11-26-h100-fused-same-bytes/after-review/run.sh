#!/bin/bash
# After review: the fused benchmark's same-bytes kernel reads its input planes contiguously (x and residual, gate and
# up), rotates uncapped below 2^16 copies, and the few-row rows are timed in six rounds, one per order of (row,
# empty kernel, same-bytes kernel). Fused bench tuned with PyTorch eager / torch.compile in the same call; then the
# fp8 MMA probe of round 26 with its check on a weight and tokens that vary by row, token and along K.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work111; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run111.sh $OUT/run.sh
s0=$(date +%s); OUT=$W timeout 400 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
s0=$(date +%s)
timeout 120 build/bench/tunable_dram_stream --shapes 2304x16384,4096x8192 --reps 15 --mma-tokens 1,8,16 > $OUT/mma.txt 2>&1
echo "mma exit $? ($(( $(date +%s) - s0 )) s), y ok $(grep -c 'y ok' $OUT/mma.txt), y WRONG $(grep -c WRONG $OUT/mma.txt)" | tee -a $OUT/step.txt
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
