#!/bin/bash
# The mended loads-only microbenchmark (sums kept without stores), rerun.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run23.sh $OUT/run.sh
timeout 200 build/bench/tunable_dram_stream > $OUT/dram_stream.txt 2>&1; echo "rc $?"
