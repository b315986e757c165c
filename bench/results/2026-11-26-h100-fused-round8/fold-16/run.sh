#!/bin/bash
# Fused round 8, final kernels: fold_broadcast for <= 16 values (cluster push) and groups of <= 16 warps
# (group_reduce). The chain tool of this build against the round-7 kernels (tunable_norm_chain_base), interleaved;
# the whole fused-op GPU suite; compute-sanitizer on the cluster test; the fused-op benchmark (tuned, verbose 2)
# with PyTorch eager / torch.compile in the same call.
# Two device calls (each under the 600 s limit): `run59.sh a` (chain, suite), `run59.sh b` (sanitizer, benchmark).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
part=${1:-a}
W=/tmp/work59$part; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run59.sh $OUT/run.sh
if [ $part = a ]; then
for pass in 1 2; do
  for b in base new; do
    bin=build/bench/tunable_norm_chain; [ $b = base ] && bin=build/bench/tunable_norm_chain_base
    $bin --rows 1,16,64,128 --hidden 4096,8192,16384 --csv $W/chain_${b}_$pass.csv > $W/chain_${b}_$pass.txt 2>&1
    echo "$b pass $pass exit $?"
  done
done
python3 - <<'PY' $W
import csv, sys, glob, statistics as st, os
w = sys.argv[1]
d = {}
for f in glob.glob(w + '/chain_*_*.csv'):
    b = os.path.basename(f).split('_')[1]
    for r in csv.DictReader(open(f)):
        d.setdefault((r['rows'], r['hidden'], r['variant']), {}).setdefault(b, []).append(float(r['graph_us']))
with open(w + '/compare.txt', 'w') as fo:
    for k in sorted(d, key=lambda k: (int(k[0]), int(k[1]), k[2])):
        v = d[k]
        if 'base' in v and 'new' in v:
            a, b = st.median(v['base']), st.median(v['new'])
            fo.write(f"[{k[0]:>4}, {k[1]:>5}] {k[2]:24s} base {a:6.3f}  new {b:6.3f}  {100*(b-a)/a:+6.1f} %\n")
PY
cp $W/compare.txt $OUT/compare.txt
timeout 420 build/tests/tunable_gpu_ops_tests --gtest_brief=1 > $W/tunable_gpu_ops_tests.log 2>&1; echo "ops suite exit $?"
grep -E "^\[  (PASSED|FAILED) |FAILED|tests from .* ran" $W/tunable_gpu_ops_tests.log | head -12 | tee $OUT/tests_summary.txt
tar cJf $OUT/extras.tar.xz -C $W $(cd $W && ls chain_* tunable_gpu_ops_tests.log)
else
OUT=$W SAN_TOOLS="memcheck racecheck synccheck" SAN_TARGETS=ops SAN_FILTER_OPS='NormCluster.*' SAN_TIMEOUT=60 \
  timeout 200 bash tools/device_check.sh sanitize | tee $OUT/sanitize_summary.txt
OUT=$W FUSED_ARGS="--verbose 2" timeout 360 bash tools/device_check.sh fused | tail -48
cp $W/fused_ops.md $OUT/ 2>/dev/null
tar cJf $OUT/extras.tar.xz -C $W $(cd $W && ls sanitize_*.log fused_ops.csv fused_ops.json fused_torch.json fused_bench.log 2>/dev/null)
fi
