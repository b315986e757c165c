#!/bin/bash
# Fused round 8: the reductions' second stage read back by every thread (fold_broadcast: broadcast 16-byte reads and
# a pairwise tree) instead of spread over the lanes and warp_reduce'd: tunable_norm_chain of this build against the
# previous kernels (tunable_norm_chain_base, same tool), interleaved, graphs, three passes.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work58; mkdir -p $W
OUT=$W bash tools/device_check.sh info > /dev/null 2>&1; cp $W/device.txt $OUT/device.txt
cp .devcarry/run58.sh $OUT/run.sh
for pass in 1 2 3; do
  for b in base new; do
    bin=build/bench/tunable_norm_chain; [ $b = base ] && bin=build/bench/tunable_norm_chain_base
    $bin --rows 1,16,64,128 --hidden 4096,8192,16384 --csv $OUT/chain_${b}_$pass.csv > $OUT/chain_${b}_$pass.txt 2>&1
    echo "$b pass $pass exit $?"
  done
done
python3 - <<'PY' $OUT
import csv, sys, glob, statistics as st, os
out = sys.argv[1]
d = {}
for f in glob.glob(out + '/chain_*_*.csv'):
    b = os.path.basename(f).split('_')[1]
    for r in csv.DictReader(open(f)):
        d.setdefault((r['rows'], r['hidden'], r['variant']), {}).setdefault(b, []).append(float(r['graph_us']))
with open(out + '/compare.txt', 'w') as fo:
    for k in sorted(d, key=lambda k: (int(k[0]), int(k[1]), k[2])):
        v = d[k]
        if 'base' in v and 'new' in v:
            a, b = st.median(v['base']), st.median(v['new'])
            fo.write(f"[{k[0]:>4}, {k[1]:>5}] {k[2]:24s} base {a:6.3f}  new {b:6.3f}  {100*(b-a)/a:+6.1f} %\n")
PY
grep -E 'rms_c|rms_t|empty' $OUT/compare.txt | head -120
