#!/usr/bin/env bash
# Fresh machine: install what is missing, build, and run the main job - the TunableOp blog's
# Example 1 (512x1024x2048 fp32 GEMM untuned, tuned, reloaded) on the GPU if there is one, else
# on the CPU providers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
build_dir="${BUILD_DIR:-build}"
"$build_dir/tools/tunable" tune --m 512 --n 1024 --k 2048 --dtype fp32 --trans nn --device auto \
  --file "${TUNABLE_FILENAME:-tunable_results.csv}" --verbose 1
