#!/bin/bash
# Round 22, final tree (static-weight path removed): skinny and GEMM GPU suites, then the GEMM suite tuned
# (verbose 2) and verified at M in {1, 8, 16}.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work10; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests
cp $W/device.txt $OUT/device.txt
nvidia-smi -q -d CLOCK,PERFORMANCE > $OUT/clocks.txt 2>&1
grep -hE "^\[  (PASSED|FAILED) |tests? ran|FAILED " $W/tunable_gpu_*tests.log | head -12
cat $W/tunable_gpu_*tests.log > $OUT/gpu_tests.log; xz -9 $OUT/gpu_tests.log
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=2 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 230 bash tools/device_check.sh bench-tune
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms ${MS:-1,8,16}" timeout 340 bash tools/device_check.sh bench-verify
python3 bench/floor_count.py $OUT/gemm_verify.csv bench/results/2026-11-26-h100-skinny-round21/graph-tiebreak-launch/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -4 $OUT/floor_count.txt; grep -i "slower than\|copy bandwidth" $OUT/gemm_verify.md
xz -9 $OUT/tune_verbose*
cp .devcarry/run10.sh $OUT/run.sh
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(device.txt|run.sh|gemm_verify.csv|floor_count.txt|bench_results0.csv|gemm_verify.md|extras.tar.xz|gpu_tests.log.xz|clocks.txt)$') && ls
cd - > /dev/null
for a in "--fp8 --stages 4 --m 1" "--fp8 --stages 6 --m 8" "--stages 6 --m 8"; do
  timeout 60 build/bench/tunable_skinny_trace --kernel mmt --boxes 8 --warps 8 --n 2304 --k 16384 --bal --graph $a 2>&1 | grep "us/call"
done | tee $OUT/trace_bal.txt
