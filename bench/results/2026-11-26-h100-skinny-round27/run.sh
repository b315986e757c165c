#!/bin/bash
# Graph times of llama3_8b o (4096 x 4096, bf16) at M = 16 for each of the skinny candidates within ~12 % of the
# fastest back-to-back in the last suite tune (gemm-table's tune log), each forced through a one-line results file
# (r0.csv: the library adds the device ordinal to --file r.csv) and timed by `tunable_bench verify` (the library's dispatch; back-to-back, stream and graph), three passes in a
# rotated order: is a candidate outside the tuner's graph tie-break (three finalists within 1 % back-to-back)
# faster in graphs than the one it picks?
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work113; rm -rf $W; mkdir -p $W
OUT=$W timeout 100 bash tools/device_check.sh info > /dev/null; cp $W/device.txt $OUT/device.txt
cp .devcarry/run113.sh $OUT/run.sh
printf 'model,layer,N,K\nllama3_8b,o,4096,4096\n' > $W/shapes.csv
C=(skinny_mmt_bf16_bm16_wk8_ks1_b8s2 skinny_mma_bf16_bm16_wk8_ks1_wc skinny_mmt_bf16_bm16_wk8_ks1_b8s6_bal
   skinny_mmap_bf16_bm16_wk8_ks1_wc skinny_mmt_bf16_bm16_wk8_ks1_b8s3 skinny_mmt_bf16_bm16_wk4_ks1_b8s2
   skinny_mma_bf16_bm32_wk16_ks1_wc skinny_mmt_bf16_bm16_wk8_ks1_b8s4_bal skinny_mmt_bf16_bm16_wk4_ks1_b8s3
   skinny_mmt_bf16_bm16_wk8_ks1_b8s3_pair skinny_mmt_bf16_bm16_wk8_ks1_b8s4_pair skinny_mmt_bf16_bm16_wk8_ks1_b8s3_bal)
echo "pass,solution,default_us,tuned_us,default_graph_us,tuned_graph_us,tuned_stream_us,floor_us,winner" > $OUT/graphs.csv
s0=$(date +%s)
for pass in 0 1 2; do
  n=${#C[@]}
  for ((i = 0; i < n; ++i)); do
    sol=${C[$(( (i + pass * 4) % n ))]}
    d=$W/p${pass}_$sol; mkdir -p $d
    { cat .devcarry/validators.csv; echo "GemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096,$sol,0.0"; } > $d/r0.csv
    timeout 60 build/bench/tunable_bench verify --shapes $W/shapes.csv --file $d/r.csv --out $d --ms 16 --dtypes bf16 > $d/log 2>&1
    python3 - "$d/gemm_verify.csv" "$pass" "$sol" >> $OUT/graphs.csv <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(",".join([sys.argv[2], sys.argv[3], r["default_us"], r["tuned_us"], r["default_graph_us"], r["tuned_graph_us"], r["tuned_stream_us"], r["floor_us"], r["winner"]]))
PY
  done
done
echo "exit ($(( $(date +%s) - s0 )) s)" | tee $OUT/step.txt
python3 - $OUT/graphs.csv <<'PY' | tee -a $OUT/step.txt
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault(r["solution"], []).append(r)
for sol, rs in sorted(by.items(), key=lambda kv: statistics.median(float(r["tuned_graph_us"]) for r in kv[1])):
    g = [float(r["tuned_graph_us"]) for r in rs]; b = [float(r["tuned_us"]) for r in rs]
    print(f"{sol:42s} graph {statistics.median(g):6.2f} ({min(g):.2f}-{max(g):.2f})  b2b {statistics.median(b):6.2f}  floor {rs[0]['floor_us']}  winner-as-run {rs[0]['winner']}")
PY
tar cJf $OUT/logs.tar.xz -C $W $(cd $W && ls -d p*)
