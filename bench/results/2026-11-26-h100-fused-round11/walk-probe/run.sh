#!/bin/bash
# Round 11, second form: the streaming candidates by walk length (rms_*_w<2|4|8>: ceil(rows / w) blocks, each walking
# up to w rows). Fused-op benchmark tuned (verbose 2), PyTorch eager / torch.compile in the same call; then the
# chain tool on the streaming kernel by walk length against the register and staged kernels.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work96; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run96.sh $OUT/run.sh
s0=$(date +%s); OUT=$W FUSED_ARGS="--verbose 2" timeout 400 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_ops.json fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
grep -E "^\| add_rmsnorm \| \[(1024|2048|4096|8192)," $OUT/fused_ops.md
s0=$(date +%s); timeout 150 build/bench/tunable_norm_chain --rows 1024,2048 --hidden 8192,16384 \
  --only rms_w,rms_staged_t1024,rms_t256_i8,rms_t1024_i1,rms_t1024_i2 --csv $OUT/chain.csv > $W/chain.txt 2>&1
echo "chain exit $? ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/step.txt
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt chain.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
