#!/usr/bin/env bash
# A/B of the weight-only GEMV's two e4m3 conversions as tuner candidates (names' _cvt suffix), in
# one call: FP8 decode steps of each model in MODELS on three results files,
#   base   bench/results/engine/tuned_h100.csv (tuned before _cvt existed)
#   cvt    the same without its FP8 rows, which this build retunes (both conversions candidates)
#   strip  the cvt file with every _cvt removed (the same configurations by the byte trick)
# alternated REPS times, then one bf16 step for the FP8/bf16 ratio; with TESTS=1 first the skinny
# and GEMM GPU suites and the engine's tests against transformers (tests/torch/test_engine.py).
# Lines: [file] step ms, tokens/s, per-kind ms.
set -uo pipefail
export OUT="${OUT:-$PWD/device_out}"; S=lab/device
mkdir -p "$OUT"
bash $S/device_check.sh info > "$OUT/info.log" 2>&1; cat "$OUT/device.txt"
if [ "${TESTS:-0}" = 1 ]; then
  TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" \
    TEST_SHARDS=4 bash $S/device_check.sh tests engine > "$OUT/tests.log" 2>&1
  grep -E "^exit|PASSED|FAILED|every step|cases" "$OUT/tests.log" | sort | uniq -c
fi
export LD_LIBRARY_PATH="$PWD/build:$PWD/.devlibs:${LD_LIBRARY_PATH:-}"
summary() {  # JSON LABEL
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
k = r["kind_ms_per_step"]
print("[%-5s] step %.4f ms  %.1f tok/s  %s" % (sys.argv[2], r["decode_ms_per_step"], r["decode_tok_s"],
      " ".join("%s=%.4f" % (a, b) for a, b in sorted(k.items()))))
PY
}
for model in ${MODELS:-gemma-2b llama-3-8b}; do
  dir=/tmp/models/$model
  [ -f "$dir/config.json" ] || python3 bench/engine/make_model.py "$dir" --model "$model" 2>&1 | grep -v Warning | tail -1
  run() {  # LABEL RESULTS-BASE ARGS...
    local label=$1 res=$2; shift 2
    local j="$OUT/${model}_${label}_$((++n)).json"
    build/tools/tunable bench-model --model "$dir" --batch 1 --prompt-len 128 --new-tokens 256 --file "$res" \
      --json "$j" "$@" > "$OUT/${model}_${label}_$n.log" 2>&1 || { echo "FAILED [$label]"; tail -3 "$OUT/${model}_${label}_$n.log"; return; }
    summary "$j" "$label"
  }
  n=0
  cp bench/results/engine/tuned_h100.csv "$OUT/base0.csv"
  grep -v "^ScaledGemmTunableOp_Float8_e4m3fn" bench/results/engine/tuned_h100.csv > "$OUT/cvt_${model}0.csv"
  echo "== $model: tuning the FP8 rows with both conversions"
  run tune "$OUT/cvt_${model}.csv" --tune --fp8
  grep "_cvt," "$OUT/cvt_${model}0.csv" | cut -d, -f2,3,4
  sed 's/_cvt,/,/' "$OUT/cvt_${model}0.csv" > "$OUT/strip_${model}0.csv"
  for ((r = 0; r < ${REPS:-2}; ++r)); do
    run base "$OUT/base.csv" --tune --fp8
    run cvt "$OUT/cvt_${model}.csv" --tune --fp8
    run strip "$OUT/strip_${model}.csv" --tune --fp8
  done
  run bf16 "$OUT/base.csv" --tune
done 2>&1 | tee "$OUT/ab.log"
