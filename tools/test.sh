#!/usr/bin/env bash
# Build and run every test. GPU tests (label "gpu") skip with a message on machines without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
build_dir="${BUILD_DIR:-build}"
cd "$build_dir"
# ctest shows a skipped test's output only with -V: say here, once, why the GPU suites will skip.
if [ -x tests/tunable_gpu_gemm_tests ]; then
  set +e
  why=$(tests/tunable_gpu_gemm_tests --gtest_list_tests 2>&1 | grep -m1 '^SKIPPED')
  set -e
  [ -n "$why" ] && echo "tools/test.sh: the GPU suites (label gpu) will skip: ${why#SKIPPED: }"
fi
ctest --output-on-failure -j "$(nproc)" "$@"
