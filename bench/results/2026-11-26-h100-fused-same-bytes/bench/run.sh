#!/bin/bash
# Fused-op benchmark (tuned, PyTorch eager / torch.compile in the same call) with the new same-bytes reference next to
# every row <= 64 (a kernel moving the op's bytes and nothing else, timed in the same rounds as the row and the empty
# kernel), on the tree without the streaming kernel's L2-ahead-off instantiations; then memcheck / racecheck on the
# two 1024-row streaming candidate cases.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work104; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run104.sh $OUT/run.sh
s0=$(date +%s); OUT=$W timeout 330 bash tools/device_check.sh fused > $W/fused_step.txt 2>&1; echo "fused step exit $? ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
for f in fused_ops.md fused_ops.csv fused_torch.json; do cp $W/$f $OUT/ 2>/dev/null; done
echo "graph MISS $(grep -c 'graph MISS' $OUT/fused_ops.md), b2b MISS $(grep -c 'b2b MISS' $OUT/fused_ops.md), compile ok $(grep -c 'compile ok' $OUT/fused_ops.md), eff ok $(grep -c 'eff>=0.85 ok' $OUT/fused_ops.md)" | tee -a $OUT/step.txt
s0=$(date +%s)
OUT=$W SAN_TARGETS=ops SAN_TIMEOUT=110 SAN_FILTER_OPS='*NormCandidatesTest*bf16_addnorm_llama_r1024_h4096:*NormCandidatesTest*bf16_addnorm_gemma*_r1024_h4096' \
  bash tools/device_check.sh sanitize > $OUT/sanitize.txt 2>&1
echo "sanitizers ($(( $(date +%s) - s0 )) s)" | tee -a $OUT/sanitize.txt
tail -8 $OUT/sanitize.txt
tar cJf $OUT/logs.tar.xz -C $W fused_step.txt $(cd $W && ls fused_bench.log fused_torch.log tunable_results*.csv 2>/dev/null)
