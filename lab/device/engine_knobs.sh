#!/usr/bin/env bash
# A/B of environment knobs of a lab build (lab/patches/*.patch) on one model and batch:
# bench-model once per setting, one line each (step ms, tokens/s, attention kind ms, gaps ms).
# Usage: DEV_BUILD=NAME MODEL=gemma-2b BATCH=1 bash lab/device/engine_knobs.sh "SETTING" ...
# where SETTING is a space-separated list of VAR=VALUE ("-" for none). Results from ENGINE_RESULTS_FROM.
set -uo pipefail
bash "$(dirname "$0")/device_check.sh" > /dev/null  # unpacks the carried builds
OUT="${OUT:-$PWD/device_out}"
B="${DEV_BUILD:-build}"
model="${MODEL:-gemma-2b}"; batch="${BATCH:-1}"
dir=/tmp/models/$model
[ -f "$dir/config.json" ] || python3 bench/engine/make_model.py "$dir" --model "$model" 2>&1 | grep -v Warning | tail -1
res="$OUT/knobs_results.csv"
[ -n "${ENGINE_RESULTS_FROM:-}" ] && [ ! -f "$OUT/knobs_results0.csv" ] && cp "$ENGINE_RESULTS_FROM" "$OUT/knobs_results0.csv"
i=0
for setting in "$@"; do
  i=$((i + 1))
  envs=(); [ "$setting" != "-" ] && read -ra envs <<< "$setting"
  j="$OUT/knobs_${model}_b${batch}_${B}_$i.json"
  env "${envs[@]}" LD_LIBRARY_PATH="$PWD/$B:$PWD/.devlibs:${LD_LIBRARY_PATH:-}" $B/tools/tunable bench-model \
    --model "$dir" --batch "$batch" --prompt-len 128 --new-tokens 256 --file "$res" --json "$j" ${ENGINE_ARGS:-} \
    > "$OUT/knobs_$i.log" 2>&1 || { echo "FAILED [$B] $setting"; tail -3 "$OUT/knobs_$i.log"; continue; }
  python3 - "$j" "$B" "$setting" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r, m = j["runs"][0], j["memory"]
k = r["kind_ms_per_step"]
base = m["weights"] + m["kv_cache"]
print("[%s] %-45s step %.4f ms  %.1f tok/s  attn %.4f  gaps %.4f  memory +%.1f MB (%.1f %%, buffers %.1f MB)  kinds %s" % (
      sys.argv[2], sys.argv[3], r["decode_ms_per_step"], r["decode_tok_s"], k.get("attention", 0),
      r["decode_ms_per_step"] - sum(k.values()), (m["process_device_bytes"] - base) / 1e6,
      100.0 * (m["process_device_bytes"] - base) / base, m["buffers"] / 1e6,
      " ".join("%s=%.4f" % (a, b) for a, b in sorted(k.items()))))
PY
done
