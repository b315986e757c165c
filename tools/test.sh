#!/usr/bin/env bash
# Build and run every test. GPU tests (label "gpu") skip with a message on machines without one.
# On a GPU machine run it as TUNABLE_REQUIRE_GPU=1 tools/test.sh: the GPU binaries then fail,
# instead of skipping, when they find no usable device (the variable reaches them through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
build_dir="${BUILD_DIR:-build}"
cd "$build_dir"
# ctest shows a skipped test's output only with -V: say here, once, why the GPU suites will skip
# (or, in GPU-required mode, why they will fail).
if [ -x tests/tunable_gpu_gemm_tests ]; then
  set +e
  why=$(tests/tunable_gpu_gemm_tests --gtest_list_tests 2>&1 | grep -m1 -E '^(SKIPPED|FAILED): ')
  set -e
  case "$why" in
    SKIPPED:*) echo "tools/test.sh: the GPU suites (label gpu) will skip: ${why#SKIPPED: }" ;;
    FAILED:*) echo "tools/test.sh: the GPU suites (label gpu) will FAIL: ${why#FAILED: }" ;;
  esac
fi
ctest --output-on-failure -j "$(nproc)" "$@"
