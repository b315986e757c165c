#!/usr/bin/env bash
# Example 2 in one call: HF generate plain, then ours through the cuBLAS interposer tuned offline
# (record a short run's GEMM misses, `tunable tune-file` them, run with stored results only), and
# with EX2_TUNABLEOP=1 PyTorch's TunableOp (tuned in a first run), with EX2_PATCH=1 ours plus
# tunable.hf.patch (fused add + norm, act-and-mul; its GEMMs, gate and up as one, are recorded and
# tuned with the others). Each configuration is one process running hf_generate.py (median of 3
# timed generates after a warmup).
#   bench/example2/run.sh OUTDIR MODEL BATCH [hf_generate.py options, e.g. --no-compile]
set -uo pipefail
B="${B:-build}"
TR="$B/tools/tunable"
out="$1" model="$2" batch="$3"
shift 3
tag="${model}_b${batch}$(printf '%s' "$*" | tr -c 'a-z0-9' '_')"
gen=(python3 bench/example2/hf_generate.py --model "$model" --batch "$batch" "$@")
rc=0
"${gen[@]}" "$out/ex2_${tag}_plain.json" --profile || rc=1
"$TR" run --record --file "$out/ex2_${model}.csv" --untuned "$out/ex2_${model}_untuned.csv" -- \
  "${gen[@]}" "$out/ex2_${tag}_record.json" --new-tokens 16 --runs 1 > "$out/ex2_${tag}_record.log" 2>&1 || rc=1
tail -4 "$out/ex2_${tag}_record.log"
if [ "${EX2_PATCH:-0}" = 1 ]; then
  "$TR" run --record --file "$out/ex2_${model}.csv" --untuned "$out/ex2_${model}_untuned.csv" -- \
    "${gen[@]}" "$out/ex2_${tag}_record_patch.json" --new-tokens 16 --runs 1 --patch \
    > "$out/ex2_${tag}_record_patch.log" 2>&1 || rc=1
  tail -2 "$out/ex2_${tag}_record_patch.log"
fi
TUNABLE_VERBOSE=0 "$TR" tune-file "$out/ex2_${model}_untuned0.csv" --device cuda --file "$out/ex2_${model}.csv" \
  2>&1 | tail -3 || rc=1
"$TR" run --use --file "$out/ex2_${model}.csv" -- "${gen[@]}" "$out/ex2_${tag}_ours.json" --profile || rc=1
if [ "${EX2_PATCH:-0}" = 1 ]; then
  "$TR" run --use --file "$out/ex2_${model}.csv" -- "${gen[@]}" "$out/ex2_${tag}_ours_patch.json" --profile --patch \
    || rc=1
fi
if [ "${EX2_TUNABLEOP:-0}" = 1 ]; then
  PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME="$out/torch_tunableop_%d.csv" \
    "${gen[@]}" "$out/ex2_${tag}_tunableop_tuning.json" --new-tokens 16 --runs 1 > /dev/null 2>&1 || rc=1
  PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=0 PYTORCH_TUNABLEOP_FILENAME="$out/torch_tunableop_%d.csv" \
    "${gen[@]}" "$out/ex2_${tag}_tunableop.json" || rc=1
fi
exit $rc
