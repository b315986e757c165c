#!/bin/bash
# After the duplicates mend in rms_norm.cuh (one row-load helper for the register, cluster and streaming kernels; ptxas
# register counts moved on 46 of 120 instantiations): the fused benchmark tuned with PyTorch eager / torch.compile in
# the same call, to compare with after-review/ (the same tree before the mend).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work115; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run115.sh $OUT/run.sh
s0=$(date +%s); OUT=$W timeout 400 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
s0=$(date +%s)
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
