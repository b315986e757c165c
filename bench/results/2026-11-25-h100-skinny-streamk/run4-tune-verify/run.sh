#!/bin/bash
# Round 15: tuning (verbose) and verification at M in {1, 8, 16} with the stream-K cluster candidates
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=3 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms 1,8,16" timeout 200 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms 1,8,16" timeout 340 bash tools/device_check.sh bench-verify
python3 bench/floor_count.py $OUT/gemm_verify.csv bench/results/2026-11-25-h100-skinny-tma/final/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -4 $OUT/floor_count.txt
for f in $OUT/tune_verbose*; do python3 bench/candidates_vs_best.py $f skinny_mmt_ > $OUT/mmt_vs_best.txt 2>&1; python3 bench/candidates_vs_best.py $f _kss8_ > $OUT/kss_vs_best.txt 2>&1; done
tail -5 $OUT/kss_vs_best.txt
xz -9 $OUT/tune_verbose*
bash tools/device_check.sh pack
