#!/bin/bash
# Round 19: tune (verbose) and verify at M in {1, 8, 16} with the _xt variants (asked for an H200; the call ran on an H100, device.txt).
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
cp .devcarry/run34.sh $OUT/run.sh
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=3 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms 1,8,16" timeout 200 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms 1,8,16" timeout 330 bash tools/device_check.sh bench-verify
python3 bench/floor_count.py $OUT/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -2 $OUT/floor_count.txt
for f in $OUT/tune_verbose*; do python3 bench/candidates_vs_best.py $f _xt > $OUT/xt_vs_best.txt 2>&1; done
awk '$NF<1.0' $OUT/xt_vs_best.txt | cut -c1-160
xz -9 $OUT/tune_verbose*
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(device.txt|run.sh|gemm_verify.csv|floor_count.txt|xt_vs_best.txt|extras.tar.xz)$') && ls
