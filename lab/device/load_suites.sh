#!/usr/bin/env bash
# Issue 52 on the device: the engine beside both loads (tests/torch/test_engine_load.py), then the
# C++ GPU suites beside the compute load, their binaries in parallel (SUITE_SECONDS bounds them).
set -uo pipefail
OUT="${OUT:-$PWD/device_out}"; mkdir -p "$OUT"
[ -f .devcarry/pack.tar.xz ] && tar xJf .devcarry/pack.tar.xz
export LD_LIBRARY_PATH="$PWD/build:$PWD/.devlibs:${LD_LIBRARY_PATH:-}" PYTHONUNBUFFERED=1 TUNABLE_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
rc=0
timeout "${ENGINE_SECONDS:-150}" python3 tests/torch/test_engine_load.py "$OUT/engine_load.json" --cli build/tools/tunable \
  --load build/tests/tunable_gpu_load 2>&1 | grep -v "Warning\|Writing\|Loading" | tee "$OUT/engine_load.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
suites() {
  pids=()
  for t in build/tests/tunable_gpu_{skinny,gemm,ops,interpose}_tests; do
    timeout "${SUITE_SECONDS:-150}" "$t" --gtest_brief=1 > "$OUT/$(basename "$t")_$1.log" 2>&1 &
    pids+=($!)
  done
  s=0
  for p in "${pids[@]}"; do wait "$p" || s=1; done
  return $s
}
export -f suites; export OUT SUITE_SECONDS
bash tests/load/under_load.sh build/tests/tunable_gpu_load compute -- bash -c 'suites compute'
[ $? -eq 0 ] || rc=1
for f in "$OUT"/tunable_gpu_*_compute.log; do
  echo "--- $(basename "$f"): $(grep -E "tests from .* ran|^\[  (PASSED|FAILED) " "$f" | tr '\n' ' ')"
done
exit $rc
