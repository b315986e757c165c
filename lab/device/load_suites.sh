#!/usr/bin/env bash
# Every GPU suite on the device, idle and beside each load (issue 52's GPU test run), from the repo
# root with the binaries carried (lab/device/pack_for_device.sh):
#   bash lab/device/load_suites.sh [LOAD...]      LOAD: none compute memory (default: all three)
# C++ suites (skinny, GEMM, ops, interposer) in parallel beside none/compute, one at a time beside
# memory (twelve free GiB are not enough for four at once); then the engine against transformers, the
# Python package from python/, and the engine's idle-versus-load bit-equality test. Knobs:
# SUITES (C++ binaries, default all four), SUITE_SECONDS (bound per C++ suite, default 540),
# PY_SUITES=0 (skip the Python suites). Logs under $OUT; exit 1 if any suite failed or timed out.
set -uo pipefail
OUT="${OUT:-$PWD/device_out}"; mkdir -p "$OUT"
if [ -f .devcarry/pack.tar.xz ] && [ ! -f .devcarry/.unpacked ]; then tar xJf .devcarry/pack.tar.xz && touch .devcarry/.unpacked; fi
export LD_LIBRARY_PATH="$PWD/build:$PWD/.devlibs:${LD_LIBRARY_PATH:-}" PYTHONUNBUFFERED=1 TUNABLE_REQUIRE_GPU=1
LOAD=build/tests/tunable_gpu_load
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
failed=()
cxx_suites() {  # KIND PARALLEL
  local pids=() names=() s=0
  for n in ${SUITES:-skinny gemm ops interpose}; do
    t=build/tests/tunable_gpu_${n}_tests
    timeout "${SUITE_SECONDS:-540}" "$t" --gtest_brief=1 > "$OUT/${n}_$1.log" 2>&1 &
    if [ "$2" = 1 ]; then pids+=($!); names+=("$n"); else wait $! || { echo "FAILED: $n beside $1"; s=1; }; fi
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || { echo "FAILED: ${names[$i]} beside $1"; s=1; }; done
  return $s
}
py_suites() {  # KIND
  local s=0
  python3 tests/torch/test_engine.py "$OUT/engine_$1.json" --cli build/tools/tunable --work "/tmp/engine_$1" \
    > "$OUT/engine_$1.log" 2>&1 || { echo "FAILED: engine tests beside $1"; s=1; }
  PYTHONPATH="$PWD/python" TUNABLE_LIBRARY="$PWD/build/libtunable.so" TUNABLE_TEST_PRELOAD="$PWD/build/libtunable_preload.so" \
    python3 tests/torch/test_python_package.py "$OUT/python_$1.json" > "$OUT/python_$1.log" 2>&1 \
    || { echo "FAILED: python package beside $1"; s=1; }
  return $s
}
export -f cxx_suites py_suites; export OUT SUITES SUITE_SECONDS
for kind in ${*:-none compute memory}; do
  echo "=== $kind $(date -u +%T)"
  par=1; [ "$kind" = memory ] && par=0
  bash tests/load/under_load.sh "$LOAD" "$kind" -- bash -c "cxx_suites $kind $par" || failed+=("C++ suites beside $kind")
  if [ "${PY_SUITES:-1}" = 1 ]; then
    bash tests/load/under_load.sh "$LOAD" "$kind" -- bash -c "py_suites $kind" || failed+=("Python suites beside $kind")
  fi
  for f in "$OUT"/*_"$kind".log; do
    echo "--- $(basename "$f"): $(grep -E "tests from .* ran|^\[  (PASSED|FAILED) |^[0-9]+ cases" "$f" | tr '\n' ' ')"
  done
done
if [ "${PY_SUITES:-1}" = 1 ]; then
  python3 tests/torch/test_engine_load.py "$OUT/engine_load.json" --cli build/tools/tunable --load "$LOAD" \
    2>&1 | grep -v "Warning\|Writing\|Loading" | tee "$OUT/engine_load.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("engine idle-versus-load equality")
fi
echo "=== failed: ${#failed[@]}"; for f in "${failed[@]}"; do echo "  $f"; done
[ ${#failed[@]} -eq 0 ]
