#!/bin/bash
# Round 16 final (wgmma kernel, 6 candidates): tuning and verification at M in {32, 64}
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms 32,64" timeout 250 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms 32,64" timeout 300 bash tools/device_check.sh bench-verify
grep -E "wgt" $OUT/bench_tune.log | head -20
bash tools/device_check.sh pack
