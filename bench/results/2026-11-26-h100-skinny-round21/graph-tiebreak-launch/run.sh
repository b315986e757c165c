#!/bin/bash
# Round 21: the graph tie-break with the launch-bound rule (every finalist ranked in graphs when one runs in graphs
# in <= 80 % of its back-to-back time). Skinny and GEMM GPU suites, the GEMM suite tuned (verbose 2) and verified.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work47; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cp $W/device.txt $OUT/device.txt
cat $W/tunable_gpu_*tests.log > $OUT/gpu_tests.log; xz -9 $OUT/gpu_tests.log
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=2 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 230 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 340 bash tools/device_check.sh bench-verify
python3 bench/floor_count.py $OUT/gemm_verify.csv bench/results/2026-11-26-h100-skinny-round21/graph-tiebreak/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -4 $OUT/floor_count.txt; grep -i "slower than" $OUT/gemm_verify.md
grep -c "graph tie-break:" $OUT/tune_verbose0.log; grep -c "mostly launches" $OUT/tune_verbose0.log; grep "graph tie-break skipped" $OUT/tune_verbose0.log | head -3
xz -9 $OUT/tune_verbose*
cp .devcarry/run50.sh $OUT/run.sh
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(device.txt|run.sh|gemm_verify.csv|floor_count.txt|bench_results0.csv|gemm_verify.md|extras.tar.xz|gpu_tests.log.xz)$') && ls
