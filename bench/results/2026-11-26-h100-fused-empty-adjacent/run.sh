#!/bin/bash
# The fused-op benchmark with the <= 64-row empty-kernel comparison timed next to each row in alternating
# order (bench/fused_ops_bench.cpp), tuned, with PyTorch eager and torch.compile in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work85; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run85.sh $OUT/run.sh
s0=$(date +%s); OUT=$W timeout 500 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
grep -E 'empty kernel|^\| add_rmsnorm \| \[(1|16|64),|^\| silu_and_mul \| \[(1|16|64),' $OUT/fused_ops.md | cut -c1-250 | head -24
grep -c "graph MISS" $OUT/fused_ops.md; grep -c "b2b MISS" $OUT/fused_ops.md; grep -c "compile MISS" $OUT/fused_ops.md; grep -c "eff>=0.85 MISS" $OUT/fused_ops.md
