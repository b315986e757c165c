#!/bin/bash
# Issue 4's table on the final tree (round 24's change reverted; the kernels as in round 22, the bench's
# graph timing mended by the review): skinny and GEMM GPU suites, the GEMM suite tuned (verbose 2) and
# verified at M in {1, 8, 16} against Default and cuBLASLt's heuristics, then PyTorch F.linear (bf16,
# fp16) on the same GPU in the same call.
set -u
export LD_LIBRARY_PATH=$PWD/build:$PWD/.devlibs
W=/tmp/work82; rm -rf $W; mkdir -p $W
OUT=$W TEST_BINS="build/tests/tunable_gpu_skinny_tests build/tests/tunable_gpu_gemm_tests" timeout 200 bash tools/device_check.sh info tests > /dev/null
cp $W/device.txt $OUT/device.txt; cp .devcarry/run82.sh $OUT/run.sh
nvidia-smi -q -d CLOCK,PERFORMANCE > $OUT/clocks.txt 2>&1
grep -hE "^\[  (PASSED|FAILED) |tests? ran|FAILED |SKIPPED" $W/tunable_gpu_*tests.log | head -12 | tee $OUT/tests_summary.txt
cat $W/tunable_gpu_*tests.log > $W/gpu_tests.log; xz -9c $W/gpu_tests.log > $OUT/gpu_tests.log.xz
T0=$(date +%s)
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ENV_OVERRIDE="TUNABLE_VERBOSE=2 TUNABLE_VERBOSE_FILENAME=$OUT/tune_verbose.log" \
  BENCH_ARGS="--ms 1,8,16" timeout 230 bash tools/device_check.sh bench-tune
T1=$(date +%s)
BENCH_RESULTS=$OUT/bench_results.csv BENCH_ARGS="--ms 1,8,16" timeout 300 bash tools/device_check.sh bench-verify
T2=$(date +%s)
echo "tune $((T1 - T0)) s, verify $((T2 - T1)) s" | tee $OUT/step_times.txt
python3 bench/floor_count.py $OUT/gemm_verify.csv bench/results/2026-11-26-h100-skinny-round22/final-suites/gemm_verify.csv > $OUT/floor_count.txt 2>&1; tail -4 $OUT/floor_count.txt
grep -i "slower than\|copy bandwidth" $OUT/gemm_verify.md
left=$((560 - $(date +%s) + T0 - 60)); [ $left -gt 40 ] && OUT=$OUT timeout $left bash tools/device_check.sh torch
xz -9 $OUT/tune_verbose* 2>/dev/null
cd $OUT && tar cJf extras.tar.xz --remove-files $(ls | grep -vE '^(device.txt|run.sh|gemm_verify.csv|gemm_verify.md|floor_count.txt|extras.tar.xz|gpu_tests.log.xz|clocks.txt|tests_summary.txt|torch_linear.json|step_times.txt)$') && ls
