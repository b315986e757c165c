#!/bin/bash
# Round 21: tuning (verbose) and verification at M in {1, 8, 16} with the proxy-fenced rings and the
# balanced 8 x 6 ring; floor count against round 20's second run.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
build/tests/tunable_gpu_skinny_tests > $OUT/gpu_skinny_tests.log 2>&1; echo "skinny suite exit $?"
grep -E "^\[  (PASSED|FAILED)|tests ran|SameBits" $OUT/gpu_skinny_tests.log | head; xz -9 $OUT/gpu_skinny_tests.log
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=3 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 230 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 340 bash tools/device_check.sh bench-verify
python3 bench/floor_count.py $OUT/gemm_verify.csv bench/results/2026-11-26-h100-skinny-round20/tune-verify-2/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -4 $OUT/floor_count.txt; grep -i "slower than" $OUT/gemm_verify.md
for f in $OUT/tune_verbose*; do python3 bench/candidates_vs_best.py $f _b8s6_bal > $OUT/bal6_vs_best.txt 2>&1; done
cat $OUT/bal6_vs_best.txt | awk '{print $1, $2, $3, $4, $5, $6, $7}' | tail -40
xz -9 $OUT/tune_verbose*
cp .devcarry/run46.sh $OUT/run.sh
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(gpu_skinny_tests.log.xz|device.txt|run.sh|gemm_verify.csv|floor_count.txt|bal6_vs_best.txt|bench_results0.csv|gemm_verify.md|extras.tar.xz)$') && ls
