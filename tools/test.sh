#!/usr/bin/env bash
# Build and run every test. GPU tests (label "gpu") skip with a message on machines without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
build_dir="${BUILD_DIR:-build}"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" "$@"
